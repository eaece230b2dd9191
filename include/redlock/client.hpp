// N independent Redis nodes (N = 1: a plain single-node lock, through the same code).
#pragma once

#include <redlock/detail/access.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/logging.hpp>
#include <redlock/node.hpp>
#include <redlock/node_config.hpp>
#include <redlock/stats.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <memory>
#include <string>
#include <vector>

namespace redlock {

namespace detail {
class client_impl;
void start_client_connect(const std::shared_ptr<client_impl>& impl, diagnostics* diag,
                          boost::asio::any_completion_handler<void(error_code)> handler);
}  // namespace detail

/// Redlock over N independent deployments: for locks and semaphores. Where one Redis is meant (a rate limiter, a
/// cache's values, a fenced resource) the API takes a `redis` (redis.hpp) instead, and a client does not compile there.
/// Owns one node per node_config (by default one connection each); they connect at construction and reconnect
/// by themselves. Locks and leases made from it keep what they need alive, so the client may be destroyed
/// before them. Thread safety: every member may be called from any thread.
class client {
public:
    /// The client's strand: a strand of the executor given to the constructor, where the client's own work runs.
    using executor_type = boost::asio::any_io_executor;

    /// No I/O happens before the constructor returns; zero nodes makes every lock fail with invalid_argument.
    /// An even N works (Q = N/2 + 1) but tolerates no more failures than N - 1 nodes: prefer an odd N.
    /// `factory` makes each node (default: make_node, a Redis Cluster node for a redis+cluster:// configuration, a
    /// Sentinel node for a redis+sentinel:// one, and one connection otherwise); a test's fake node plugs in here.
    client(executor_type ex, std::vector<node_config> nodes, node_factory factory = {});
    /// The connections close once no lease or mutex made from this client needs them; close() closes now.
    ~client();
    client(client&&) noexcept;
    client& operator=(client&&) noexcept;

    executor_type get_executor() const noexcept;
    std::size_t size() const noexcept;    ///< N
    std::size_t quorum() const noexcept;  ///< Q = N/2 + 1
    const std::vector<node_config>& nodes() const noexcept;

    /// Waits until a quorum of nodes is connected (success) or too many failed their first attempt for one
    /// to be (error::no_quorum); the other nodes keep trying in the background. `diag.nodes()` tells each
    /// node's result (`pending` for one still connecting). Optional: locks work without it, but their first
    /// attempt may find nodes still connecting.
    /// Signature: void(error_code). Cancellation: terminal. Lifetime: `diag` must outlive the operation.
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_connect(diagnostics& diag, Token&& token = {})
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_](auto handler, diagnostics* d) { detail::start_client_connect(impl, d, std::move(handler)); },
            token, &diag);
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_connect(Token&& token = {})
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_](auto handler) { detail::start_client_connect(impl, nullptr, std::move(handler)); }, token);
    }

    /// A snapshot of what this client has done since it was made: acquisitions and their failures by reason,
    /// acquire latency, handoffs, wake-ups by message and by timer, extensions, releases, losses, and per node its
    /// failed answers and connection counters (to_prometheus renders it). Any thread; the counters are read one by
    /// one, so a snapshot taken while operations run may be a moment apart between fields.
    client_stats stats() const;

    /// Where the client reports what it decided on its own: a subscription refused (waiters fall back to
    /// timers), a lease lost and why, a fallback to scripts. Replaces the previous handler; empty: none. Any
    /// thread. Events may come from the client's strand or a node's thread.
    void set_log_handler(log_handler handler);

    /// Closes every connection; operations in flight fail.
    void close();

private:
    friend struct detail::access;
    std::shared_ptr<detail::client_impl> impl_;
};

}  // namespace redlock
