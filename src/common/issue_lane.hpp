// The issue order of requests across the servers they are sent to: one hash slot's across a Cluster's redirects
// (cluster_node), a Sentinel master's across failovers (sentinel_node). Pure: the node drives it.
//
// The node contract: requests run in the order they were issued. One connection keeps the order of what it is
// given, so a lane keeps its order as long as all of its requests in flight go to one server: it sends its next
// request to another server only once every request it sent elsewhere has answered. A refused request (MOVED, ASK,
// TRYAGAIN, CLUSTERDOWN, READONLY, LOADING, MASTERDOWN, not sent for want of a connection) did not run; it goes back
// into the lane at its place by issue number, ahead of every later request not yet sent. Later requests already
// written to the same server behind it often come back refused too (MOVED concerns the whole slot, READONLY the
// whole server) and are sent again in their order. But a later request may have run meanwhile: one written behind
// an ASK, a TRYAGAIN or a CLUSTERDOWN (they concern keys, or a moment), a read a demoted master still serves, or one
// queued at a connection that came up after the refused request found it down. So the lane remembers the latest
// request that reached a server unrefused (`ran`): a refused request is sent again only if no request issued after
// it ran (`later_ran`); otherwise its refusal is its answer (it did not run).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>

namespace redlock::detail {

template <class Op>
class issue_lane {
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

    /// Whether a request may go to `server` now: nothing of this lane is in flight elsewhere.
    bool may_send_to(const std::string& server) const noexcept { return in_flight_ == 0 || server == target_; }
    void sent_to(const std::string& server)
    {
        target_ = server;
        ++in_flight_;
    }
    void answered() noexcept
    {
        if (in_flight_ > 0) --in_flight_;
    }
    std::size_t in_flight() const noexcept { return in_flight_; }

    /// The request issued as `seq` reached its server and may have run (its answer was no refusal).
    void ran(std::uint64_t seq) noexcept { ran_below_ = std::max(ran_below_, seq + 1); }
    /// Whether a request issued after `seq` may have run: the refused `seq`, sent again, would run after it.
    bool later_ran(std::uint64_t seq) const noexcept { return ran_below_ > seq + 1; }
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
    std::uint64_t ran_below_ = 0;  // one past the issue number of the latest request that ran
};

}  // namespace redlock::detail
