// The environment of a command that redlock runs (`redlock exec`, `redlock elect`): redlock's own, without the
// REDLOCK_* variables a command of ours sets, so an outer redlock's values never leak into a nested one's command.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

/// Every variable `redlock exec` or `redlock elect` sets in its command's environment (REDLOCK_NODES, which the user
/// sets, is not one of them).
inline constexpr std::array<std::string_view, 6> command_variables{
    "REDLOCK_KEY", "REDLOCK_TOKEN", "REDLOCK_FENCING_TOKEN", "REDLOCK_TERM", "REDLOCK_PERMIT_ID", "REDLOCK_LIMIT",
};

/// `NAME=value` entries of this process's environment, without those of command_variables.
std::vector<std::string> inherited_environment();

}  // namespace redlock::cli
