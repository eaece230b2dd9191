// The loop every primitive acquires with: one attempt at a time per lock per client (a queued fair waiter's
// excepted), wake-ups on release messages, jittered retries that never outlast the holder's TTL, and a deadline.
#pragma once

#include "primitives/common/client_impl.hpp"
#include "primitives/common/lease_state.hpp"

#include <redlock/diagnostics.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace redlock::detail {

/// What one attempt reports. A failed or cancelled attempt has already sent its clean-up (a release to every
/// node that did not refuse: a late grant may still land on a silent one).
struct attempt_result {
    error_code failure;                    ///< clear: granted
    std::shared_ptr<lease_state> granted;  ///< when granted
    bool refused = false;                  ///< another owner answered: its release is worth waiting for
    /// No wait can change the answer (a semaphore asked for more permits than the nodes' limit): the loop ends
    /// with `failure` at once.
    bool conclusive = false;
    /// When the lock may become free without a release message: the shortest remaining TTL among those owners
    /// (a fair lock: or when a waiter ahead of us drops out if it stops heartbeating).
    std::optional<std::chrono::milliseconds> holder_ttl;
    std::vector<std::size_t> granted_on;  ///< a failed attempt: the nodes that granted it (cleaned up since)
    /// A fair waiter that holds its ticket (its place in the queues): each of its attempts is its heartbeat, and from
    /// now on they skip the attempt gate (acquire_loop says why).
    bool queued = false;
};

struct acquire_plan {
    std::string gate_id;                ///< one attempt at a time per gate in this client
    std::vector<std::string> channels;  ///< release channels that wake a waiter
    std::string wake_token;             ///< a fair waiter: only releases naming this token wake it (release_wakeups)
    bool shared = false;                ///< a read-write lock's reader: releases only writers can pass leave it asleep
    bool key_news = false;              ///< client tracking's news of its keys wakes it (release_watcher::key_news)
    std::chrono::steady_clock::time_point wait_until;
    /// Timed retries, when release messages cannot be relied on (see acquire_loop).
    std::chrono::milliseconds retry_delay{100};
    std::chrono::milliseconds retry_jitter{50};
    /// The longest time from an attempt's answer to the next attempt, the wait for fresh subscriptions included,
    /// whatever the holder's TTL (a fair waiter's heartbeat); max: none.
    std::chrono::milliseconds max_pause = std::chrono::milliseconds::max();
    /// How long a refused waiter waits for its fresh subscriptions to be confirmed before it checks again.
    std::chrono::milliseconds settle_timeout{250};
};

/// Attempt number n (from 1). Must not be a capturing lambda coroutine: return the awaitable of a coroutine
/// that takes its state by value.
using attempt_fn = std::function<boost::asio::awaitable<attempt_result>(std::uint64_t n)>;

/// Runs attempts until one is granted, the wait deadline passes (the last failure), an attempt's failure is
/// conclusive, or the caller is cancelled (operation_aborted). `diag` may be null; attempts fill it in, and the loop
/// its wait_summary.
///
/// Each attempt passes the plan's gate (one attempt at a time per gate in this client), except those of a fair
/// waiter that holds its ticket (attempt_result::queued): the next one starts at most plan.max_pause after an
/// attempt answered, whatever the client's other waiters do.
///
/// The waiter is registered for release messages before its first attempt; a refused waiter whose channels
/// were not yet subscribed on enough nodes subscribes, waits for the confirmations and checks again (a release
/// between its refusal and the subscription is seen by that check); a release that lands during an attempt
/// makes the waiter retry at once. Releases and clean-ups that freed a quorum of nodes since the attempt began
/// (counting those that granted it: a split vote undone) make it retry after a random pause of up to two attempts'
/// time, so that the contenders do not split again in step. Once the messages can be relied on, a refused waiter sleeps
/// until one wakes it or the holder's TTL runs out, never on a fixed poll; otherwise it retries after
/// retry_delay (jittered), never past the holder's TTL.
boost::asio::awaitable<std::tuple<error_code, std::shared_ptr<lease_state>>> acquire_loop(
    std::shared_ptr<client_impl> client, acquire_plan plan, attempt_fn attempt, diagnostics* diag);

}  // namespace redlock::detail
