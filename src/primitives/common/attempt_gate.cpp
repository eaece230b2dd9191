#include "primitives/common/attempt_gate.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace redlock::detail {

namespace asio = boost::asio;

asio::awaitable<bool> attempt_gates::enter(const std::string& id, asio::steady_timer& timer)
{
    auto [gate, free] = gates_.try_emplace(id);
    if (free) co_return true;
    gate->second.push_back(&timer);
    // However this frame ends (even destroyed with its io_context), the timer leaves the queue with it: a
    // later leave() must never cancel a timer that no longer exists.
    struct queued {
        attempt_gates& gates;
        const std::string& id;
        asio::steady_timer* timer;
        ~queued()
        {
            if (auto g = gates.gates_.find(id); g != gates.gates_.end()) std::erase(g->second, timer);
        }
    } in_queue{*this, id, &timer};
    for (;;) {
        timer.expires_at(asio::steady_timer::time_point::max());
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        auto& waiting = gates_[id];
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
    auto gate = gates_.find(id);
    if (gate == gates_.end()) return;
    if (gate->second.empty()) {
        gates_.erase(gate);
        return;
    }
    auto* next = gate->second.front();  // the gate stays taken: it passes to the longest waiting
    gate->second.erase(gate->second.begin());
    next->cancel();
}

}  // namespace redlock::detail
