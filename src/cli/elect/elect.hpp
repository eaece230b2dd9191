// `redlock elect`: run a command while leading an election, or print its leaders as they change.
#pragma once

#include "cli/common/subcommand.hpp"

namespace redlock::cli {

subcommand elect_command();

}  // namespace redlock::cli
