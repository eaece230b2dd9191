// `redlock status` on a Redis Cluster member: the hash slot of the key and the master that serves it now, asked
// of the Cluster itself (CLUSTER KEYSLOT and CLUSTER NODES, routed by the key to that master).
#pragma once

#include <redlock/node_config.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace redlock::cli {

// One line per Cluster among `nodes` ("  <node>  slot S on master HOST:PORT", or what went wrong), in their order;
// none for standalone nodes. Waits at most about `deadline` in all.
std::vector<std::string> cluster_shard_lines(const std::vector<node_config>& nodes, const std::string& key,
                                             std::chrono::milliseconds deadline);

}  // namespace redlock::cli
