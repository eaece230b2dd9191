// Leader election over the client's nodes: campaign (wait until leader), proclaim a value, resign, ask who leads,
// and observe every change of leader by message. A leadership is a fenced lease; its term is the fencing token.
#pragma once

#include <redlock/client.hpp>
#include <redlock/detail/access.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/lease.hpp>
#include <redlock/lock_options.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace redlock {

/// Who leads an election, as a quorum of nodes says.
struct leader_info {
    /// The leader's lease token: what the election key holds on a quorum of nodes.
    std::string token;
    /// The leadership's fencing token: above every earlier leader's term (over N nodes, unlike any other's), the same
    /// for the whole leadership. Hand it to the resource with each write (fenced_write), which then refuses a deposed
    /// leader's late writes.
    std::uint64_t term = 0;
    /// The value the leader proclaimed last (its proposal when elected).
    std::string value;
    /// 1 for the proposal the leader was elected with, one more for each proclaim.
    std::uint64_t revision = 0;

    friend bool operator==(const leader_info&, const leader_info&) = default;
};

class leadership;
class election_observer;

namespace detail {
class leadership_state;
class observer_state;
using campaign_handler = boost::asio::any_completion_handler<void(error_code, leadership)>;
using leader_handler = boost::asio::any_completion_handler<void(error_code, std::optional<leader_info>)>;
using leadership_handler = boost::asio::any_completion_handler<void(error_code)>;
void start_campaign(const std::shared_ptr<client_impl>& client, std::string name, lock_options options,
                    std::string proposal, diagnostics* diag, campaign_handler handler);
void start_read_leader(const std::shared_ptr<client_impl>& client, std::string name, diagnostics* diag,
                       leader_handler handler);
void start_proclaim(const std::shared_ptr<leadership_state>& state, std::string value, diagnostics* diag,
                    leadership_handler handler);
void start_resign(const std::shared_ptr<leadership_state>& state, diagnostics* diag, leadership_handler handler);
void start_next_leader(const std::shared_ptr<observer_state>& state, diagnostics* diag, leader_handler handler);
std::shared_ptr<observer_state> make_observer(const std::shared_ptr<client_impl>& client, std::string name,
                                              lock_options options);
}  // namespace detail

/// One term of leadership: the lease on the election key (its watchdog on, a fencing token its term) and the value
/// the leader proclaims. Move-only. An empty leadership (default-constructed, moved from, or from a failed campaign)
/// holds nothing: proclaim says not_owner, resign succeeds, wait_lost says operation_aborted, all at once.
/// Destroying a leadership that is still held resigns in the background (observers hear it by message); keep the
/// io_context running so the release reaches the nodes (the TTL is the safety net). Members may be called from any
/// thread.
class leadership {
public:
    /// The client's executor (lease::executor_type).
    using executor_type = redlock::lease::executor_type;

    leadership() = default;
    ~leadership();
    leadership(leadership&&) noexcept = default;
    leadership& operator=(leadership&& other) noexcept;

    explicit operator bool() const noexcept { return impl_ != nullptr; }
    /// The client's executor; an empty executor for an empty leadership.
    executor_type get_executor() const noexcept;

    /// The election's name (the key the leader holds).
    const std::string& name() const noexcept;
    /// The fencing token of this leadership (leader_info::term); 0 when empty.
    std::uint64_t term() const noexcept;
    /// The lease token the election key holds while this leadership lasts.
    const std::string& token() const noexcept;
    /// The value proclaimed last on a quorum of nodes (the proposal, until a proclaim succeeds).
    std::string value() const;
    /// The revision of value(), the last value proclaimed successfully: 1 for the proposal. Every proclaim, failed ones
    /// included, takes the next number, so after a failed proclaim it may grow by more than one.
    std::uint64_t revision() const noexcept;
    /// Local deadline (steady clock) and time left of the lease; the watchdog keeps moving it on.
    std::chrono::steady_clock::time_point valid_until() const noexcept;
    std::chrono::milliseconds validity() const noexcept;
    /// True once the lease was lost (the watchdog could not extend it in time, or found the key taken): this process
    /// is not the leader any more, whatever it was doing.
    bool lost() const noexcept;
    /// The lease underneath, for code that works with any lease.
    const redlock::lease& lease() const noexcept;

