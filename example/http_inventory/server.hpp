// The listener and the set of open connections: accepts, caps the number of connections, and drains them on
// shutdown (idle ones closed at once, busy ones allowed to finish until the drain deadline, then cancelled).
#pragma once

#include "service.hpp"

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <functional>
#include <memory>
#include <string>
#include <unordered_set>

namespace http_inventory {

/// One accepted connection, shared by its session coroutine and the server (which may close or cancel it).
struct connection_state {
    explicit connection_state(boost::asio::ip::tcp::socket socket) : stream(std::move(socket)) {}
    boost::beast::tcp_stream stream;
    boost::asio::cancellation_signal cancel;  ///< bound to the session: cancels a request at the drain deadline
    std::string peer;                         ///< the peer's address, the rate limit's fallback subject
    bool busy = false;                        ///< from a request's complete header until its response is written
};

/// Runs on one thread (the io_context's): no locking anywhere.
class server {
public:
    server(boost::asio::io_context& ioc, service& svc);

    /// Binds and listens (throws on failure); returns the bound endpoint (port 0 picks a free one).
    boost::asio::ip::tcp::endpoint listen(const std::string& host, std::uint16_t port);
    /// Starts accepting.
    void start();
    /// Stops accepting after the configured shutdown delay, closes idle connections, lets busy ones finish
    /// their request (their response says `Connection: close`), cancels those left at the drain deadline; then
    /// calls `on_drained` once no connection is left. Sets service::draining at once (/readyz turns 503).
    void drain(std::function<void()> on_drained);

private:
    friend boost::asio::awaitable<void> run_session(std::shared_ptr<connection_state>, server&);
    boost::asio::awaitable<void> accept_loop();
    void stop_accepting();
    void session_ended(connection_state* c);
    void check_drained();

    boost::asio::io_context& ioc_;
    service& svc_;
    boost::asio::ip::tcp::acceptor acceptor_;
    std::unordered_set<connection_state*> connections_;
    boost::asio::steady_timer drain_timer_;
    std::function<void()> on_drained_;
    bool accepting_ = false;
};

/// One connection's requests, one after another (keep-alive), with the configured timeouts and limits.
boost::asio::awaitable<void> run_session(std::shared_ptr<connection_state> c, server& srv);

}  // namespace http_inventory
