// One pipelined RESP3 connection to one Redis node: handshake, coalesced writes, per-request deadlines and
// cancellation, health checks, reconnection with backoff, EVALSHA with NOSCRIPT fallback, pushes.
#pragma once

#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/node_config.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/server_identity.hpp>
#include <redlock/stats.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// Where a connection stands in its life: connection::state().
enum class connection_state {
    idle,        ///< async_connect was never called
    connecting,  ///< an attempt is under way; requests wait for it (at most connect_timeout)
    connected,
    disconnected,  ///< waiting before the next attempt; requests fail at once with not_connected
    closed,        ///< close() was called
};

/// What client tracking tells a connection (node_config::track_keys): keys it read changed on the server, or its
/// tracking began or was refused.
struct tracking_news {
    /// Changed by another client's write, an expiry, an eviction or a DEL (the connection's own writes are not
    /// reported: NOLOOP). Each key once: a key is tracked again only when read again.
    std::vector<std::string> keys;
    /// Any key may have changed: a FLUSHALL or FLUSHDB, or a session began (its tracking starts empty, and what
    /// changed while the connection was down is unknown). `keys` is empty.
    bool all = false;
    /// Not empty: a session began untracked, the server refused CLIENT TRACKING with this error (an ACL user without
    /// `client|tracking`). No news comes before the next session.
    std::string refusal;
};

namespace detail {
struct access;
class connection_impl;
using completion = boost::asio::any_completion_handler<void(error_code)>;
void start_connect(const std::shared_ptr<connection_impl>& impl, diagnostics* diag, completion handler);
void start_exec(const std::shared_ptr<connection_impl>& impl, const request& req, response* resp, completion handler);
void start_pubsub(const std::shared_ptr<connection_impl>& impl, bool subscribe, std::vector<std::string> channels,
                  diagnostics* diag, completion handler);
}  // namespace detail

/// Thread safety: every member may be called from any thread; the connection runs on its own strand.
/// Completion handlers run on their associated executor, never inside the initiating call.
class connection {
public:
    /// The connection's strand: a strand of the executor given to the constructor, where its I/O runs.
    using executor_type = boost::asio::any_io_executor;

    connection(executor_type ex, node_config config);
    /// Closes the connection; pending requests fail with error::closed. Never blocks.
    ~connection();
    connection(connection&&) noexcept;
    connection& operator=(connection&&) noexcept;

    executor_type get_executor() const noexcept;
    const node_config& config() const noexcept;
    /// Who the server is (Redis, Valkey, another) and its version, as the HELLO of the last handshake announced
    /// them; unknown before the first one. The connection's feature gates (SSUBSCRIBE or SUBSCRIBE) read it.
    server_identity server() const noexcept;
    /// server().version: the version HELLO announced ("7.0.15" is 70015; Valkey 8.0.1 is 80001, not INFO's
    /// redis_version); 0 before the first handshake. Compare versions of one kind only: server() says which.
    std::uint32_t server_version() const noexcept;