    /// Changes the leader's value: on each node where the election key still holds this leadership's token, writes
    /// token, term, value and the next revision into the leader hash and publishes on the elected channel (observers
    /// read again at once). Succeeds once a quorum wrote it while the lease holds. Errors: not_owner (too many nodes
    /// say the key holds another token or none: the leadership is gone; also after async_resign), lost (the lease was
    /// lost),
    /// no_quorum (too few answered). On failure some nodes may hold the new value (readers take the highest revision
    /// they see of the current token): proclaim again to settle it. Signature: void(error_code). Cancellation:
    /// terminal (the requests are still sent).
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_proclaim(std::string value, diagnostics& diag, Token&& token = {}) const
    {
        return initiate_proclaim(std::move(value), &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_proclaim(std::string value, Token&& token = {}) const
    {
        return initiate_proclaim(std::move(value), nullptr, std::forward<Token>(token));
    }

    /// Gives the leadership up: releases the lease on every node (its release message wakes the next candidate and
    /// every observer). Errors and cancellation as lease::async_release; idempotent. Signature: void(error_code).
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_resign(diagnostics& diag, Token&& token = {}) const
    {
        return initiate_resign(&diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_resign(Token&& token = {}) const
    {
        return initiate_resign(nullptr, std::forward<Token>(token));
    }

    /// Completes with error::lost when the leadership is lost (at the latest at the lease's local validity
    /// deadline), or operation_aborted when it is resigned first. Signature: void(error_code). Cancellation: terminal.
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_wait_lost(diagnostics& diag, Token&& token = {}) const
    {
        return lease_handle().async_wait_lost(diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code)> Token = boost::asio::deferred_t>
    auto async_wait_lost(Token&& token = {}) const
    {
        return lease_handle().async_wait_lost(std::forward<Token>(token));
    }

private:
    friend struct detail::access;
    explicit leadership(std::shared_ptr<detail::leadership_state> state) noexcept;
    // The lease's operations are not const (they start I/O on shared state); a leadership's are.
    redlock::lease& lease_handle() const noexcept;

    template <class Token>
    auto initiate_proclaim(std::string value, diagnostics* diag, Token&& token) const
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [state = impl_, diag](auto handler, std::string v) {
                detail::start_proclaim(state, std::move(v), diag, std::move(handler));
            },
            token, std::move(value));
    }
    template <class Token>
    auto initiate_resign(diagnostics* diag, Token&& token) const
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [state = impl_, diag](auto handler) { detail::start_resign(state, diag, std::move(handler)); }, token);
    }

    std::shared_ptr<detail::leadership_state> impl_;
};

/// A stream of an election's leaders, read one change at a time with async_next. Move-only; destroying it stops
/// listening (the channel subscriptions linger a moment for other users of the client).
///
/// Each change comes by message: a new leader proclaims (its first value) on the elected channel, a proclaim
/// publishes there too, and a resignation publishes on the release channel. A leader whose process died publishes
/// nothing: the observer sees it gone when its key expires on so many nodes that no quorum holds it (a deadline from
/// the TTLs it read, not a poll). Changes are read from the nodes, so two changes closer together than a read may
/// arrive as one (the later); an older state never follows a newer one (terms only grow, and so do the revisions of
/// one term).
class election_observer {
public:
    election_observer() = default;
    ~election_observer();
    election_observer(election_observer&&) noexcept = default;
    election_observer& operator=(election_observer&& other) noexcept;

    explicit operator bool() const noexcept { return impl_ != nullptr; }

    /// The first call completes with who leads now (nullopt: nobody); each later call with the next change: another
    /// leader, a new value of the same leader, or nobody. Once a state was delivered, a read that finds no quorum of
    /// nodes is retried (at most a second apart), not reported: a node outage is not a change (`diag` says what the
    /// last read saw). Before that, a call whose read finds no quorum completes with no_quorum (at the latest after the
    /// client's connect timeout, which the first read waits for), and the next call reads again after a pause (100 ms,
    /// doubling up to a second): nothing waits in silence for nodes that cannot be reached. One call at a time (a
    /// second while one runs: invalid_argument). Signature: void(error_code, std::optional<leader_info>). Cancellation:
    /// terminal; the observer stays usable.
    template <
        boost::asio::completion_token_for<void(error_code, std::optional<leader_info>)> Token = boost::asio::deferred_t>
    auto async_next(diagnostics& diag, Token&& token = {})
    {
        return initiate_next(&diag, std::forward<Token>(token));
    }
    template <
        boost::asio::completion_token_for<void(error_code, std::optional<leader_info>)> Token = boost::asio::deferred_t>
    auto async_next(Token&& token = {})
    {
        return initiate_next(nullptr, std::forward<Token>(token));
    }

private:
    friend class election;
    explicit election_observer(std::shared_ptr<detail::observer_state> state) noexcept : impl_(std::move(state)) {}

    template <class Token>
    auto initiate_next(diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, std::optional<leader_info>)>(
            [state = impl_, diag](auto handler) { detail::start_next_leader(state, diag, std::move(handler)); }, token);
    }

