#include "primitives/common/lease_keeper.hpp"
#include "primitives/common/lease_state.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <vector>

namespace redlock::detail {

namespace asio = boost::asio;

lease_keeper::entry lease_keeper::schedule(std::shared_ptr<lease_state> lease, clock::time_point at)
{
    auto e = schedule_.emplace(at, std::move(lease));
    if (at < armed_for_) arm();
    return e;
}

void lease_keeper::unschedule(entry e)
{
    schedule_.erase(e);  // the timer may still fire for it: it then finds nothing due
}

void lease_keeper::arm()
{
    armed_for_ = schedule_.empty() ? clock::time_point::max() : schedule_.begin()->first;
    if (schedule_.empty()) {
        timer_.cancel();
        return;
    }
    timer_.expires_at(armed_for_);
    timer_.async_wait(asio::bind_executor(timer_.get_executor(), [weak = weak_from_this()](error_code ec) {
        if (ec) return;  // re-armed, or the client is gone
        if (auto self = weak.lock()) self->on_timer();
    }));
}

void lease_keeper::on_timer()
{
    const auto now = clock::now();
    std::vector<std::shared_ptr<lease_state>> due;
    for (auto it = schedule_.begin(); it != schedule_.end() && it->first <= now + batch_window;) {
        if (it->first > now + it->second->early_by()) {
            ++it;
            continue;
        }
        due.push_back(std::move(it->second));
        it = schedule_.erase(it);
        due.back()->unscheduled();
    }
    // Batches by protocol: a batch is one request, so all its leases must read the same script's replies.
    std::map<lease_protocol::batch_extend_fn, std::vector<std::shared_ptr<lease_state>>> batches;
    for (auto& lease : due) {
        if (!lease->due(now)) continue;  // lost, released, or rescheduled
        if (auto fn = lease->batch_extend()) {
            auto& batch = batches[fn];
            batch.push_back(std::move(lease));
            if (batch.size() == max_batch) {
                asio::co_spawn(timer_.get_executor(), lease_state::extend_batch(std::move(batch)), asio::detached);
                batch.clear();
            }
        } else {
            asio::co_spawn(timer_.get_executor(), lease_state::extend_alone(std::move(lease)), asio::detached);
        }
    }
    for (auto& [fn, batch] : batches)
        if (!batch.empty())
            asio::co_spawn(timer_.get_executor(), lease_state::extend_batch(std::move(batch)), asio::detached);
    arm();
}

}  // namespace redlock::detail
