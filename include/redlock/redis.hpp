// One Redis deployment: what a rate limiter, a cache's values, a Bloom filter and a fenced resource live on.
// A standalone server (one redlock::connection behind the node seam), a Redis Cluster (a redis+cluster:// URL) or a
// Sentinel-managed master (a redis+sentinel:// URL): each a redlock::node behind the same type.
#pragma once

#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/node.hpp>
#include <redlock/node_config.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/stats.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/deferred.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace redlock {

namespace detail {
struct access;
class redis_impl;
void start_redis_connect(const std::shared_ptr<redis_impl>& impl, diagnostics* diag,
                         boost::asio::any_completion_handler<void(error_code)> handler);
void start_redis_exec(const std::shared_ptr<redis_impl>& impl, const request& req, response& resp,
                      std::string_view routing_key, boost::asio::any_completion_handler<void(error_code)> handler);
}  // namespace detail

/// One Redis deployment, where "one Redis" is meant: the state of a rate_limiter, a cache_guard's values, a
/// bloom_filter, the resource of async_fenced_write. A `client` is the other kind: Redlock over N independent
/// deployments, for locks and semaphores. Behind it is one `node` (node.hpp): by default (make_node) one
/// connection to a standalone server, a Redis Cluster node for a redis+cluster:// configuration or a Sentinel node
/// for a redis+sentinel:// one; everything that takes a `redis` works on each unchanged.
/// A cheap handle: copies share one deployment (one connection), and it stays up as long as a copy, or an
/// object or operation made from one, needs it (as a client's state does); close() closes it now.
/// Thread safety: every member may be called from any thread.
class redis {
public:
    /// The executor given to the constructor: handlers without an executor of their own complete there.
    using executor_type = boost::asio::any_io_executor;

    /// The deployment of `config`, made by `factory` (default: make_node: one connection, or a Cluster node, which
    /// starts connecting in the background and reconnects by itself; no I/O happens before the constructor returns).
    /// Throws boost::system::system_error(error::invalid_argument) when the factory makes no node. Its connections do
    /// not track keys (node_config::track_keys is ignored): nothing of a redis handle watches them.
    redis(executor_type ex, node_config config, node_factory factory = {});
    /// A node made elsewhere (a Cluster or Sentinel node, a test's fake). Throws
    /// boost::system::system_error(error::invalid_argument) for a null node.
    redis(executor_type ex, std::shared_ptr<node> deployment);

    executor_type get_executor() const noexcept;
    /// The node's name: its URL without password (node::name()).
    const std::string& name() const noexcept;

    /// Waits for the node's next connection attempt, or succeeds at once when it is connected, as
    /// connection::async_connect does (its errors and `diag` texts; within the node's connect timeout). Optional:
    /// requests sent before the connection is up wait for it (at most the connect timeout).
    /// Signature: void(error_code), on the handler's associated executor (get_executor() for a handler without
    /// one), never inside the initiating call. Cancellation: terminal (the node keeps trying in the background).
    /// Lifetime: `diag` must outlive the operation.
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_connect(diagnostics& diag, Token&& token = {}) const
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_, fallback = get_executor()](auto handler, diagnostics* d) {
                auto ex = boost::asio::get_associated_executor(handler, fallback);
                detail::start_redis_connect(impl, d, boost::asio::bind_executor(ex, std::move(handler)));
            },
            token, &diag);
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_connect(Token&& token = {}) const
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_, fallback = get_executor()](auto handler) {
                auto ex = boost::asio::get_associated_executor(handler, fallback);
                detail::start_redis_connect(impl, nullptr, boost::asio::bind_executor(ex, std::move(handler)));
            },
            token);
    }

    /// Runs your own commands: sends `req` and stores its replies in `resp` (cleared first), as
    /// connection::async_exec does, with its outcomes (success; server_error when a reply is an error; timeout at
    /// req.timeout(), else the node's request_timeout; not_connected, connection_lost, protocol_error, closed,
    /// invalid_argument for an empty request). Requests run in the order they were issued on this deployment.
    /// `routing_key`: a key that every key of `req` shares a hash slot with, which routes the request on a Redis
    /// Cluster (on one server it changes nothing); without it, the request must touch no key or run on a
    /// deployment that is one server.
    /// Signature: void(error_code), completed as async_connect's. Cancellation: the handler's slot goes to the node;
    /// the default node (one connection) supports what connection::async_exec does (total, partial, terminal before the
    /// request is written; partial, terminal after: abandoned); a node that ignores it completes by the request's
    /// deadline. Lifetime: `req`, `resp` and the characters of `routing_key` must outlive the operation.
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_exec(const request& req, response& resp, std::string_view routing_key, Token&& token = {}) const
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_, fallback = get_executor()](auto handler, const request* q, response* r, std::string_view k) {
                // A handler without an executor of its own completes on ours, whatever the node does.
                auto ex = boost::asio::get_associated_executor(handler, fallback);
                detail::start_redis_exec(impl, *q, *r, k, boost::asio::bind_executor(ex, std::move(handler)));
            },
            token, &req, &resp, routing_key);
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_exec(const request& req, response& resp, Token&& token = {}) const
    {
        return async_exec(req, resp, std::string_view(), std::forward<Token>(token));
    }

    /// The node's connection counters (node::get_usage(); zeros for a node that keeps none). Any thread.
    usage get_usage() const;

    /// Closes the node's connections; operations in flight fail with error::closed. Every copy, and every
    /// limiter, guard or filter on this deployment, is closed with it.
    void close();

private:
    friend struct detail::access;
    std::shared_ptr<detail::redis_impl> impl_;
};

}  // namespace redlock
