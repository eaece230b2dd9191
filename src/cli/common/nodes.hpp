// The nodes a subcommand talks to: the CLI's side of redlock::parse_node_list (where the list comes from, and what
// a Redlock client must not be given).
#pragma once

#include <redlock/node_config.hpp>

#include <string>
#include <vector>

namespace redlock::cli {

// The node when neither --nodes nor $REDLOCK_NODES names one.
inline constexpr const char* default_node = "redis://127.0.0.1:6379";

// The --nodes values (each a list of URLs separated by commas or spaces; the flag may be repeated), else
// $REDLOCK_NODES (the same syntax; an empty variable counts as unset), else default_node. Nodes without a client
// name get "redlock-cli", to be found in CLIENT LIST. Throws usage_error (of `command`) for a malformed URL, a
// list without one, or a node listed twice (it would vote twice: a "quorum" of 3 on 2 real nodes).
std::vector<node_config> node_list(const std::vector<std::string>& flag_values, const std::string& command);

}  // namespace redlock::cli
