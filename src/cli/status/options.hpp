// `redlock status`: its command line and its help text.
#pragma once

#include "cli/common/output.hpp"

#include <redlock/node_config.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

struct status_options {
    std::vector<node_config> nodes;
    std::string key;
    verbosity output = verbosity::normal;
};

extern const std::string_view status_help;

// The arguments after "status". nullopt after printing status_help (-h, --help); throws usage_error on a bad
// command line.
std::optional<status_options> parse_status(const std::vector<std::string>& args);

}  // namespace redlock::cli
