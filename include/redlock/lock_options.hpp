// How a lock is taken and kept: TTL, waiting, per-node deadlines, retries, drift, watchdog.
#pragma once

#include <redlock/key_layout.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <type_traits>

namespace redlock {

/// How a lock is taken and kept (a semaphore's permit: semaphore_options). doc/locks.md has each field's default
/// and why. An aggregate for designated initializers (`{.ttl = 30s, .fencing = true}`); the first lock call checks
/// it and fails with invalid_argument before any I/O.
struct lock_options {
    /// Every duration of the options.
    using ms = std::chrono::milliseconds;
    /// `wait` value: retry until the lock is acquired or the operation is cancelled.
    static constexpr ms wait_forever = ms::max();
    /// The longest ttl accepted: 30 days. A longer lease is a leak rather than a lock; keep a long job's lease
    /// alive with the watchdog instead.
    static constexpr ms max_ttl = std::chrono::hours(24 * 30);

    /// Lifetime of the keys on the nodes. Without the watchdog the lease ends after ttl - elapsed - drift.
    ms ttl{10'000};
    /// How long async_lock keeps trying; 0 makes one attempt (as async_try_lock does).
    ms wait{10'000};
    /// Deadline of each node's answer; 0 means min(50 ms, ttl / 10). Much shorter than the TTL, so a slow or
    /// paused node cannot eat the validity.
    ms node_timeout{0};
    /// Pause between attempts: uniform in [retry_delay - retry_jitter, retry_delay + retry_jitter], and never
    /// longer than the holder's remaining TTL (the lock is free then).
    ms retry_delay{100};
    ms retry_jitter{50};
    /// Clock drift allowance: validity = ttl - elapsed - (ttl * drift_factor + 2 ms).
    double drift_factor = 0.01;
    /// Acquired only if the validity left after the attempt is above this.
    ms min_validity{0};
    /// Keep the lease alive by extending it every extend_interval until it is released.
    bool watchdog = false;
    /// Between watchdog extensions; 0 means ttl / 3.
    ms extend_interval{0};
    /// Issue a fencing token with the lease (lease::fencing_token()): one node increments the lock's counter
    /// in the acquire itself; N nodes add a second round trip, a commit on a quorum. The counters (`{key}:fence`,
    /// or `key:fence` when the key has a hash tag) never expire; they must survive restarts on a majority of
    /// nodes (appendonly yes, appendfsync always). See doc/fencing.md.
    bool fencing = false;
    /// Maximum total hold time with the watchdog: extensions stop, and the lease ends (as lost) when its
    /// validity runs out. 0: no limit.
    ms max_hold{0};
    /// Fair (FIFO) lock: waiters are served in the order they arrived, across processes and over N nodes
    /// (a ticket and a queue per lock, doc/locks.md "Fair lock"). One key; not reentrant (mutex::owned_by). A key
    /// locked fairly must only be locked fairly: a plain lock on it ignores the queue.
    bool fair = false;
    /// A fair waiter's heartbeat lifetime: a waiter that stops heartbeating (its process died) leaves the
    /// queue within this time; a live waiter heartbeats every waiter_ttl / 3, so it keeps its place unless it
    /// misses three heartbeats in a row (its event loop blocked that long), and then rejoins at it.
    ms waiter_ttl{2000};
    /// Replica acknowledgement (doc/replication.md): a node's grant, fencing commit or extension counts only once
    /// this many of that node's replicas acknowledged it, so that a failover to one of them keeps the lock and its
    /// token. Each such request ends with `WAIT replica_acks replica_ack_timeout`, on the same connection; a grant
    /// acknowledged by fewer is released, and an attempt without a quorum of acknowledged grants fails with
    /// error::replica_acks. Costs a round trip to the replicas per grant and extension, and the WAIT holds the
    /// node's connection (every request of the client on that node waits behind it). 0: off (the default).
    int replica_acks = 0;
    /// How long each node's WAIT may block; 0 means node_timeout. A request carrying a WAIT has node_timeout +
    /// replica_ack_timeout as its deadline, and the time it takes counts against the validity as any other.
    ms replica_ack_timeout{0};

    /// What is wrong with these options (a ttl that is not positive, a watchdog that would extend too late, a
    /// waiter_ttl too short for the node timeout...), or an empty string. Every lock call checks it before any I/O;
    /// call it to check options read from a configuration at startup.
    std::string invalid() const;
};

// Options are often written as temporaries inside co_await expressions, which g++ 12 may destroy twice: a
// member with a destructor (a string) would then be freed twice. Keep them trivially destructible.
static_assert(std::is_trivially_destructible_v<lock_options>);

}  // namespace redlock
