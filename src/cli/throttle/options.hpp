// `redlock throttle`: its command line, checked completely before any I/O, and its help text.
#pragma once

#include "cli/common/command_line.hpp"
#include "cli/common/output.hpp"
#include "cli/common/rate_spec.hpp"

#include <redlock/node_config.hpp>
#include <redlock/rate_limit.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

// Wait for room in a rate limiter, then run the command in redlock's place.
struct throttle_options {
    node_config node;  // the one Redis deployment the limiter lives on
    std::string key;
    rate_spec rate;
    std::int64_t burst = 0;
    std::int64_t cost = 1;
    rate_strategy strategy = rate_strategy::gcra;
    std::optional<ms> wait;  // nullopt: wait forever
    verbosity output = verbosity::normal;
    std::vector<std::string> command;  // empty: exit 0 once admitted
};

extern const std::string_view throttle_help;

// The arguments after "throttle". nullopt after printing throttle_help (-h, --help); throws usage_error on a bad
// command line.
std::optional<throttle_options> parse_throttle(const std::vector<std::string>& args);

}  // namespace redlock::cli
