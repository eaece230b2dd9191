// Command lines of `redlock exec`, `status` and `bench`, checked completely before any I/O.
#pragma once

#include "output.hpp"
#include "rate_spec.hpp"

#include <redlock/node_config.hpp>
#include <redlock/rate_limit.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace redlock::cli {

using ms = std::chrono::milliseconds;

// A bad command line: exit 64 with this text. `command` names the subcommand for the "--help" hint.
class usage_error : public std::runtime_error {
public:
    usage_error(const std::string& what, std::string command = {})
        : std::runtime_error(what), command_(std::move(command))
    {}
    const std::string& command() const noexcept { return command_; }

private:
    std::string command_;
};

struct exec_options {
    std::vector<node_config> nodes;
    std::string key;
    ms ttl{10'000};
    std::optional<ms> wait;  // nullopt: wait forever
    bool watchdog = true;
    bool fencing = false;
    bool fair = false;
    ms waiter_ttl{2'000};
    std::int64_t limit = 1;  // 1: a lock; above: one permit of a semaphore of this many
    int kill_signal = 0;     // set by the parser (SIGTERM by default)
    ms kill_grace{5'000};
    verbosity output = verbosity::normal;
    std::vector<std::string> command;
};

struct status_options {
    std::vector<node_config> nodes;
    std::string key;
    verbosity output = verbosity::normal;
};

// `redlock throttle`: wait for room in a rate limiter, then run the command in redlock's place.
struct throttle_options {
    std::vector<node_config> nodes;
    std::string key;
    rate_spec rate;
    std::int64_t burst = 0;
    std::int64_t cost = 1;
    rate_strategy strategy = rate_strategy::gcra;
    std::optional<ms> wait;  // nullopt: wait forever
    verbosity output = verbosity::normal;
    std::vector<std::string> command;  // empty: exit 0 once admitted
};

struct bench_options {
    enum class scenario { uncontended, contended, handoff, hold, limiter, semaphore };
    std::vector<node_config> nodes;
    scenario kind = scenario::uncontended;
    // The defaults of uncontended: one client shared by 64 requests in flight, as in a service. Contended
    // defaults to 4 clients of 1 worker each.
    int clients = 1;
    int workers = 64;  // coroutines sharing each client
    ms duration{5'000};
    ms ttl{10'000};
    bool fencing = false;
    bool fair = false;  // handoff: a fair lock
    bool json = false;
    int leases = 100'000;  // hold: how many leases one client holds with the watchdog
    // limiter: each worker's own key under this limit
    rate_strategy strategy = rate_strategy::gcra;
    rate_spec rate{1000, std::chrono::seconds(1)};
    std::int64_t burst = 100;
    int limit = 0;  // semaphore: the permits the workers contend for; 0: half the workers (bench_semaphore.cpp)
    verbosity output = verbosity::normal;
};

// Each returns nullopt after printing the help text (--help); throws usage_error on a bad command line.
// `args` are the arguments after the subcommand's name.
std::optional<exec_options> parse_exec(const std::vector<std::string>& args);
std::optional<status_options> parse_status(const std::vector<std::string>& args);
std::optional<bench_options> parse_bench(const std::vector<std::string>& args);
std::optional<throttle_options> parse_throttle(const std::vector<std::string>& args);

// The node list: --nodes values (comma or space separated, repeatable), else $REDLOCK_NODES, else
// redis://127.0.0.1:6379. Throws usage_error for a malformed URL or a node listed twice.
std::vector<node_config> parse_nodes(const std::vector<std::string>& flag_values, const std::string& command);

// The overview printed by `redlock help` and on a missing subcommand.
std::string general_usage();

}  // namespace redlock::cli
