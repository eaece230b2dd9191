// The shared state of a lease, kept on the client's strand, and the keeper coroutine that extends it
// (watchdog) and declares it lost at its validity deadline.
#pragma once

#include "primitives/common/client_impl.hpp"
#include "common/completion.hpp"

#include <redlock/lease.hpp>
#include <redlock/lock_options.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>

namespace redlock::detail {

class lease_state : public std::enable_shared_from_this<lease_state> {
public:
    using clock = std::chrono::steady_clock;
    enum class status { held, released, lost };

    lease_state(std::shared_ptr<client_impl> client, std::vector<std::string> keys, std::string token,
                std::uint64_t fencing_token, lock_options options, clock::time_point granted_at,
                clock::time_point valid_until);

    const std::vector<std::string>& keys() const noexcept { return keys_; }
    const std::string& token() const noexcept { return token_; }
    std::uint64_t fencing_token() const noexcept { return fencing_token_; }
    clock::time_point valid_until() const noexcept
    {
        return clock::time_point(clock::duration(valid_until_.load(std::memory_order_relaxed)));
    }
    bool lost() const noexcept { return lost_.load(std::memory_order_relaxed); }
    strand_type& strand() noexcept { return client_->strand(); }

    /// Starts the keeper; call once, on the strand, right after construction.
    void start();

    boost::asio::awaitable<std::tuple<error_code>> extend();
    boost::asio::awaitable<std::tuple<error_code>> release();
    void wait_lost(pending_completion<> waiter, std::uint64_t id);
    void cancel_wait(std::uint64_t id);
    std::uint64_t next_waiter_id() noexcept { return next_waiter_id_.fetch_add(1, std::memory_order_relaxed); }
    /// From the lease's destructor: release without anyone waiting.
    void release_in_background();

private:
    static boost::asio::awaitable<void> keep(std::shared_ptr<lease_state> self);
    boost::asio::awaitable<error_code> extend_once();
    void declare_lost();
    // Marks the lease released and stops the keeper and the loss waiters; false if it was released already.
    bool stop_holding();
    void finish_waiters(error_code ec);
    void set_valid_until(clock::time_point t) noexcept
    {
        valid_until_.store(t.time_since_epoch().count(), std::memory_order_relaxed);
    }

    std::shared_ptr<client_impl> client_;
    std::vector<std::string> keys_;
    std::string token_;
    std::uint64_t fencing_token_;
    lock_options options_;
    status status_ = status::held;
    std::atomic<clock::rep> valid_until_;
    std::atomic<bool> lost_{false};
    clock::time_point acquired_at_;
    clock::time_point granted_at_;  // start of the attempt whose grant is in force
    bool last_extension_failed_ = false;
    boost::asio::steady_timer keeper_timer_;
    struct waiter {
        std::uint64_t id;
        pending_completion<> done;
    };
    std::vector<waiter> lost_waiters_;
    std::atomic<std::uint64_t> next_waiter_id_{0};
};

}  // namespace redlock::detail
