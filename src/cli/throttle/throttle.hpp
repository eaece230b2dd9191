// `redlock throttle`: wait for room in a rate limiter, then run a command in redlock's place.
#pragma once

#include "cli/common/subcommand.hpp"

namespace redlock::cli {

subcommand throttle_command();

}  // namespace redlock::cli
