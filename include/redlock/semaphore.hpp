// A distributed counting semaphore over the client's nodes: up to `limit` permits held at once, each an expiring
// lease; optionally fair (FIFO) across processes. doc/semaphores.md.
#pragma once

#include <redlock/client.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/permit.hpp>
#include <redlock/semaphore_inspection.hpp>
#include <redlock/semaphore_options.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <cstdint>
#include <string>

namespace redlock {

namespace detail {
using permit_handler = boost::asio::any_completion_handler<void(error_code, permit)>;
void start_acquire(const std::shared_ptr<client_impl>& client, std::string name, std::int64_t limit,
                   std::int64_t permits, semaphore_options options, bool one_attempt, diagnostics* diag,
                   permit_handler handler);
void start_set_limit(const std::shared_ptr<client_impl>& client, std::string name, std::int64_t limit,
                     semaphore_options options, diagnostics* diag,
                     boost::asio::any_completion_handler<void(error_code)> handler);
void start_inspect_semaphore(const std::shared_ptr<client_impl>& client, std::string name, std::int64_t limit,
                             diagnostics* diag,
                             boost::asio::any_completion_handler<void(error_code, semaphore_inspection)> handler);
}  // namespace detail

/// A counting semaphore over a client's nodes: up to limit() permits held at once across every process that names
/// it, each permit an expiring lease. A cheap handle that holds nothing on the nodes and keeps the client's state
/// alive. Every member may be called from any thread.
class semaphore {
public:
    /// The largest limit accepted. A permit of any number of units is one member on each node: n costs nothing.
    static constexpr std::int64_t max_limit = 1'000'000;

    /// `name` is the key of the semaphore's sorted set of permits on each node (its other keys share its hash
    /// slot). `limit` is the number of permits; the nodes keep it (a node that has none takes this one at the next
    /// acquire), and async_set_limit changes it there for every user. No I/O; a bad name, limit or option is
    /// reported by the first operation (invalid_argument).
    semaphore(const client& c, std::string name, std::int64_t limit, semaphore_options options = {});

    const std::string& name() const noexcept { return name_; }
    std::int64_t limit() const noexcept { return limit_; }
    const semaphore_options& options() const noexcept { return options_; }
    /// The same semaphore, with other options for the calls made through the copy (with_permit turns the
    /// watchdog on with it).
    semaphore with_options(const semaphore_options& options) const
    {
        semaphore s(*this);
        s.options_ = options;
        return s;
    }
    /// Q = floor(N * limit / (limit + 1)) + 1: the node grants one permit needs. Fewer would let limit + 1
    /// holders each hold that many nodes while no node counts more than `limit` (doc/semaphores.md). Q reaches N
    /// once limit >= N - 1. When the nodes store another limit, each acquire uses the quorum of the largest one
    /// they report.
    std::size_t quorum() const noexcept;
    /// N - Q: how many nodes may be down while permits are still granted; 0 once limit >= N - 1.
    std::size_t failures_tolerated() const noexcept;

