// One subcommand of `redlock`, a folder of src/cli/ (exec, elect, throttle, status, bench): main.cpp dispatches on its
// name and prints its help for `redlock help <name>`.
#pragma once

#include "cli/common/exit_codes.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

struct subcommand {
    std::string_view name;
    std::string_view help;  // the usage text of `redlock <name> --help` and `redlock help <name>`
    // Parses the arguments after the name (printing `help` for -h/--help), runs, and returns the exit code;
    // throws usage_error on a bad command line.
    int (*run)(const std::vector<std::string>& args);
};

// A subcommand's `run`: `parse` (nullopt after printing the help) then `run` with the options.
template <auto parse, auto run>
int parse_and_run(const std::vector<std::string>& args)
{
    auto options = parse(args);
    return options ? run(*options) : exit_code::ok;
}

}  // namespace redlock::cli
