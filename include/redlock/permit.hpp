// Permits of a semaphore, held: their id, how long they are valid, and the operations that extend, release or
// watch them.
#pragma once

#include <redlock/detail/access.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/lease.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace redlock {

namespace detail {
using extend_permit_handler = boost::asio::any_completion_handler<void(error_code, std::chrono::milliseconds)>;
void start_extend_permit(const std::shared_ptr<lease_state>& state, diagnostics* diag, extend_permit_handler handler);
}  // namespace detail

/// One grant of a semaphore: `count()` permits under one random id, a lease like a lock's (validity, watchdog,
/// loss). Move-only. An empty permit (default-constructed, moved from, or from a failed acquire) holds nothing;
/// its operations complete at once as an empty lease's do. Destroying a permit that is still held releases it in
/// the background; its TTL is the safety net.
class permit {
public:
    /// The executor of the client the permit came from (lease::executor_type).
    using executor_type = redlock::lease::executor_type;

    permit() = default;

    explicit operator bool() const noexcept { return static_cast<bool>(lease_); }
    /// The client's executor; an empty executor for an empty permit.
    executor_type get_executor() const noexcept { return lease_.get_executor(); }

    /// The semaphore's name.
    const std::string& name() const noexcept
    {
        static const std::string none;
        return lease_ ? lease_.keys().front() : none;
    }
    /// 128 bits from the OS CSPRNG, hex: the permit's member in the semaphore's set on each node.
    const std::string& id() const noexcept { return lease_.token(); }
    /// How many permits this grant holds (0 when empty).
    std::int64_t count() const noexcept { return lease_ ? count_ : 0; }
    /// Local deadline (steady clock): start of the last successful grant or extension + ttl - drift.
    std::chrono::steady_clock::time_point valid_until() const noexcept { return lease_.valid_until(); }
    /// Time left until valid_until(); zero when past.
    std::chrono::milliseconds validity() const noexcept { return lease_.validity(); }
    /// True once the permit ran out without a successful extension, or an extension found it gone.
    bool lost() const noexcept { return lease_.lost(); }
    /// The lease behind the permit, for code that works with any lease.
    const redlock::lease& lease() const noexcept { return lease_; }

    /// Extends the permit on every node where it is still held, to the ttl counted by each node's own clock; it
    /// never re-creates a permit that expired (its place may be taken). Succeeds on the semaphore's quorum only,
    /// and completes with the remaining lease in server time: what a quorum of nodes now gives the permit by their
    /// own clocks (validity() is the local, conservative view). Errors as lease::async_extend: lost, not_owner
    /// (released, or the permit is gone on so many nodes that no quorum holds it: it is then lost), no_quorum.
    /// Signature: void(error_code, std::chrono::milliseconds). Cancellation: terminal (the requests are still
    /// sent).
    template <
        boost::asio::completion_token_for<void(error_code, std::chrono::milliseconds)> Token = boost::asio::deferred_t>
    auto async_extend(diagnostics& diag, Token&& token = {})
    {
        return initiate_extend(&diag, std::forward<Token>(token));
    }
    template <
        boost::asio::completion_token_for<void(error_code, std::chrono::milliseconds)> Token = boost::asio::deferred_t>
    auto async_extend(Token&& token = {})
    {
        return initiate_extend(nullptr, std::forward<Token>(token));
    }

    /// Gives the permits back on every node and stops the watchdog; completes once every node answered or hit its
    /// deadline. Says what happened: success when a quorum removed the permit; error::lost when it had been lost
    /// already; error::not_owner when it was not held on enough nodes to make a quorum (it had expired there, or
    /// was released): never success for an expired permit; no_quorum when too few nodes answered (the TTL cleans
    /// up). Idempotent: a second release succeeds at once. Signature: void(error_code). Cancellation: terminal
    /// (the requests are still sent).
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_release(diagnostics& diag, Token&& token = {})
    {
        return lease_.async_release(diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_release(Token&& token = {})
    {
        return lease_.async_release(std::forward<Token>(token));
    }

    /// Completes with error::lost when the permit is lost (`diag` says why), or operation_aborted when it is
    /// released first. Signature: void(error_code). Cancellation: terminal.
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_wait_lost(diagnostics& diag, Token&& token = {})
    {
        return lease_.async_wait_lost(diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_wait_lost(Token&& token = {})
    {
        return lease_.async_wait_lost(std::forward<Token>(token));
    }

private:
    friend struct detail::access;
    permit(redlock::lease held, std::int64_t count) noexcept : lease_(std::move(held)), count_(count) {}

    template <class Token>
    auto initiate_extend(diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, std::chrono::milliseconds)>(
            [state = detail::access::impl(lease_), diag](auto handler) {
                detail::start_extend_permit(state, diag, std::move(handler));
            },
            token);
    }

    redlock::lease lease_;
    std::int64_t count_ = 0;
};

}  // namespace redlock
