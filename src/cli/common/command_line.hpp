// A subcommand's command line, read by Boost.Program_options and checked completely before any I/O: the flags
// every subcommand has (-h/--help, --nodes, -v, -q), and typed readers whose messages are the same everywhere.
#pragma once

#include "cli/common/output.hpp"
#include "cli/common/rate_spec.hpp"

#include <redlock/node_config.hpp>
#include <redlock/rate_limit.hpp>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
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

// What `redlock exec` and `throttle` were given: their flags, and the command after the first "--", untouched
// (its flags are not ours); nullopt without a "--".
struct flags_and_command {
    std::vector<std::string> flags;
    std::optional<std::vector<std::string>> command;
};
flags_and_command split_at_double_dash(const std::vector<std::string>& args);

// The command after "--": throws usage_error when there is none or its name is empty.
std::vector<std::string> checked_command(std::vector<std::string> command, const std::string& subcommand);

class command_line {
public:
    // Reads `args` (the arguments after the subcommand's name) against `flags` plus -h/--help, --nodes (repeatable),
    // -v/--verbose and -q/--quiet. Throws usage_error for an unknown flag, a missing value or an argument that is
    // no flag; `positional_hint` then says where such an argument belongs (a command goes after "--").
    command_line(std::string command, const boost::program_options::options_description& flags,
                 const std::vector<std::string>& args, std::string_view positional_hint = {});

    const std::string& command() const noexcept { return command_; }
    // A usage_error of this subcommand.
    usage_error error(const std::string& what) const { return usage_error(what, command_); }

    bool help() const { return is_set("help"); }
    bool given(const char* name) const { return vm_.count(name) > 0; }
    bool is_set(const char* name) const;  // a switch (po::bool_switch)
    std::optional<std::string> text(const char* name) const;

    // DURATION (duration.hpp): `fallback` when absent.
    ms duration(const char* name, ms fallback) const;
    // A whole number from 1 to INT_MAX.
    int positive_int(const char* name, int fallback) const;
    // A whole number from `least` up.
    std::int64_t count(const char* name, std::int64_t fallback, std::int64_t least) const;
    // --key: required, non-empty.
    std::string key() const;
    // --ttl: a DURATION from 10ms.
    ms ttl(ms fallback) const;
    // --limit: 1 (a lock, the default) to semaphore::max_limit.
    std::int64_t limit() const;
    // --strategy: gcra (the default), fixed-window or sliding-window.
    rate_strategy strategy() const;
    // --rate N/PERIOD, if given.
    std::optional<rate_spec> rate() const;
    // --replica-acks N: replicas that must acknowledge each grant and extension (0, the default: off; at most
    // 100), and --replica-ack-timeout DURATION (0, the default: the node timeout). The flags must be declared.
    int replica_acks() const;
    ms replica_ack_timeout() const;
    // -v / -q.
    verbosity output() const;
    // --nodes, else $REDLOCK_NODES, else the default node (nodes.hpp).
    std::vector<node_config> nodes() const;

private:
    std::string command_;
    boost::program_options::variables_map vm_;
};

}  // namespace redlock::cli
