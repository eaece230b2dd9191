// The default node factory: a Redis Cluster node for a cluster URL, a Sentinel node for a sentinel URL, one
// connection otherwise.
#include "cluster/cluster_node.hpp"
#include "sentinel/sentinel_node.hpp"

#include <redlock/node.hpp>

namespace redlock {

std::unique_ptr<node> make_node(const boost::asio::any_io_executor& ex, const node_config& config)
{
    if (config.cluster) return detail::make_cluster_node(ex, config);
    if (config.sentinel) return detail::make_sentinel_node(ex, config);
    return make_connection_node(ex, config);
}

}  // namespace redlock
