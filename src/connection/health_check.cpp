// The health check: an idle connection sends PING every health_check_interval (so a dead peer is noticed even
// without traffic), and when replies are outstanding and nothing was read for health_check_timeout (a paused,
// frozen or blackholed server) the connection ends with error::timeout, to be reopened.
#include "connection/connection_impl.hpp"
#include "connection/exec.hpp"

#include <algorithm>

namespace redlock::detail {

namespace asio = boost::asio;

namespace {
std::shared_ptr<const request> ping()
{
    static const auto ping = [] {
        auto r = std::make_shared<request>();
        r->push("PING");
        return r;
    }();
    return ping;
}
}  // namespace

asio::awaitable<error_code> connection_impl::health_loop()
{
    const auto interval = config_.health_check_interval;
    const auto tick = std::max(std::chrono::milliseconds(10), std::min(interval, config_.health_check_timeout / 4));
    for (;;) {
        health_timer_.expires_after(tick);
        auto [ec] = co_await health_timer_.async_wait(use_tuple);
        if (ec || state() != connection_state::connected) co_return stop_serving(error::closed);
        const auto now = clock::now();
        if (mpx_.awaiting_replies() > 0 && now - waiting_since_ > config_.health_check_timeout)
            co_return stop_serving(error::timeout);
        if (mpx_.size() == 0 && now - last_write_ >= interval) submit(std::make_shared<detached_entry>(ping()));
    }
}

}  // namespace redlock::detail
