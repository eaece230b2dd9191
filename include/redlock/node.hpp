// "A node": what the quorum layer sends requests to. The seam for Redis Cluster and Sentinel.
//
// A node is one connection to one Redis server (make_connection_node), a Redis Cluster (slot map, MOVED and ASK
// redirects, a connection per master: a redis+cluster:// URL) or a Sentinel-managed master (asked of the Sentinels,
// checked with ROLE, followed through failovers: a redis+sentinel:// URL); make_node picks by the configuration. The
// primitives only ever see nodes. Tests inject fake nodes through the same seam. A client holds one node per Redlock
// member; a redlock::redis (redis.hpp) is one node behind a handle, where one Redis is meant.
#pragma once

#include <redlock/connection.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/node_config.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/server_identity.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// One independent Redis deployment. What the lock layer relies on:
/// - Every member may be called from any thread; completion handlers run on their associated executor, never
///   inside the initiating call; each operation completes exactly once, with an error if the node is closed or
///   destroyed meanwhile. The caller binds no cancellation: a node bounds each exec by req.timeout() itself.
/// - Requests run in the order they were issued on this node (one pipeline, as one connection does): a
///   release sent after an acquire, or after a repair, runs after it. A Cluster node must keep this per slot.
/// - `routing_key`, `req`, `resp` and `diag` stay valid until the operation completes; a node that needs them
///   longer copies them.
/// - Members should not throw; a node whose call throws counts as failed for that operation.
class node {
public:
    /// The handler of every operation of a node.
    using completion = boost::asio::any_completion_handler<void(error_code)>;
    /// Receives a pub/sub message: its channel and payload, valid during the call only.
    using message_handler = std::function<void(std::string_view channel, std::string_view payload)>;
    /// Receives what client tracking says of the node's keys (tracking_news), valid during the call only.
    using tracking_handler = std::function<void(const tracking_news& news)>;

    virtual ~node() = default;

    /// How the node appears in diagnostics: its URL without password.
    virtual std::string name() const = 0;

    /// Starts connecting (if it was not) and completes with the result of the next attempt (at once if
    /// connected), as connection::async_connect does; it must complete within the node's connect timeout.
    virtual void async_connect(diagnostics& diag, completion handler) = 0;

    /// Runs `req`, whose keys all share the hash slot of `routing_key`, and stores the replies in `resp`, as
    /// connection::async_exec does (its deadline is req.timeout()). `req` and `resp` outlive the operation.
    /// An empty `routing_key`: the keys span hash slots (the watchdog's batched extension of many leases); it
    /// is sent only to nodes whose cross_slot_requests() is true.
    virtual void async_exec(const request& req, response& resp, std::string_view routing_key, completion handler) = 0;

    /// Subscribes to `channels` (all in the hash slot of their first one); completes once the node confirmed
    /// them, or with the node's refusal (error::server_error, with its text in `diag`). Confirmed channels
    /// stay subscribed across reconnections until unsubscribed.
    virtual void async_subscribe(std::vector<std::string> channels, diagnostics& diag, completion handler) = 0;
    virtual void async_unsubscribe(std::vector<std::string> channels, completion handler) = 0;
    /// Receives the messages of subscribed channels, on any thread (the node's own); the views are valid only
    /// during the call. Must not block. Replaces any earlier handler.
    virtual void set_message_handler(message_handler handler) = 0;
    /// Receives client tracking's news of the node's connections (connection::set_tracking_handler; a Cluster or
    /// Sentinel node: of each master's), on any thread. A session that begins tracking says `all`: leases read
    /// their keys there again. Must not block. Replaces any earlier handler. A node that tracks nothing (a test's
    /// fake) ignores it: its leases are checked by their extensions alone.
    virtual void set_tracking_handler(tracking_handler handler) { (void)handler; }

    /// Whether the node runs one request whose keys span hash slots (one Redis server does; a Cluster node,
    /// which routes by slot, does not). When a node does not, the watchdog extends each lease alone. Asked
    /// once, when the client is made: the answer must not change.
    virtual bool cross_slot_requests() const { return true; }

    /// The node's server and version, as connection::server() (of any of its connections, for a Cluster);
    /// unknown until one told. Newer commands (SET ... NX GET) are sent only where every node that told has them
    /// (server_identity's predicates, e.g. has_set_nx_get()). Any thread.
    virtual server_identity server() const { return {}; }

    /// The node's connection counters (client::stats() reports them); zeros for a node that keeps none. Any thread.
    virtual usage get_usage() const { return {}; }

    /// Closes the node's connections; operations in flight fail with error::closed.
    virtual void close() = 0;
};

/// Makes the node of one configuration; a client calls it once per node_config it is given.
using node_factory =
    std::function<std::unique_ptr<node>(const boost::asio::any_io_executor& ex, const node_config& config)>;

/// One pipelined connection (redlock::connection) to the server of `config`.
std::unique_ptr<node> make_connection_node(const boost::asio::any_io_executor& ex, const node_config& config);

/// The default node, what a client, a redis and the CLI make when given no factory: a Redis Cluster node when
/// `config.cluster` (a redis+cluster:// or rediss+cluster:// URL: the slot map, one connection per master, each
/// request routed by its routing key's hash slot, MOVED/ASK/TRYAGAIN/CLUSTERDOWN followed within its deadline), a
/// Sentinel node when `config.sentinel` (a redis+sentinel:// or rediss+sentinel:// URL: the master the Sentinels name,
/// used once ROLE says it is the master, left for the new one on `+switch-master`, a dropped connection, READONLY or
/// LOADING; requests sent to the master left fail with connection_lost, those without a master wait for one within
/// their deadline); see doc/connection.md. Else make_connection_node.
std::unique_ptr<node> make_node(const boost::asio::any_io_executor& ex, const node_config& config);

}  // namespace redlock
