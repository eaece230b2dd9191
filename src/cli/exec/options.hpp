// `redlock exec`: its command line, checked completely before any I/O, and its help text.
#pragma once

#include "cli/common/command_line.hpp"
#include "cli/common/output.hpp"

#include <redlock/node_config.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

struct exec_options {
    std::vector<node_config> nodes;
    std::string key;
    ms ttl{10'000};
    std::optional<ms> wait;  // nullopt: wait forever
    bool watchdog = true;
    bool fencing = false;
    bool fair = false;
    bool shared = false;  // the read side of the lock (flock -s); without it, a writer: the plain lock
    ms waiter_ttl{2'000};
    std::int64_t limit = 1;     // 1: a lock; above: one permit of a semaphore of this many
    int replica_acks = 0;       // replicas that must acknowledge each grant and extension (WAIT); 0: off
    ms replica_ack_timeout{0};  // 0: the node timeout
    int kill_signal = 0;        // set by the parser (SIGTERM by default)
    ms kill_grace{5'000};
    verbosity output = verbosity::normal;
    std::vector<std::string> command;
};

extern const std::string_view exec_help;

// The arguments after "exec". nullopt after printing exec_help (-h, --help); throws usage_error on a bad command
// line.
std::optional<exec_options> parse_exec(const std::vector<std::string>& args);

}  // namespace redlock::cli
