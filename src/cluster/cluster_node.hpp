// A Redis Cluster as one redlock::node: the slot map, one pipelined connection per master, each request routed by
// the hash slot of its routing key, redirects followed within the request's deadline. One idea per file:
//   slot_map.*        the map, read from CLUSTER SHARDS (Redis >= 7) or CLUSTER SLOTS (6.x)
//   refusal.*         MOVED, ASK, TRYAGAIN and CLUSTERDOWN, read from an error reply
//   asking_request.*  what an ASK sends: ASKING + the request, as one request
//   cluster_node.*    the node: connecting, map refreshes, routing and retries (each slot's issue order across
//                     redirects kept by a common/issue_lane.hpp), subscriptions
#pragma once

#include <redlock/node.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

class cluster_state;

/// The node of a `redis+cluster://` or `rediss+cluster://` configuration (config.cluster). It starts reading the
/// slot map at once, and keeps it fresh: on MOVED, on a request that found its master's connection down, and
/// every 30 s or so.
std::unique_ptr<node> make_cluster_node(const boost::asio::any_io_executor& ex, const node_config& config);

/// The node's state, for what the connection reports on its own (the wiring of the server's sunsubscribe).
class cluster_node final : public node {
public:
    cluster_node(const boost::asio::any_io_executor& ex, const node_config& config);
    ~cluster_node() override;

    std::string name() const override;
    void async_connect(diagnostics& diag, completion handler) override;
    void async_exec(const request& req, response& resp, std::string_view routing_key, completion handler) override;
    void async_subscribe(std::vector<std::string> channels, diagnostics& diag, completion handler) override;
    void async_unsubscribe(std::vector<std::string> channels, completion handler) override;
    void set_message_handler(message_handler handler) override;
    void set_tracking_handler(tracking_handler handler) override;
    bool cross_slot_requests() const override { return false; }
    server_identity server() const override;
    usage get_usage() const override;
    void close() override;

    /// Subscribes `channels` again, each at the master that owns its slot now: for the channels the master `from`
    /// (`host:port`, as master_address::text) dropped on its own (its `sunsubscribe` push after the slot moved
    /// away). A channel whose home is not `from` (it moved on already: the news is late) is left as it is, and so
    /// are channels the node does not hold (never subscribed, or unsubscribed since). A subscription that fails is
    /// tried again after the next map read. Any thread; returns at once.
    void resubscribe_channels(std::vector<std::string> channels, const std::string& from);

private:
    std::shared_ptr<cluster_state> state_;
};

}  // namespace redlock::detail
