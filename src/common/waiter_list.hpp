// Callers waiting for one event (a connection attempt's end, a lease's loss, a load's outcome), each with its own
// cancellation slot: all completed at once when the event comes, or one alone, removed, when its slot is emitted.
#pragma once

#include "common/completion.hpp"

#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>

namespace redlock::detail {

/// Lives in (and must not move out of) the object `owner` of watch(); used on that object's strand.
template <class... Ts>
class waiter_list {
public:
    using completion = pending_completion<Ts...>;

    /// `accepted`: the cancellation types that take a waiter off the list (it completes with operation_aborted);
    /// other types are ignored. `last_left`: runs on the strand when a cancellation took off the last waiter.
    waiter_list(strand_type strand, boost::asio::cancellation_type_t accepted, std::function<void()> last_left = {})
        : strand_(std::move(strand)), accepted_(accepted), last_left_(std::move(last_left))
    {}
    waiter_list(const waiter_list&) = delete;
    waiter_list& operator=(const waiter_list&) = delete;

    /// In the initiating call, where the caller may emit its slot (any thread): numbers the waiter and connects
    /// its slot. A cancellation is applied on the strand, and only while `owner`, which holds this list, lives.
    std::uint64_t watch(completion& done, std::weak_ptr<const void> owner)
    {
        const auto id = next_id_.fetch_add(1, std::memory_order_relaxed);
        if (auto slot = done.slot(); slot.is_connected()) {
            slot.assign([this, owner = std::move(owner), strand = strand_, accepted = accepted_,
                         id](boost::asio::cancellation_type_t type) {
                if ((type & accepted) == boost::asio::cancellation_type::none) return;
                auto alive = owner.lock();
                if (!alive) return;
                boost::asio::dispatch(strand, [this, alive = std::move(alive), id] { cancel(id); });
            });
        }
        return id;
    }

    /// On the strand, in the hop that follows the initiation (a cancellation emitted after the initiation
    /// reaches the strand after it): the waiter watch() numbered `id` waits. complete_all fills `diag` (may be null).
    void add(std::uint64_t id, completion done, diagnostics* diag = nullptr)
    {
        waiters_.emplace(id, waiter{std::move(done), diag});
    }

    /// On the strand: completes every waiter, in the order of their ids, with `ec` and `values`; `fill` (if
    /// set) first writes each one's diagnostics.
    void complete_all(error_code ec, const std::function<void(diagnostics&)>& fill, Ts... values)
    {
        auto waiters = std::move(waiters_);
        waiters_.clear();
        for (auto& [id, w] : waiters) {
            if (fill && w.diag) fill(*w.diag);
            w.done.complete(ec, values...);
        }
    }
    void complete_all(error_code ec, Ts... values) { complete_all(ec, nullptr, std::move(values)...); }

    /// Forgets every waiter without completing it (the execution context shuts down).
    void drop_all() noexcept
    {
        auto waiters = std::move(waiters_);
        waiters_.clear();
    }

    bool empty() const noexcept { return waiters_.empty(); }
    std::size_t size() const noexcept { return waiters_.size(); }

private:
    struct waiter {
        completion done;
        diagnostics* diag;
    };

    // By id, not by iterator: a slot may be emitted again after its waiter is gone.
    void cancel(std::uint64_t id)
    {
        auto node = waiters_.extract(id);
        if (node.empty()) return;
        node.mapped().done.complete(boost::asio::error::operation_aborted, Ts{}...);
        if (waiters_.empty() && last_left_) last_left_();
    }

    strand_type strand_;
    boost::asio::cancellation_type_t accepted_;
    std::function<void()> last_left_;
    // A map, not a vector: erasing from a vector move-assigns the waiters after it, and Asio 1.81's
    // any_completion_handler move assignment recurses without end (it copies from an lvalue of itself).
    std::map<std::uint64_t, waiter> waiters_;
    std::atomic<std::uint64_t> next_id_{0};
};

}  // namespace redlock::detail
