// A rate limiter on one Redis deployment (a redlock::redis): one script call per decision, on the server's clock.
#pragma once

#include <redlock/diagnostics.hpp>
#include <redlock/rate_decision.hpp>
#include <redlock/rate_limit.hpp>
#include <redlock/redis.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace redlock {

namespace detail {
using rate_handler = boost::asio::any_completion_handler<void(error_code, rate_decision)>;
void start_rate_acquire(const std::shared_ptr<redis_impl>& store, std::string key, rate_limit limit, std::int64_t cost,
                        bool wait, diagnostics* diag, rate_handler handler);
}  // namespace detail

/// Limits the calls of one subject (`key`: a user, an API token, a job name) across every process that uses the
/// same key and limit. Each decision is one script call on the deployment, timed by the server's own clock (TIME):
/// clients' clocks never count. It takes one Redis deployment (a `redis`), never a Redlock `client`: over N
/// independent nodes no rule is both sound and available (doc/rate-limiting.md, "Over N nodes"). A Redis Cluster
/// (or Sentinel) deployment is one `redis`: the key lives on its slot's master.
///
/// Keys (each with a TTL, gone once the limiter is idle for a period): GCRA `key` (a timestamp); fixed window
/// `key` (a counter); sliding window `key` (a sorted set) and `{key}:total` (or `key:total` when the key has a
/// hash tag). Give one key one limit: calls with other limits on the same key read its state their own way.
class rate_limiter {
public:
    /// No I/O; bad arguments are reported by the first call (invalid_argument). The limiter shares the deployment
    /// (`store` need not outlive it).
    rate_limiter(const redis& store, std::string key, rate_limit limit);

    const std::string& key() const noexcept { return key_; }
    const rate_limit& limit() const noexcept { return limit_; }

    /// One decision, at once: admitted (and `cost` units taken) or not. Being limited is not an error: the
    /// decision says so (result, retry_after). Errors: invalid_argument (before any I/O: a bad limit, cost <= 0,
    /// an empty key; `diag.client_message()` says which), or the deployment's failure (timeout, not_connected,
    /// connection_lost, server_error with its text in `diag`, protocol_error for a reply that is not a decision);
    /// the decision is then empty. A call that failed after it was sent may still have
    /// been admitted: its units are then lost, never given twice.
    /// Signature: void(error_code, rate_decision). Cancellation: terminal and partial (a call the server already
    /// ran stays counted). Lifetime: `diag` must outlive the operation; the limiter need not.
    template <boost::asio::completion_token_for<void(error_code, rate_decision)> Token = boost::asio::deferred_t>
    auto async_try_acquire(std::int64_t cost, diagnostics& diag, Token&& token = {})
    {
        return initiate(cost, false, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, rate_decision)> Token = boost::asio::deferred_t>
    auto async_try_acquire(std::int64_t cost, Token&& token = {})
    {
        return initiate(cost, false, nullptr, std::forward<Token>(token));
    }

    /// Waits until `cost` units are admitted: asks, and while limited sleeps the decision's retry_after (no
    /// polling) and asks again, until limit().wait runs out. Completes with the admitting decision; or
    /// error::rate_limited once the wait cannot cover the next retry_after (the decision is the last refusal:
    /// its retry_after says when to come back); invalid_argument as async_try_acquire, and also for a cost above
    /// the limit (burst + 1, or the window's rate), which no wait can admit; the deployment's failure once the wait ran
    /// out (failed calls are retried every 100 ms until then). Waiters are not queued: a cost-1 caller may pass a
    /// waiting cost-10 caller again and again.
    /// Signature: void(error_code, rate_decision). Cancellation: terminal and partial, promptly, also while it
    /// sleeps. Lifetime: `diag` must outlive the operation; the limiter need not.
    template <boost::asio::completion_token_for<void(error_code, rate_decision)> Token = boost::asio::deferred_t>
    auto async_acquire(std::int64_t cost, diagnostics& diag, Token&& token = {})
    {
        return initiate(cost, true, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, rate_decision)> Token = boost::asio::deferred_t>
    auto async_acquire(std::int64_t cost, Token&& token = {})
    {
        return initiate(cost, true, nullptr, std::forward<Token>(token));
    }

private:
    template <class Token>
    auto initiate(std::int64_t cost, bool wait, diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, rate_decision)>(
            [store = impl_, key = key_, limit = limit_, cost, wait, diag](auto handler) {
                detail::start_rate_acquire(store, key, limit, cost, wait, diag, std::move(handler));
            },
            token);
    }

    std::shared_ptr<detail::redis_impl> impl_;
    std::string key_;
    rate_limit limit_;
};

}  // namespace redlock