    /// Takes `permits` permits (default 1) under one id, waiting until options().wait runs out: sends the acquire
    /// to all N nodes at once; granted when Q nodes admitted it with validity = ttl - elapsed - drift above
    /// min_validity; each node admits when the permits held there (expired ones dropped, by its own clock) plus
    /// these fit its limit. A failed attempt gives back what it got. Waiters sleep until a release message (one
    /// per permit freed) or until enough permits expire, never on a fixed poll. Errors: not_acquired (no room
    /// when the wait ran out), exceeds_limit (at once, without waiting: `permits` is above the limit the nodes
    /// store, which a set_limit or another process made smaller than this handle's; too many nodes refused for it
    /// for a quorum to grant; `diag.client_message()` gives the stored limit; a fair waiter leaves the queue),
    /// no_quorum, timeout (granted too late), invalid_argument (before any I/O: an empty name, a limit outside
    /// [1, max_limit], permits outside [1, limit], fencing, bad options); `diag.nodes()` tells what each node
    /// answered in the last attempt.
    /// Signature: void(error_code, permit). Cancellation: terminal, partial and total; completes promptly and
    /// gives back anything a node may have granted.
    template <boost::asio::completion_token_for<void(error_code, permit)> Token = boost::asio::deferred_t>
    auto async_acquire(std::int64_t permits, diagnostics& diag, Token&& token = {})
    {
        return initiate_acquire(permits, false, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, permit)> Token = boost::asio::deferred_t>
    auto async_acquire(std::int64_t permits, Token&& token = {})
    {
        return initiate_acquire(permits, false, nullptr, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, permit)> Token = boost::asio::deferred_t>
    auto async_acquire(Token&& token = {})
    {
        return initiate_acquire(1, false, nullptr, std::forward<Token>(token));
    }
    /// One attempt: error::not_acquired at once when there is no room (exceeds_limit when `permits` is above the
    /// stored limit).
    template <boost::asio::completion_token_for<void(error_code, permit)> Token = boost::asio::deferred_t>
    auto async_try_acquire(std::int64_t permits, diagnostics& diag, Token&& token = {})
    {
        return initiate_acquire(permits, true, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, permit)> Token = boost::asio::deferred_t>
    auto async_try_acquire(std::int64_t permits, Token&& token = {})
    {
        return initiate_acquire(permits, true, nullptr, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, permit)> Token = boost::asio::deferred_t>
    auto async_try_acquire(Token&& token = {})
    {
        return initiate_acquire(1, true, nullptr, std::forward<Token>(token));
    }

    /// Sets the limit on every node, for every user of the semaphore. A larger limit wakes the waiters at once; a
    /// smaller one never revokes permits held (new ones are granted once the holders fit under it), and wakes the
    /// waiters too: one that asks for more than it fails at once (error::exceeds_limit). The nodes
    /// keep it as long as the semaphore is in use (its keys expire when idle; then the next acquire sets the limit
    /// it names: change the limit your code passes too). Succeeds only when every node applied it (its quorum is
    /// N): error::no_quorum otherwise, and `diag.nodes()` names the nodes that did not (they keep their limit;
    /// call again). invalid_argument for a limit outside [1, max_limit].
    /// Signature: void(error_code). Cancellation: terminal (the requests are still sent).
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_set_limit(std::int64_t limit, diagnostics& diag, Token&& token = {})
    {
        return initiate_set_limit(limit, &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_set_limit(std::int64_t limit, Token&& token = {})
    {
        return initiate_set_limit(limit, nullptr, std::forward<Token>(token));
    }

    /// Reads the semaphore on every node, changing nothing: per node its limit, the live permits (ids, counts,
    /// remaining TTL) and the fair queue's length, or why it could not be read. Waits for every node. Succeeds
    /// when a quorum answered, else error::no_quorum (the nodes that answered are filled in).
    /// Signature: void(error_code, semaphore_inspection). Cancellation: terminal.
    template <boost::asio::completion_token_for<void(error_code, semaphore_inspection)> Token = boost::asio::deferred_t>
    auto async_inspect(diagnostics& diag, Token&& token = {})
    {
        return initiate_inspect(&diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, semaphore_inspection)> Token = boost::asio::deferred_t>
    auto async_inspect(Token&& token = {})
    {
        return initiate_inspect(nullptr, std::forward<Token>(token));
    }

private:
    template <class Token>
    auto initiate_acquire(std::int64_t permits, bool one_attempt, diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, permit)>(
            [client = impl_, name = name_, limit = limit_, options = options_, permits, one_attempt,
             diag](auto handler) {
                detail::start_acquire(client, name, limit, permits, options, one_attempt, diag, std::move(handler));
            },
            token);
    }
    template <class Token>
    auto initiate_set_limit(std::int64_t limit, diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [client = impl_, name = name_, limit, options = options_, diag](auto handler) {
                detail::start_set_limit(client, name, limit, options, diag, std::move(handler));
            },
            token);
    }
    template <class Token>
    auto initiate_inspect(diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, semaphore_inspection)>(
            [client = impl_, name = name_, limit = limit_, diag](auto handler) {
                detail::start_inspect_semaphore(client, name, limit, diag, std::move(handler));
            },
            token);
    }

    std::shared_ptr<detail::client_impl> impl_;
    std::string name_;
    std::int64_t limit_;
    semaphore_options options_;
    std::size_t nodes_;
};

}  // namespace redlock