    std::shared_ptr<detail::observer_state> impl_;
};

/// A leader election over a client's nodes (doc/election.md), as etcd's concurrency.Election: candidates campaign
/// with a proposal value, one of them leads at a time, the leader proclaims values and resigns, and anyone can ask
/// who leads or observe the changes. Leadership is the plain lock of the key `name` (its value the leader's token),
/// with fencing and the watchdog always on: the term is the lease's fencing token, strictly increasing from leader
/// to leader over node restarts as fencing tokens are (doc/fencing.md). The value lives in leader_key(name). A cheap
/// handle that holds nothing on the nodes and keeps the client's state alive; every member may be called from any
/// thread.
class election {
public:
    /// No I/O; a bad name or option is reported by the first call (invalid_argument). `options.ttl` is the lease's
    /// TTL (a dead leader is replaced within it), `wait` how long a campaign waits; fencing and the watchdog are
    /// turned on whatever `options` says; fair is refused.
    election(const client& c, std::string name, lock_options options = {});

    const std::string& name() const noexcept { return name_; }
    const lock_options& options() const noexcept { return options_; }
    /// The same election, with other options for the calls made through the copy.
    election with_options(const lock_options& options) const
    {
        election e(*this);
        e.options_ = options;
        return e;
    }

    /// Waits until this caller leads (options().wait; lock_options::wait_forever to wait as long as it takes): takes
    /// the election key as mutex::async_lock does (waking at once on a resignation's message, else when the leader's
    /// key expires), with its fencing token as the term, then proclaims `proposal` (revision 1) on a quorum. Only
    /// then does it complete: an observer never sees a leader without its value. If the proclaim fails, the lease is
    /// released and the campaign goes back to the lock until the wait runs out (then the proclaim's error). Errors:
    /// those of mutex::async_lock (not_acquired once the wait ran out, no_quorum, invalid_argument...), and of
    /// async_proclaim. Signature: void(error_code, leadership). Cancellation: terminal, partial and total; nothing is
    /// held afterwards.
    template <boost::asio::completion_token_for<void(error_code, leadership)> Token = boost::asio::deferred_t>
    auto async_campaign(std::string proposal, diagnostics& diag, Token&& token = {})
    {
        return initiate_campaign(std::move(proposal), &diag, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, leadership)> Token = boost::asio::deferred_t>
    auto async_campaign(std::string proposal, Token&& token = {})
    {
        return initiate_campaign(std::move(proposal), nullptr, std::forward<Token>(token));
    }

    /// Who leads now: reads the key, its PTTL and the leader hash on every node with plain commands (a read-only
    /// ACL user may call it). The leader is the token held on a quorum; its term and value come from the highest
    /// revision of the hashes that name that token. nullopt when no token holds a quorum, or one does but has
    /// proclaimed nothing yet (a campaign under way, or a plain lock of the same name). Errors: no_quorum (fewer than
    /// a quorum answered, or the nodes not heard from, down or with an error reply, could complete a quorum for some
    /// token: the read decides nothing), invalid_argument (empty name). Signature: void(error_code,
    /// std::optional<leader_info>). Cancellation: terminal.
    template <
        boost::asio::completion_token_for<void(error_code, std::optional<leader_info>)> Token = boost::asio::deferred_t>
    auto async_leader(diagnostics& diag, Token&& token = {}) const
    {
        return initiate_leader(&diag, std::forward<Token>(token));
    }
    template <
        boost::asio::completion_token_for<void(error_code, std::optional<leader_info>)> Token = boost::asio::deferred_t>
    auto async_leader(Token&& token = {}) const
    {
        return initiate_leader(nullptr, std::forward<Token>(token));
    }

    /// An observer of this election's leaders (no I/O until its first async_next). options().ttl bounds how long a
    /// missed message can go unnoticed while nobody leads.
    election_observer observe() const;

private:
    template <class Token>
    auto initiate_campaign(std::string proposal, diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, leadership)>(
            [client = impl_, name = name_, options = options_, diag](auto handler, std::string p) {
                detail::start_campaign(client, name, options, std::move(p), diag, std::move(handler));
            },
            token, std::move(proposal));
    }
    template <class Token>
    auto initiate_leader(diagnostics* diag, Token&& token) const
    {
        return boost::asio::async_initiate<Token, void(error_code, std::optional<leader_info>)>(
            [client = impl_, name = name_, diag](auto handler) {
                detail::start_read_leader(client, name, diag, std::move(handler));
            },
            token);
    }

    std::shared_ptr<detail::client_impl> impl_;
    std::string name_;
    lock_options options_;
};

}  // namespace redlock
