// A held lock: its token, how long it is valid, and the operations that extend, release or watch it.
#pragma once

#include <redlock/detail/access.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace redlock {

namespace detail {
class lease_state;
using lease_handler = boost::asio::any_completion_handler<void(error_code)>;
void start_extend(const std::shared_ptr<lease_state>& state, diagnostics* diag, lease_handler handler);
void start_release(const std::shared_ptr<lease_state>& state, diagnostics* diag, lease_handler handler);
void start_wait_lost(const std::shared_ptr<lease_state>& state, diagnostics* diag, lease_handler handler);
}  // namespace detail

/// Move-only. An empty lease (default-constructed, moved from, or from a failed lock) holds nothing; its
/// operations complete at once (extend: not_owner, release: success, wait_lost: operation_aborted), on the
/// handler's associated executor, or on Asio's system executor for a handler without one (bind one, or use a
/// coroutine token, if that matters).
/// Destroying a lease that is still held releases it in the background: it never blocks (keep the
/// io_context running so the release reaches the nodes; the TTL is the safety net).
class lease {
public:
    /// The executor of the client the lease came from: where its operations complete for a handler without an
    /// associated executor.
    using executor_type = boost::asio::any_io_executor;

    lease() = default;
    ~lease();
    lease(lease&&) noexcept = default;
    lease& operator=(lease&& other) noexcept;

    explicit operator bool() const noexcept { return impl_ != nullptr; }

    /// The client's executor; a default-constructed (empty) executor for an empty lease.
    executor_type get_executor() const noexcept;

    const std::vector<std::string>& keys() const noexcept;
    /// The random value stored in the keys: 128 bits from the OS CSPRNG, hex.
    const std::string& token() const noexcept;
    /// With lock_options::fencing: a number above every fencing token of this lock issued before the lock call
    /// began, and unlike any other holder's (DESIGN.md, "Fencing tokens"; doc/fencing.md). Pass it to the
    /// resource with each write; the resource refuses a token below the highest it has seen (fenced_write).
    /// 0 without fencing. It stays the same across extensions.
    std::uint64_t fencing_token() const noexcept;
    /// Local deadline of the lease (steady clock): start of the last successful grant + ttl - drift.
    std::chrono::steady_clock::time_point valid_until() const noexcept;
    /// Time left until valid_until(); zero when past.
    std::chrono::milliseconds validity() const noexcept;
    /// True once the lease ran out without a successful extension, or an extension found another owner.
    bool lost() const noexcept;

    /// Extends the lease on all nodes where it still holds our token, with the ttl counted from the extension's
    /// own start; succeeds on a quorum only. The extension itself never re-creates a key (someone else may hold
    /// the lock by now); once it reached a quorum, a separate repair step takes the keys back on nodes that lost
    /// them and nobody else holds (doc/locks.md). Errors: error::lost (already lost, the extension completed
    /// after the validity ended, or our keys are missing on so many nodes that no quorum can be ours),
    /// not_owner (released, or other owners on so many nodes: the lease is then lost), no_quorum (too few
    /// nodes answered; the lease stays held until its validity ends). `diag.nodes()` tells what each node said.
    /// Signature: void(error_code). Cancellation: terminal (the extension requests are still sent).
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_extend(diagnostics& diag, Token&& token = {})
    {
        return initiate(&detail::start_extend, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_extend(Token&& token = {})
    {
        return initiate(&detail::start_extend, nullptr, std::forward<Token>(token));
    }

    /// Releases on all N nodes and stops the watchdog; completes once every node answered or hit its deadline
    /// (so a process may exit right after). Idempotent: a second release succeeds at once. Errors: error::lost
    /// (the lease had been lost: the protection ended early; `diag` says why), not_owner (other owners hold a
    /// quorum), no_quorum (too few nodes answered; the TTL cleans up).
    /// Signature: void(error_code). Cancellation: terminal (the release requests are still sent).
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_release(diagnostics& diag, Token&& token = {})
    {
        return initiate(&detail::start_release, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_release(Token&& token = {})
    {
        return initiate(&detail::start_release, nullptr, std::forward<Token>(token));
    }

    /// Completes with error::lost when the lease is lost (`diag` says why: the extensions that failed, or
    /// the validity that ran out), or operation_aborted when it is released first.
    /// Signature: void(error_code). Cancellation: terminal.
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_wait_lost(diagnostics& diag, Token&& token = {})
    {
        return initiate(&detail::start_wait_lost, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_wait_lost(Token&& token = {})
    {
        return initiate(&detail::start_wait_lost, nullptr, std::forward<Token>(token));
    }

private:
    friend struct detail::access;
    explicit lease(std::shared_ptr<detail::lease_state> state) noexcept;

    using start_fn = void (*)(const std::shared_ptr<detail::lease_state>&, diagnostics*, detail::lease_handler);
    template <class Token>
    auto initiate(start_fn start, diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [s = impl_, start, diag](auto handler) { start(s, diag, std::move(handler)); }, token);
    }

    std::shared_ptr<detail::lease_state> impl_;
};

}  // namespace redlock
