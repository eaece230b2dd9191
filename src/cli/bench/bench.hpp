// `redlock bench`: measure a deployment.
#pragma once

#include "cli/common/subcommand.hpp"

namespace redlock::cli {

subcommand bench_command();

}  // namespace redlock::cli
