// The default node factory: a Redis Cluster node for a cluster URL, one connection otherwise.
#include "cluster/cluster_node.hpp"

#include <redlock/node.hpp>

namespace redlock {

std::unique_ptr<node> make_node(const boost::asio::any_io_executor& ex, const node_config& config)
{
    return config.cluster ? detail::make_cluster_node(ex, config) : make_connection_node(ex, config);
}

}  // namespace redlock
