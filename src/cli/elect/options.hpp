// `redlock elect`: its command line, checked completely before any I/O, and its help text.
#pragma once

#include "cli/common/command_line.hpp"
#include "cli/common/output.hpp"

#include <redlock/node_config.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

struct elect_options {
    std::vector<node_config> nodes;
    std::string key;
    std::string proposal;  // default: HOSTNAME:PID
    ms ttl{10'000};
    std::optional<ms> wait;  // nullopt: campaign forever
    bool again = false;      // campaign again after a lost leadership
    bool listen = false;     // print the leaders instead of campaigning
    int kill_signal = 0;     // set by the parser (SIGTERM by default)
    ms kill_grace{5'000};
    verbosity output = verbosity::normal;
    std::vector<std::string> command;  // empty with --listen
};

extern const std::string_view elect_help;

// The arguments after "elect". nullopt after printing elect_help (-h, --help); throws usage_error on a bad command
// line.
std::optional<elect_options> parse_elect(const std::vector<std::string>& args);

}  // namespace redlock::cli
