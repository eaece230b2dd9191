// The order of one hash slot's requests across redirects. Pure: the node drives it.
//
// The node contract: requests of one slot run in the order they were issued. One connection keeps the order of
// what it is given, so a slot keeps its order as long as all of its requests in flight go to one master: a lane
// sends its next request to another master only once every request it sent elsewhere has answered. A refused
// request (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, not sent for want of a connection) did not run; it goes back into
// the lane at its place by issue number, ahead of every later request not yet sent. Later requests already
// written to the same master behind it come back refused too when the slot moved (MOVED concerns the whole slot)
// and are sent again in their order; an ASK or TRYAGAIN concerns keys, so a later request on other keys of the
// slot may run before the refused one is retried. Requests on the same keys keep their order in every case.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>

namespace redlock::detail {

template <class Op>
class slot_lane {
public:
    /// Queues `op`, issued as number `seq`, behind every waiting request issued before it.
    void wait(std::uint64_t seq, Op op)
    {
        auto at = std::upper_bound(waiting_.begin(), waiting_.end(), seq,
                                   [](std::uint64_t s, const entry& e) { return s < e.first; });
        waiting_.insert(at, entry{seq, std::move(op)});
    }
    bool has_waiting() const noexcept { return !waiting_.empty(); }
    /// The waiting request issued first.
    Op& front() noexcept { return waiting_.front().second; }
    Op take_front()
    {
        Op op = std::move(waiting_.front().second);
        waiting_.pop_front();
        return op;
    }
    /// Removes `op` (its deadline passed while it waited); false when it is not waiting.
    bool remove(const Op& op)
    {
        auto at = std::find_if(waiting_.begin(), waiting_.end(), [&](const entry& e) { return e.second == op; });
        if (at == waiting_.end()) return false;
        waiting_.erase(at);
        return true;
    }

    /// Whether a request may go to `master` now: nothing of this slot is in flight elsewhere.
    bool may_send_to(const std::string& master) const noexcept { return in_flight_ == 0 || master == target_; }
    void sent_to(const std::string& master)
    {
        target_ = master;
        ++in_flight_;
    }
    void answered() noexcept
    {
        if (in_flight_ > 0) --in_flight_;
    }
    std::size_t in_flight() const noexcept { return in_flight_; }
    bool idle() const noexcept { return in_flight_ == 0 && waiting_.empty(); }

    /// Empties the lane (the node closed), handing each waiting request to `f`.
    template <class F>
    void drain(F f)
    {
        auto all = std::move(waiting_);
        waiting_.clear();
        for (auto& e : all) f(e.second);
    }

private:
    using entry = std::pair<std::uint64_t, Op>;
    std::deque<entry> waiting_;
    std::string target_;
    std::size_t in_flight_ = 0;
};

}  // namespace redlock::detail
