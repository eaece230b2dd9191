// A distributed mutex over the client's nodes: one key, or several keys taken together (all or none).
#pragma once

#include <redlock/client.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/lease.hpp>
#include <redlock/lock_options.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <string>
#include <vector>

namespace redlock {

namespace detail {
using lock_handler = boost::asio::any_completion_handler<void(error_code, lease)>;
void start_lock(const std::shared_ptr<client_impl>& client, std::vector<std::string> keys, lock_options options,
                bool one_attempt, diagnostics* diag, lock_handler handler);
}  // namespace detail

class mutex {
public:
    /// The key is the lock's name exactly (its value is the token), as redis-py, node-redlock and redsync do.
    /// No I/O; bad keys or options are reported by the first lock call (invalid_argument).
    mutex(const client& c, std::string key, lock_options options = {});
    /// Several keys, taken atomically on each node (all or none). On a Redis Cluster they need one hash tag.
    mutex(const client& c, std::vector<std::string> keys, lock_options options = {});

    const std::vector<std::string>& keys() const noexcept { return keys_; }
    const lock_options& options() const noexcept { return options_; }

    /// Acquires the lock, retrying with jittered delays until options().wait runs out:
    /// sends the request to all N nodes at once, each with its own deadline; decides as soon as Q granted or
    /// too many refused or failed; acquired when Q granted with validity = ttl - elapsed - drift above
    /// min_validity. A failed attempt releases on all N nodes. Errors: error::not_acquired (held by another
    /// owner), no_quorum (too few nodes answered), timeout (quorum reached but too late), invalid_argument (bad
    /// keys or options, before any I/O); `diag.nodes()` says what each node answered in the last attempt.
    /// Signature: void(error_code, lease). Cancellation: terminal, partial and total; completes promptly and
    /// releases any node that may have granted.
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_lock(diagnostics& diag, Token&& token = {})
    {
        return initiate(options_, false, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_lock(Token&& token = {})
    {
        return initiate(options_, false, nullptr, std::forward<Token>(token));
    }
    /// As async_lock, with other options for this call (with_lock uses it to turn the watchdog on).
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_lock(const lock_options& options, diagnostics& diag, Token&& token = {})
    {
        return initiate(options, false, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_lock(const lock_options& options, Token&& token = {})
    {
        return initiate(options, false, nullptr, std::forward<Token>(token));
    }
    /// One attempt: error::not_acquired at once if another owner holds it.
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_try_lock(diagnostics& diag, Token&& token = {})
    {
        return initiate(options_, true, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_try_lock(Token&& token = {})
    {
        return initiate(options_, true, nullptr, std::forward<Token>(token));
    }

private:
    template <class Token>
    auto initiate(const lock_options& options, bool one_attempt, diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, lease)>(
            [client = impl_, keys = keys_, options, one_attempt, diag](auto handler) {
                detail::start_lock(client, keys, options, one_attempt, diag, std::move(handler));
            },
            token);
    }

    std::shared_ptr<detail::client_impl> impl_;
    std::vector<std::string> keys_;
    lock_options options_;
};

}  // namespace redlock
