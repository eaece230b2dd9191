// A distributed read-write lock over the client's nodes: many readers at once, or one writer alone; writers first.
#pragma once

#include <redlock/client.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/lease.hpp>
#include <redlock/lock_options.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <string>

namespace redlock {

namespace detail {
using side_handler = boost::asio::any_completion_handler<void(error_code, lease)>;
void start_lock_side(const std::shared_ptr<client_impl>& client, std::string key, lock_options options, bool shared,
                     bool one_attempt, diagnostics* diag, side_handler handler);
void start_convert(const std::shared_ptr<client_impl>& client, std::string key, lock_options options, lease held,
                   bool to_write, diagnostics* diag, side_handler handler);
}  // namespace detail

/// A distributed read-write lock over a client's nodes (doc/locks.md, "Read-write lock"): the shared (read) side is
/// held by many owners at once, each with a lease of its own that expires on its own; the exclusive (write) side by
/// one owner, alone. Writer-preferring: once a writer waits, readers that come after it wait behind it (a writer that
/// dies while waiting stops blocking them within lock_options::waiter_ttl). Each side needs a quorum of nodes. A
/// cheap handle that holds nothing on the nodes and keeps the client's state alive; every lock call is a new owner
/// with a fresh token. Every member may be called from any thread.
///
/// The write side's key is the plain lock's (the name, holding the writer's token), so any plain lock of the same
/// name (a mutex, plain, fair or reentrant; another library's) is a writer too: it excludes readers and writers and
/// they exclude it, but it does not mark its wait, so readers may keep it waiting. (`redlock exec` waits as this
/// lock's writer once it finds readers holding.)
class shared_mutex {
public:
    /// `key` is the lock's name; its other keys share its hash slot. No I/O; a bad key or option is reported by the
    /// first call (invalid_argument). lock_options::fencing gives writers fencing tokens (readers get none);
    /// waiter_ttl is a waiting writer's heartbeat lifetime; fair is refused.
    shared_mutex(const client& c, std::string key, lock_options options = {});

    const std::string& key() const noexcept { return key_; }
    const lock_options& options() const noexcept { return options_; }
    /// The same lock, with other options for the calls made through the copy.
    shared_mutex with_options(const lock_options& options) const
    {
        shared_mutex m(*this);
        m.options_ = options;
        return m;
    }

    /// Takes the write side: waits until no reader and no other writer holds it, marking its wait on the nodes so
    /// that readers who come later wait behind it (each attempt renews the mark: at most waiter_ttl / 3 apart).
    /// Granted on a quorum, with validity and fencing as mutex::async_lock. Errors as mutex::async_lock.
    /// Signature: void(error_code, lease). Cancellation: terminal, partial and total; completes promptly, gives back
    /// anything a node may have granted and takes the mark away.
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_lock(diagnostics& diag, Token&& token = {})
    {
        return initiate(false, false, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_lock(Token&& token = {})
    {
        return initiate(false, false, nullptr, std::forward<Token>(token));
    }
    /// One attempt at the write side, leaving no mark: error::not_acquired at once if anyone holds it.
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_try_lock(diagnostics& diag, Token&& token = {})
    {
        return initiate(false, true, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_try_lock(Token&& token = {})
    {
        return initiate(false, true, nullptr, std::forward<Token>(token));
    }

    /// Takes the read side: waits while a writer holds it or waits for it. The lease is this reader's own (its own
    /// expiry on each node, extended by its own watchdog); a reader that dies frees its share when its own TTL runs
    /// out. No fencing token (0). Signature, errors and cancellation as async_lock.
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_lock_shared(diagnostics& diag, Token&& token = {})
    {
        return initiate(true, false, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_lock_shared(Token&& token = {})
    {
        return initiate(true, false, nullptr, std::forward<Token>(token));
    }
    /// One attempt at the read side: error::not_acquired at once if a writer holds it or waits for it.
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_try_lock_shared(diagnostics& diag, Token&& token = {})
    {
        return initiate(true, true, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_try_lock_shared(Token&& token = {})
    {
        return initiate(true, true, nullptr, std::forward<Token>(token));
    }

    /// Turns a write lease of this lock into a read lease, letting no writer in between: on each node the write key
    /// becomes the reader's entry in one step (waiting writers' marks do not hold a downgrade back). The read lease
    /// keeps the token, with validity counted from the downgrade (ttl - elapsed - drift) and no fencing token; the
    /// watchdog as this handle's options say. One attempt. If it does not reach a quorum in time, both sides are
    /// released everywhere and the lease completed is empty: the lock is not held any more.
    /// Errors: invalid_argument (an empty lease, a read lease, a lease of another lock or kind), lost (the write
    /// lease was lost, or released), and those of an attempt (no_quorum, not_acquired: the key was lost on too many
    /// nodes, timeout). Signature: void(error_code, lease). Cancellation: none (one attempt, bounded by the node
    /// timeout).
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_downgrade(lease write, diagnostics& diag, Token&& token = {})
    {
        return initiate_convert(std::move(write), false, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_downgrade(lease write, Token&& token = {})
    {
        return initiate_convert(std::move(write), false, nullptr, std::forward<Token>(token));
    }

    /// Tries once to turn a read lease of this lock into a write lease: granted only where the caller is the only
    /// reader and no writer holds the name, on a quorum; never waits (two readers waiting to upgrade would wait for
    /// each other). Waiting writers' marks do not hold it back. The write lease keeps the token; validity from the
    /// upgrade, a fencing token with lock_options::fencing. On failure the read lease is given back, held as before,
    /// with the error: the lease completed is always the one the caller holds afterwards.
    /// Errors: not_acquired (other readers hold it; the read lease comes back), invalid_argument (an empty lease, a
    /// write lease, a lease of another lock or kind), lost (the read lease was lost, or released: nothing comes
    /// back), no_quorum and timeout (the read lease comes back). Signature: void(error_code, lease). Cancellation:
    /// none (one attempt, bounded by the node timeout).
    /// With a token that throws on an error (use_awaitable, use_future), a refusal throws the read lease away with
    /// its completion: it is released in the background. Keep it with as_tuple:
    /// `auto [ec, held] = co_await m.async_try_upgrade(std::move(read), as_tuple(use_awaitable));`
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_try_upgrade(lease read, diagnostics& diag, Token&& token = {})
    {
        return initiate_convert(std::move(read), true, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, lease)> Token = boost::asio::deferred_t>
    auto async_try_upgrade(lease read, Token&& token = {})
    {
        return initiate_convert(std::move(read), true, nullptr, std::forward<Token>(token));
    }

private:
    template <class Token>
    auto initiate(bool shared, bool one_attempt, diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, lease)>(
            [client = impl_, key = key_, options = options_, shared, one_attempt, diag](auto handler) {
                detail::start_lock_side(client, key, options, shared, one_attempt, diag, std::move(handler));
            },
            token);
    }
    template <class Token>
    auto initiate_convert(lease held, bool to_write, diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, lease)>(
            [client = impl_, key = key_, options = options_, to_write, diag](auto handler, lease held) {
                detail::start_convert(client, key, options, std::move(held), to_write, diag, std::move(handler));
            },
            token, std::move(held));
    }

    std::shared_ptr<detail::client_impl> impl_;
    std::string key_;
    lock_options options_;
};

}  // namespace redlock
