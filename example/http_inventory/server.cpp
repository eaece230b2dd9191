#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the allocation of an Asio coroutine frame with the frame's own operator delete (which frees it
// correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "log.hpp"
#include "server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace http_inventory {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

server::server(asio::io_context& ioc, service& svc) : ioc_(ioc), svc_(svc), acceptor_(ioc), drain_timer_(ioc) {}

tcp::endpoint server::listen(const std::string& host, std::uint16_t port)
{
    const tcp::endpoint endpoint(asio::ip::make_address(host), port);
    acceptor_.open(endpoint.protocol());
    // A restarted instance must be able to bind while the old one's connections sit in TIME_WAIT.
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(asio::socket_base::max_listen_connections);
    return acceptor_.local_endpoint();
}

void server::start()
{
    accepting_ = true;
    asio::co_spawn(ioc_, accept_loop(), [](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            log(redlock::log_level::error, std::string("accept loop: ") + ex.what());
        }
    });
}

asio::awaitable<void> server::accept_loop()
{
    asio::steady_timer backoff(ioc_);
    while (accepting_) {
        auto [ec, socket] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
        if (!accepting_) break;
        if (ec) {
            // Out of descriptors (EMFILE) and the like: pause instead of spinning on the same error.
            log(redlock::log_level::warning, "accept: " + ec.message());
            backoff.expires_after(100ms);
            co_await backoff.async_wait(asio::as_tuple(asio::use_awaitable));
            continue;
        }
        if (connections_.size() >= svc_.cfg.max_connections) {
            svc_.stats.count_dropped("refused");
            boost::system::error_code ignored;
            socket.close(ignored);
            continue;
        }
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);  // small responses: do not wait for the peer's ACK
        auto c = std::make_shared<connection_state>(std::move(socket));
        c->peer = c->stream.socket().remote_endpoint(ignored).address().to_string();
        connections_.insert(c.get());
        svc_.stats.connection_opened();
        // The session's cancellation slot is the connection's signal: the drain deadline emits it.
        auto& slot_owner = c->cancel;
        asio::co_spawn(ioc_, run_session(c, *this),
                       asio::bind_cancellation_slot(slot_owner.slot(), [this, c](std::exception_ptr e) {
                           if (e) {
                               try {
                                   std::rethrow_exception(e);
                               } catch (const boost::system::system_error& ex) {
                                   if (ex.code() != asio::error::operation_aborted)
                                       log(redlock::log_level::error, std::string("session: ") + ex.what());
                               } catch (const std::exception& ex) {
                                   log(redlock::log_level::error, std::string("session: ") + ex.what());
                               }
                           }
                           session_ended(c.get());
                       }));
    }
}

void server::stop_accepting()
{
    accepting_ = false;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
}

void server::session_ended(connection_state* c)
{
    connections_.erase(c);
    svc_.stats.connection_closed();
    check_drained();
}

void server::check_drained()
{
    if (on_drained_ && !accepting_ && connections_.empty()) {
        drain_timer_.cancel();
        auto done = std::move(on_drained_);
        on_drained_ = nullptr;
        done();
    }
}

void server::drain(std::function<void()> on_drained)
{
    if (svc_.draining) return;
    svc_.draining = true;
    on_drained_ = std::move(on_drained);
    const auto drain_timeout = svc_.cfg.drain_timeout;
    auto close_and_wait = [this, drain_timeout] {
        stop_accepting();
        // Idle connections have no request to finish; busy ones close after their response.
        for (auto* c : connections_)
            if (!c->busy) c->stream.cancel();
        log(redlock::log_level::info, "draining " + std::to_string(connections_.size()) + " connection(s)");
        if (connections_.empty()) return check_drained();
        drain_timer_.expires_after(drain_timeout);
        drain_timer_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            log(redlock::log_level::warning, "drain deadline: cancelling " + std::to_string(connections_.size()) +
                                                 " request(s); their leases are released");
            for (auto* c : connections_) {
                c->cancel.emit(asio::cancellation_type::terminal);
                c->stream.cancel();
            }
        });
    };
    if (svc_.cfg.shutdown_delay.count() == 0) return close_and_wait();
    // Readiness already says 503; keep serving while load balancers notice, then close.
    drain_timer_.expires_after(svc_.cfg.shutdown_delay);
    drain_timer_.async_wait([close_and_wait](boost::system::error_code ec) {
        if (!ec) close_and_wait();
    });
}

}  // namespace http_inventory
