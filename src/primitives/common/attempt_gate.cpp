#include "primitives/common/attempt_gate.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace redlock::detail {

namespace asio = boost::asio;

bool attempt_gates::try_enter(const std::string& id)
{
    auto& g = gates_[id];
    if (g.taken) return false;
    g.taken = true;
    ++taken_;
    return true;
}

asio::awaitable<bool> attempt_gates::enter(const std::string& id, asio::steady_timer& timer)
{
    if (try_enter(id)) co_return true;
    gates_[id].waiters.push_back(&timer);
    // However this frame ends (even destroyed with its io_context), the timer leaves the queue with it: a
    // later leave() must never cancel a timer that no longer exists.
    struct queued {
        attempt_gates& gates;
        const std::string& id;
        asio::steady_timer* timer;
        ~queued()
        {
            if (auto g = gates.gates_.find(id); g != gates.gates_.end()) std::erase(g->second.waiters, timer);
        }
    } in_queue{*this, id, &timer};
    for (;;) {
        timer.expires_at(asio::steady_timer::time_point::max());
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        auto& waiting = gates_[id].waiters;
        const bool handed_over = std::find(waiting.begin(), waiting.end(), &timer) == waiting.end();
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
            if (handed_over)
                leave(id);  // pass it on: the caller is gone
            else
                std::erase(waiting, &timer);
            co_return false;
        }
        if (handed_over) co_return true;
    }
}

void attempt_gates::leave(const std::string& id)
{
    auto it = gates_.find(id);
    if (it == gates_.end() || !it->second.taken) return;
    auto& g = it->second;
    if (!g.waiters.empty()) {
        auto* next = g.waiters.front();  // the gate stays taken: it passes to the longest waiting
        g.waiters.erase(g.waiters.begin());
        next->cancel();
        return;
    }
    g.taken = false;
    --taken_;
    if (kept_entries::sweep_due(gates_.size() - taken_, taken_))
        std::erase_if(gates_, [](const auto& entry) { return !entry.second.taken && entry.second.waiters.empty(); });
}

}  // namespace redlock::detail
