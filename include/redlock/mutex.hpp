// A distributed mutex over the client's nodes: one key, or several keys taken together (all or none).
#pragma once

#include <redlock/client.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/lease.hpp>
#include <redlock/lock_inspection.hpp>
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
                std::string owner, bool one_attempt, diagnostics* diag, lock_handler handler);
void start_inspect(const std::shared_ptr<client_impl>& impl, std::string key, diagnostics* diag,
                   boost::asio::any_completion_handler<void(error_code, lock_inspection)> handler);
}  // namespace detail

/// A distributed lock over a client's nodes: a key (or several) and options. A cheap handle that holds nothing on
/// the nodes: each lock call is a new owner with a fresh token, so the lock is not reentrant (see owned_by). It
/// keeps the client's state alive. Every member may be called from any thread.
class mutex {
public:
    /// The key is the lock's name exactly (its value is the token), as redis-py, node-redlock and redsync do.
    /// No I/O; bad keys or options are reported by the first lock call (invalid_argument).
    mutex(const client& c, std::string key, lock_options options = {});
    /// Several keys, taken atomically on each node (all or none). On a Redis Cluster they need one hash tag.
    mutex(const client& c, std::vector<std::string> keys, lock_options options = {});

    const std::vector<std::string>& keys() const noexcept { return keys_; }
    const lock_options& options() const noexcept { return options_; }
    /// The same lock, with other options for the calls made through the copy (with_lock turns the watchdog on
    /// with it).
    mutex with_options(const lock_options& options) const
    {
        mutex m(*this);
        m.options_ = options;
        return m;
    }

    /// The same lock, reentrant for `owner`: a request or task id that the caller names (never a thread id: a
    /// coroutine moves between threads). While the owner holds the lock it takes it again at once; each hold is
    /// a lease of its own (its token is the hold's id) with one fencing token for all of them; the lock is free
    /// when every hold is released or has expired. Another owner's holds are refused, and a hold whose lock
    /// another owner took changes nothing and says not_owner. One key; not with lock_options::fair.
    mutex owned_by(std::string owner) const
    {
        mutex m(*this);
        m.owner_ = std::move(owner);
        return m;
    }
    /// The owner of a reentrant lock, or empty.
    const std::string& owner() const noexcept { return owner_; }

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
        return initiate(false, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_lock(Token&& token = {})
    {
        return initiate(false, nullptr, std::forward<Token>(token));
    }
    /// One attempt: error::not_acquired at once if another owner holds it.
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_try_lock(diagnostics& diag, Token&& token = {})
    {
        return initiate(true, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_try_lock(Token&& token = {})
    {
        return initiate(true, nullptr, std::forward<Token>(token));
    }

    /// Reads the lock's key (a lock of several keys: its first) on every node, changing nothing: per node the
    /// holder's token (or a reentrant lock's owner), the remaining TTL and the fencing counter, or why the node
    /// could not be read. Waits for every node (each bounded by its connect timeout and request deadline). Succeeds
    /// when a quorum answered; error::no_quorum otherwise (the views of the nodes that answered are still filled
    /// in); invalid_argument for an empty key. Plain reads, no script: a read-only ACL user may inspect.
    /// Signature: void(error_code, lock_inspection). Cancellation: terminal.
    template <boost::asio::completion_token_for<void(error_code, lock_inspection)> Token = boost::asio::deferred_t>
    auto async_inspect(diagnostics& diag, Token&& token = {}) const
    {
        return initiate_inspect(&diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lock_inspection)> Token = boost::asio::deferred_t>
    auto async_inspect(Token&& token = {}) const
    {
        return initiate_inspect(nullptr, std::forward<Token>(token));
    }

private:
    template <class Token>
    auto initiate_inspect(diagnostics* diag, Token&& token) const
    {
        return boost::asio::async_initiate<Token, void(error_code, lock_inspection)>(
            [client = impl_, key = keys_.empty() ? std::string() : keys_.front(), diag](auto handler) {
                detail::start_inspect(client, key, diag, std::move(handler));
            },
            token);
    }
    template <class Token>
    auto initiate(bool one_attempt, diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, lease)>(
            [client = impl_, keys = keys_, options = options_, owner = owner_, one_attempt, diag](auto handler) {
                detail::start_lock(client, keys, options, owner, one_attempt, diag, std::move(handler));
            },
            token);
    }

    std::shared_ptr<detail::client_impl> impl_;
    std::vector<std::string> keys_;
    lock_options options_;
    std::string owner_;
};

}  // namespace redlock
