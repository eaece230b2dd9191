#include "primitives/common/lease_keeper.hpp"
#include "primitives/common/lease_state.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <tuple>
#include <utility>
#include <vector>

namespace redlock::detail {

namespace asio = boost::asio;

lease_keeper::entry lease_keeper::schedule(const std::shared_ptr<lease_state>& lease, clock::time_point at)
{
    auto e = schedule_.emplace(at, lease);
    if (at < armed_for_) arm();
    return e;
}

void lease_keeper::unschedule(entry e)
{
    schedule_.erase(e);
    if (schedule_.empty()) arm();  // nothing left: no timer keeps the io_context running
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
        auto lease = it->second.lock();
        if (lease && it->first > now + lease->early_by()) {
            ++it;
            continue;
        }
        it = schedule_.erase(it);
        if (!lease) continue;  // destroyed without a release (its io_context stopped)
        lease->unscheduled();
        due.push_back(std::move(lease));
    }
    // Batches by protocol: a batch is one request, so all its leases must read the same script's replies; and by the
    // replica acknowledgement they ask for, which its one WAIT gives them all.
    using batch_key = std::tuple<lease_protocol::batch_extend_fn, std::uint32_t, std::chrono::milliseconds::rep>;
    struct pending_batch {
        std::vector<std::shared_ptr<lease_state>> leases;
        std::size_t keys = 0;  // what a batch costs the server: every key of every lease is one of its script's
    };
    std::map<batch_key, pending_batch> batches;
    for (auto& lease : due) {
        // A failure here must not leave a lease off the schedule, neither extended nor ever declared lost.
        try {
            if (!lease->due(now)) continue;  // lost, or released
            auto fn = lease->batch_extend();
            if (!fn) {
                asio::co_spawn(timer_.get_executor(), lease_state::extend_alone(lease), asio::detached);
                continue;
            }
            auto& batch = batches[{fn, lease->acks().replicas, lease->acks().timeout.count()}];
            batch.leases.push_back(lease);
            batch.keys += lease->keys().size();
            if (batch.keys >= batch_keys_) {
                batch.keys = 0;
                start_batch(batch.leases);
                batch.leases.clear();
            }
        } catch (...) {
            lease->declare_lost_from_keeper();
        }
    }
    for (auto& [fn, batch] : batches) {
        if (batch.leases.empty()) continue;
        try {
            start_batch(batch.leases);
        } catch (...) {
            for (auto& lease : batch.leases) lease->declare_lost_from_keeper();
        }
    }
    arm();
}

// Takes a copy, so that a caller whose start failed still has the leases to declare lost.
void lease_keeper::start_batch(const batch& leases)
{
    if (batches_in_flight_ >= max_batches_in_flight) {
        waiting_batches_.emplace_back(leases.begin(), leases.end());
        return;
    }
    ++batches_in_flight_;  // first: co_spawn may run the batch to its end before it returns
    try {
        asio::co_spawn(timer_.get_executor(), lease_state::extend_batch(leases),
                       [weak = weak_from_this()](std::exception_ptr) {
                           if (auto self = weak.lock()) self->batch_done();
                       });
    } catch (...) {
        --batches_in_flight_;
        throw;
    }
}

void lease_keeper::batch_done()
{
    --batches_in_flight_;
    while (!waiting_batches_.empty() && batches_in_flight_ < max_batches_in_flight) {
        batch next;
        for (const auto& weak : waiting_batches_.front())
            if (auto lease = weak.lock()) next.push_back(std::move(lease));  // else destroyed while it waited
        waiting_batches_.pop_front();
        if (next.empty()) continue;
        try {
            start_batch(next);
        } catch (...) {
            for (auto& lease : next) lease->declare_lost_from_keeper();
        }
    }
}

}  // namespace redlock::detail
