// The life of a connection: attempts until one succeeds, serving (reader, writer and health check side by side)
// until the connection breaks, failing the requests it cannot answer, a jittered backoff, and again; until
// close(). async_connect waits for the end of the next attempt.
#include "connection/connection_impl.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <variant>

namespace redlock::detail {

namespace asio = boost::asio;

namespace {
// Every async_connect waiting gets the attempt's outcome and its diagnostics.
void tell_connect_waiters(waiter_list<>& waiters, error_code ec, const diagnostics& diag)
{
    waiters.complete_all(ec, [&diag](diagnostics& d) { d = diag; });
}
}  // namespace

void connection_impl::start_connect(diagnostics* diag, completion handler)
{
    pending_completion<> done(std::move(handler), io_executor_);
    const auto id = connect_waiters_.watch(done, weak_from_this());
    asio::dispatch(strand_, [self = shared_from_this(), diag, id, done = std::move(done)]() mutable {
        const auto state = self->state();
        if (state == connection_state::closed) return done.complete(error::closed);
        if (state == connection_state::connected) {
            if (diag) diag->clear();
            return done.complete({});
        }
        self->connect_waiters_.add(id, std::move(done), diag);
        // Idle: never started. Disconnected without reconnect: the loop ended after a failure, and an explicit
        // connect is a new attempt (otherwise this waiter would wait for an attempt that never comes).
        if (state == connection_state::idle || (state == connection_state::disconnected && !self->config_.reconnect)) {
            self->set_state(connection_state::connecting);
            asio::co_spawn(self->strand_, run(self), [](std::exception_ptr) {
                // The loop catches what it can; an escaping exception means the connection was torn down.
            });
        }
    });
}

void connection_impl::close()
{
    asio::dispatch(strand_, [self = shared_from_this()] {
        if (self->state() == connection_state::closed) return;
        const bool running = self->state() != connection_state::idle;
        self->set_state(connection_state::closed);
        if (self->transport_) self->transport_->close();
        self->writer_wakeup_.cancel();
        self->health_timer_.cancel();
        self->backoff_timer_.cancel();
        self->connect_timer_.cancel();
        self->deadline_timer_.cancel();
        diagnostics diag;
        access::set_client_message(diag, "connection closed");
        tell_connect_waiters(self->connect_waiters_, error::closed, diag);
        if (!running) self->mpx_.fail_all(error::closed, error::closed);
    });
}

std::chrono::milliseconds connection_impl::next_backoff()
{
    // Exponential with "equal jitter": half fixed, half random, so restarted clients do not reconnect in step.
    backoff_ =
        backoff_.count() == 0 ? config_.reconnect_min_delay : std::min(backoff_ * 2, config_.reconnect_max_delay);
    const auto half = std::max<std::int64_t>(backoff_.count() / 2, 1);
    std::uniform_int_distribution<std::int64_t> extra(0, half);
    return std::chrono::milliseconds(half + extra(jitter_));
}

asio::awaitable<void> connection_impl::run(std::shared_ptr<connection_impl> self)
{
    co_await self->run_loop();
}

asio::awaitable<void> connection_impl::run_loop()
{
    using namespace asio::experimental::awaitable_operators;
    while (state() != connection_state::closed) {
        set_state(connection_state::connecting);
        diagnostics diag;
        error_code ec = co_await connect_once(diag);
        if (state() == connection_state::closed) break;
        tell_connect_waiters(connect_waiters_, ec, diag);
        const bool served = !ec;
        if (served) {
            set_state(connection_state::connected);
            atomic_usage::add(stats_.connects);
            backoff_ = std::chrono::milliseconds(0);
            last_write_ = waiting_since_ = clock::now();
            auto why = co_await (reader_loop() || writer_loop() || health_loop());
            ec = std::visit([](error_code e) { return e; }, why);
            atomic_usage::add(stats_.disconnects);
        }
        transport_->close();
        if (state() == connection_state::closed) break;
        set_state(connection_state::disconnected);
        const error_code why =
            ec == error::protocol_error || ec == error::timeout ? ec : make_error_code(error::connection_lost);
        mpx_.fail_all(why, error::not_connected);
        disarm_idle_deadline_timer();
        subscriptions_.connection_lost();
        if (served && disconnect_handler_) {
            try {
                disconnect_handler_(why);
            } catch (...) {
            }
        }
        if (!config_.reconnect) co_return;
        backoff_timer_.expires_after(next_backoff());
        co_await backoff_timer_.async_wait(use_tuple);
    }
    if (transport_) transport_->close();
    mpx_.fail_all(error::closed, error::closed);
}

}  // namespace redlock::detail
