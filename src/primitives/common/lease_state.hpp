// The shared state of a lease, kept on the client's strand, and the keeper coroutine that extends it
// (watchdog) and declares it lost at its validity deadline. Every primitive's lease is one of these, with its
// own lease_protocol.
#pragma once

#include "common/completion.hpp"
#include "primitives/common/client_impl.hpp"
#include "primitives/common/lease_protocol.hpp"

#include <redlock/diagnostics.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>

namespace redlock::detail {

class lease_state : public std::enable_shared_from_this<lease_state> {
public:
    using clock = std::chrono::steady_clock;
    enum class status { held, released, lost };

    lease_state(std::shared_ptr<client_impl> client, lease_protocol protocol, lease_timing timing,
                std::vector<std::string> keys, std::string token, std::uint64_t fencing_token,
                clock::time_point granted_at, clock::time_point valid_until);

    const std::vector<std::string>& keys() const noexcept { return keys_; }
    const std::string& token() const noexcept { return token_; }
    std::uint64_t fencing_token() const noexcept { return fencing_token_; }
    clock::time_point valid_until() const noexcept
    {
        return clock::time_point(clock::duration(valid_until_.load(std::memory_order_relaxed)));
    }
    bool lost() const noexcept { return lost_.load(std::memory_order_relaxed); }
    strand_type& strand() noexcept { return client_->strand(); }
    const boost::asio::any_io_executor& io_executor() const noexcept { return client_->io_executor(); }

    /// Starts the keeper; call once, on the strand, right after construction.
    void start();

    // The operations own the state while they run: the lease may be destroyed meanwhile.
    static boost::asio::awaitable<std::tuple<error_code>> extend(std::shared_ptr<lease_state> self, diagnostics* diag);
    static boost::asio::awaitable<std::tuple<error_code>> release(std::shared_ptr<lease_state> self, diagnostics* diag);
    void wait_lost(pending_completion<> waiter, std::uint64_t id, diagnostics* diag);
    void cancel_wait(std::uint64_t id);
    std::uint64_t next_waiter_id() noexcept { return next_waiter_id_.fetch_add(1, std::memory_order_relaxed); }
    /// From the lease's destructor: release without anyone waiting.
    void release_in_background();

private:
    static boost::asio::awaitable<void> keep(std::shared_ptr<lease_state> self);
    static boost::asio::awaitable<error_code> extend_once(std::shared_ptr<lease_state> self, diagnostics* diag);
    void declare_lost(std::string why);
    // The nodes whose answer to `extension` says our keys are missing there and nobody else holds them.
    std::vector<std::size_t> nodes_missing_keys(const fan_out_state& extension) const;
    // After a successful extension: takes the keys back on the nodes that lost them.
    static boost::asio::awaitable<void> repair(std::shared_ptr<lease_state> self,
                                               std::shared_ptr<fan_out_state> extension);
    // Marks the lease released and stops the keeper and the loss waiters; false if it was released already.
    bool stop_holding();
    void finish_waiters(error_code ec);
    // The protocol's requests, built on first use (on the strand).
    const std::shared_ptr<const request>& extend_request();
    const std::shared_ptr<const request>& release_request();
    void set_valid_until(clock::time_point t) noexcept
    {
        valid_until_.store(t.time_since_epoch().count(), std::memory_order_relaxed);
    }

    std::shared_ptr<client_impl> client_;
    lease_protocol protocol_;
    std::shared_ptr<const request> extend_request_;
    std::shared_ptr<const request> release_request_;
    lease_timing timing_;
    std::vector<std::string> keys_;
    std::string token_;
    std::uint64_t fencing_token_;
    status status_ = status::held;
    std::string lost_why_;  // for the diagnostics of async_wait_lost and async_release
    std::atomic<clock::rep> valid_until_;
    std::atomic<bool> lost_{false};
    clock::time_point acquired_at_;
    clock::time_point granted_at_;  // start of the attempt whose grant is in force
    bool last_extension_failed_ = false;
    std::string last_extension_failure_;
    boost::asio::steady_timer keeper_timer_;
    struct waiter {
        std::uint64_t id;
        pending_completion<> done;
        diagnostics* diag;
    };
    std::vector<waiter> lost_waiters_;
    std::atomic<std::uint64_t> next_waiter_id_{0};
};

}  // namespace redlock::detail
