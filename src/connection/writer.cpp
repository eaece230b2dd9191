// The writer loop: sleeps until requests wait, then writes every one of them in one socket write (10,000
// concurrent requests typically leave in one or two), so callers never contend for the socket.
#include "connection/connection_impl.hpp"

#include <boost/asio/this_coro.hpp>

namespace redlock::detail {

namespace asio = boost::asio;

asio::awaitable<error_code> connection_impl::writer_loop()
{
    for (;;) {
        while (!mpx_.has_waiting()) {
            writer_wakeup_.expires_at(clock::time_point::max());
            co_await writer_wakeup_.async_wait(use_tuple);
            auto cs = co_await asio::this_coro::cancellation_state;
            if (cs.cancelled() != asio::cancellation_type::none || state() != connection_state::connected)
                co_return stop_serving(error::closed);
        }
        if (mpx_.awaiting_replies() == 0) waiting_since_ = clock::now();
        const auto before = mpx_.size() - mpx_.awaiting_replies();
        auto bytes = mpx_.prepare_write();
        last_write_ = clock::now();
        auto [ec, n] = co_await async_write(*transport_, asio::buffer(bytes.data(), bytes.size()), use_tuple);
        if (ec) co_return stop_serving(state() == connection_state::closed ? make_error_code(error::closed) : ec);
        mpx_.commit_write();
        atomic_usage::add(stats_.writes);
        atomic_usage::add(stats_.bytes_written, n);
        atomic_usage::add(stats_.requests, before);
    }
}

}  // namespace redlock::detail
