// `redlock exec`: run a command under a lock or a semaphore's permit.
#pragma once

#include "cli/common/subcommand.hpp"

namespace redlock::cli {

subcommand exec_command();

}  // namespace redlock::cli
