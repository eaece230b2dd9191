// A Sentinel-managed master as one redlock::node: asks the Sentinels where the master is, checks with ROLE that it
// is, sends every request over one pipelined connection to it, and follows its failovers. One idea per file:
//   sentinel_replies.*  what Sentinels and masters answer (the master's address, other Sentinels, ROLE,
//                       +switch-master, READONLY / LOADING / MASTERDOWN), and the order to ask the Sentinels in
//   sentinel_node.*     the node: discovery, the master's link, the +switch-master watches, requests in issue order
//                       across failovers (common/issue_lane.hpp), subscriptions moved to each new master
#pragma once

#include <redlock/node.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

class sentinel_state;

/// The node of a `redis+sentinel://` or `rediss+sentinel://` configuration (config.sentinel). It starts asking the
/// Sentinels at once and keeps a subscription to `+switch-master` on each Sentinel it knows (the URL's and those they
/// name), so that it hears of a failover from the first Sentinel that publishes it.
///
/// The master is used only once ROLE, its first request on a fresh connection, says "master": a Sentinel's answer
/// may be stale (it names a server demoted since), and such an answer is refused and another Sentinel asked. The node
/// asks the Sentinels again when one of them publishes `+switch-master` for its master (it then tries the new address
/// first), when the master's connection drops (it does not reconnect on its own to the same address) and when a
/// request is refused with READONLY, LOADING or MASTERDOWN (the request did not write: it is sent again to the master
/// found, within its deadline, unless a request issued after it ran meanwhile). A request sent to a master that the
/// node leaves fails with error::connection_lost (it may have run); a request that finds no master waits for one until
/// its deadline (error::timeout). Requests keep their issue order across masters: none goes to a new master before
/// every one sent to the old one answered.
std::unique_ptr<node> make_sentinel_node(const boost::asio::any_io_executor& ex, const node_config& config);

class sentinel_node final : public node {
public:
    sentinel_node(const boost::asio::any_io_executor& ex, const node_config& config);
    ~sentinel_node() override;

    std::string name() const override;
    void async_connect(diagnostics& diag, completion handler) override;
    void async_exec(const request& req, response& resp, std::string_view routing_key, completion handler) override;
    void async_subscribe(std::vector<std::string> channels, diagnostics& diag, completion handler) override;
    void async_unsubscribe(std::vector<std::string> channels, completion handler) override;
    void set_message_handler(message_handler handler) override;
    void set_tracking_handler(tracking_handler handler) override;
    server_identity server() const override;
    usage get_usage() const override;
    void close() override;

private:
    std::shared_ptr<sentinel_state> state_;
};

}  // namespace redlock::detail
