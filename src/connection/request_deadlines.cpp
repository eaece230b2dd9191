// The deadlines of the requests in flight: one timer for all of them, armed for the earliest, not one timer per
// request (10,000 concurrent requests would otherwise mean 10,000 timers). A request that completes leaves the timer
// armed: it fires once per timeout at most and finds what is due then, where cancelling and arming it again for
// each request cost a reprogrammed timerfd (a syscall) per request in sequence.
#include "connection/connection_impl.hpp"
#include "connection/exec.hpp"

#include <vector>

namespace redlock::detail {

connection_impl::deadline_entry connection_impl::add_deadline(clock::time_point at, exec_op* op)
{
    auto e = deadlines_.emplace(at, op);
    if (at < deadline_armed_) arm_deadline_timer();
    return e;
}

void connection_impl::remove_deadline(deadline_entry e)
{
    deadlines_.erase(e);
    // A connected session's reader keeps the io_context running anyway.
    if (state() != connection_state::connected) disarm_idle_deadline_timer();
}

void connection_impl::disarm_idle_deadline_timer()
{
    if (!deadlines_.empty()) return;  // an armed timer with nothing due would keep run() from returning until it fires
    deadline_timer_.cancel();
    deadline_armed_ = clock::time_point::max();
}

void connection_impl::arm_deadline_timer()
{
    deadline_armed_ = deadlines_.empty() ? clock::time_point::max() : deadlines_.begin()->first;
    if (deadlines_.empty()) return;
    deadline_timer_.expires_at(deadline_armed_);
    deadline_timer_.async_wait([weak = weak_from_this()](error_code ec) {
        if (auto self = weak.lock(); self && !ec) self->on_deadline_timer();
    });
}

void connection_impl::on_deadline_timer()
{
    const auto now = clock::now();
    std::vector<std::shared_ptr<exec_op>> expired;
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
        expired.push_back(deadlines_.begin()->second->shared_from_this());  // alive while it completes
        deadlines_.erase(deadlines_.begin());
    }
    for (auto& op : expired) op->on_deadline();
    arm_deadline_timer();
}

}  // namespace redlock::detail
