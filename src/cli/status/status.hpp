// `redlock status`: who holds a lock or a semaphore.
#pragma once

#include "cli/common/subcommand.hpp"

namespace redlock::cli {

subcommand status_command();

}  // namespace redlock::cli
