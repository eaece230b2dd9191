// How a semaphore's permits are taken and kept: TTL, waiting, per-node deadlines, drift, watchdog, fairness.
#pragma once

#include <redlock/lock_options.hpp>

#include <chrono>
#include <type_traits>

namespace redlock {

/// How a semaphore's permits are taken and kept: each field means for a permit what lock_options' field of the same
/// name means for a lock (doc/locks.md has the defaults and why). No fencing: a fencing token orders holders one
/// after another, and a semaphore's holders run side by side. An aggregate for designated initializers
/// (`{.ttl = 30s, .fair = true}`); the first call checks it and fails with invalid_argument before any I/O.
struct semaphore_options {
    /// Every duration of the options.
    using ms = std::chrono::milliseconds;
    /// `wait` value: retry until a permit is granted or the operation is cancelled.
    static constexpr ms wait_forever = lock_options::wait_forever;

    ms ttl{10'000};              ///< lifetime of a permit on the nodes (at most lock_options::max_ttl)
    ms wait{10'000};             ///< how long async_acquire keeps trying; 0 makes one attempt
    ms node_timeout{0};          ///< deadline of each node's answer; 0 means min(50 ms, ttl / 10)
    ms retry_delay{100};         ///< pause between attempts when release messages cannot be relied on...
    ms retry_jitter{50};         ///< ...uniform in [retry_delay - retry_jitter, retry_delay + retry_jitter]
    double drift_factor = 0.01;  ///< validity = ttl - elapsed - (ttl * drift_factor + 2 ms)
    ms min_validity{0};          ///< granted only if the validity left after the attempt is above this
    bool watchdog = false;       ///< keep the permit alive by extending it every extend_interval until released
    ms extend_interval{0};       ///< between watchdog extensions; 0 means ttl / 3
    ms max_hold{0};              ///< maximum total hold time with the watchdog; 0: no limit
    bool fair = false;           ///< fair (FIFO) semaphore: waiters are served in the order they arrived
    ms waiter_ttl{2000};         ///< a fair waiter's heartbeat lifetime (lock_options::waiter_ttl)
    int replica_acks = 0;        ///< replicas that must acknowledge each grant and extension (lock_options)
    ms replica_ack_timeout{0};   ///< how long each node's WAIT may block; 0 means node_timeout
};
// Written as temporaries inside co_await expressions: keep it trivially destructible (see lock_options).
static_assert(std::is_trivially_destructible_v<semaphore_options>);

}  // namespace redlock