    /// Starts the connection (connect, TLS, HELLO 3 with AUTH/SETNAME, SELECT) and keeps it up: after a failure
    /// it reconnects with jittered exponential backoff. Completes with the result of the first attempt (or
    /// success at once if already connected): error::auth_failed, unsupported_server, tls_error, timeout or a
    /// socket error, with the server's or the library's text in `diag`.
    /// Signature: void(error_code). Cancellation: terminal (the connection keeps trying in the background).
    /// Lifetime: `diag` must outlive the operation.
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_connect(diagnostics& diag, Token&& token = {})
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_](auto handler, diagnostics* d) { detail::start_connect(impl, d, std::move(handler)); }, token,
            &diag);
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_connect(Token&& token = {})
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_](auto handler) { detail::start_connect(impl, nullptr, std::move(handler)); }, token);
    }

    /// Sends the commands of `req` and stores their replies in `resp` (cleared first), one per expected reply.
    /// Requests from concurrent callers are coalesced into few writes. Completes with:
    /// - success: every reply arrived and none is an error;
    /// - error::server_error: every reply arrived and one at least is an error reply (its text is in `resp`);
    /// - error::timeout: the request's deadline (req.timeout(), else config().request_timeout) expired;
    /// - error::not_connected: the node is down; the request was not sent;
    /// - error::connection_lost: the connection broke after the request was written (it may have run);
    /// - error::protocol_error: the server sent malformed data (the connection is closed and reopened);
    /// - error::closed, error::invalid_argument (empty request), operation_aborted (cancelled).
    /// Script commands (request::push_script) run by EVALSHA and are re-sent as EVAL after NOSCRIPT.
    /// Signature: void(error_code). Cancellation: total, partial and terminal before the request is written
    /// (it is removed), partial and terminal after (it is abandoned: its reply is read and dropped).
    /// Lifetime: `req` and `resp` must outlive the operation.
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_exec(const request& req, response& resp, Token&& token = {})
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_](auto handler, const request* q, response* r) {
                detail::start_exec(impl, *q, r, std::move(handler));
            },
            token, &req, &resp);
    }
    /// As above, ignoring the replies (server errors still complete with error::server_error).
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_exec(const request& req, Token&& token = {})
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_](auto handler, const request* q) {
                detail::start_exec(impl, *q, nullptr, std::move(handler));
            },
            token, &req);
    }

    /// Subscribes to pub/sub `channels`: sharded channels (SSUBSCRIBE) on Redis >= 7.0 and Valkey, where the
    /// library's scripts publish with SPUBLISH, classic ones (SUBSCRIBE) on 6.x; the command is chosen when the
    /// request is written, by the server it is written to (server().has_sharded_pubsub()). SSUBSCRIBE takes channels of
    /// one hash slot per call (a release channel and its lock key share one, key_layout.hpp). Completes with:
    /// - success: the server confirmed every channel. From then on the connection remembers them and subscribes
    ///   again in the handshake of every reconnect, before it serves queued requests, with the command of the
    ///   server it reconnected to;
    /// - error::server_error: the server refused the command (one error for all the channels, e.g. `NOPERM` for
    ///   an ACL user without channel rights; on a Redis Cluster master that does not own the channels' slot,
    ///   `MOVED <slot> <host>:<port>`, `CROSSSLOT` for channels of several slots); none of them is subscribed or
    ///   remembered; its text is in `diag`;
    /// - error::timeout (deadline: config().request_timeout), error::not_connected, error::connection_lost,
    ///   error::closed, error::invalid_argument (no channels), operation_aborted: as async_exec. A SUBSCRIBE
    ///   written before it timed out or was cancelled may still be confirmed later; the channels are then
    ///   remembered (the server did subscribe them) until async_unsubscribe.
    /// Messages go to the message handler (set_message_handler), confirmations to the push handler too.
    /// Signature: void(error_code). Cancellation: as async_exec. Lifetime: `diag` must outlive the operation.
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_subscribe(std::vector<std::string> channels, diagnostics& diag, Token&& token = {})
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_](auto handler, std::vector<std::string> c, diagnostics* d) {
                detail::start_pubsub(impl, true, std::move(c), d, std::move(handler));
            },
            token, std::move(channels), &diag);
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_subscribe(std::vector<std::string> channels, Token&& token = {})
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_](auto handler, std::vector<std::string> c) {
                detail::start_pubsub(impl, true, std::move(c), nullptr, std::move(handler));
            },
            token, std::move(channels));
    }

    /// Unsubscribes from `channels` (SUNSUBSCRIBE on Redis >= 7.0 and Valkey, UNSUBSCRIBE on 6.x, as async_subscribe
    /// subscribed them). The connection forgets them at once: they are not restored
    /// after a reconnect even if this operation fails. Channels never subscribed are fine (the server confirms
    /// them too). Completes when the server confirmed every channel; errors as async_subscribe.
    /// Signature: void(error_code). Cancellation: as async_exec.
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_unsubscribe(std::vector<std::string> channels, Token&& token = {})
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [impl = impl_](auto handler, std::vector<std::string> c) {
                detail::start_pubsub(impl, false, std::move(c), nullptr, std::move(handler));
            },
            token, std::move(channels));
    }

    /// Receives pub/sub messages (`smessage` of sharded channels, `message` of classic ones, and `pmessage` of
    /// patterns subscribed by async_exec) on the connection's strand: the channel and the payload, valid during the
    /// call. The handler must not block; what it throws is dropped. Replaces any earlier handler.
    void set_message_handler(std::function<void(std::string_view channel, std::string_view payload)> handler);

    /// Hears of subscribed channels the connection lost without an async_unsubscribe of them, on the connection's
    /// strand: `channels` the server unsubscribed on its own (a Redis Cluster master sends `sunsubscribe` for each
    /// sharded channel of a slot it no longer owns, after a failover or a slot migration: one call per push), or
    /// refused to subscribe again in the handshake of a reconnect (`MOVED` on a Cluster, `NOPERM` after an ACL
    /// change: one call per handshake). They are no longer remembered nor restored; their messages now reach
    /// whoever subscribes where the slot went (a Cluster node subscribes them at the new owner). Never called on a
    /// standalone Redis that keeps its rights. The handler must not block; what it throws is dropped. Replaces any
    /// earlier handler.
    void set_subscription_lost_handler(std::function<void(std::vector<std::string> channels)> handler);

    /// Hears of the end of each session that was connected and did not end by close(): the server closed the
    /// connection (error::connection_lost), a health check found it silent (error::timeout), it sent malformed data
    /// (error::protocol_error). Called on the connection's strand once the session's requests were failed (their
    /// handlers are posted); a connection that reconnects (config().reconnect) then waits for its next attempt, one
    /// that does not stays disconnected until the next async_connect. A node that must check a server before using it
    /// again (a Sentinel node asks where the master is now) sets this on connections that do not reconnect. The
    /// handler must not block; what it throws is dropped. Replaces any earlier handler.
    void set_disconnect_handler(std::function<void(error_code why)> handler);

    /// Hears what client tracking says (tracking_news), on the connection's strand: after each handshake (`all` when
    /// the session tracks, `refusal` when the server refused), and for each `invalidate` push. The handler must not
    /// block; what it throws is dropped. Replaces any earlier handler.
    void set_tracking_handler(std::function<void(const tracking_news&)> handler);

    /// Receives every server push, raw (pub/sub messages, subscribe confirmations, invalidations...), on the
    /// connection's strand, before the message handler. The handler must not block. Replaces any earlier handler.
    void set_push_handler(std::function<void(const resp::value&)> handler);

    /// Closes the connection and stops reconnecting; pending requests fail with error::closed.
    void close();

    connection_state state() const noexcept;
    usage get_usage() const noexcept;

private:
    friend struct detail::access;  // the library makes connections over other streams (tests)
    explicit connection(std::shared_ptr<detail::connection_impl> impl) noexcept;

    std::shared_ptr<detail::connection_impl> impl_;
};

}  // namespace redlock
