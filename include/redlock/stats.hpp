// What a client and its connections have done so far, for dashboards and alerts: client::stats(), its Prometheus
// text and a plain text for logs, and one connection's own counters (connection::get_usage()).
#pragma once

#include <redlock/server_identity.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// Counters of one connection since it was created: connection::get_usage(), redis::get_usage(), and
/// node_stats::connection.
struct usage {
    std::uint64_t writes = 0;  ///< socket writes; coalescing makes this far smaller than requests
    std::uint64_t bytes_written = 0;
    std::uint64_t bytes_read = 0;
    std::uint64_t requests = 0;            ///< requests written
    std::uint64_t replies = 0;             ///< replies read (including those of abandoned requests)
    std::uint64_t pushes = 0;              ///< server pushes read
    std::uint64_t abandoned = 0;           ///< requests cancelled or timed out after they were written
    std::uint64_t connects = 0;            ///< successful handshakes
    std::uint64_t disconnects = 0;         ///< established connections that broke
    std::uint64_t resubscribes = 0;        ///< channels subscribed again in the handshake of a reconnect
    std::uint64_t subscribe_refusals = 0;  ///< channels the server refused (async_subscribe or a restore)
    /// channels the server unsubscribed on its own (a Cluster master whose slot moved away: `sunsubscribe`)
    std::uint64_t subscriptions_lost = 0;
};

/// Adds `more` to `total`, field by field (a node of several connections sums theirs).
inline usage& operator+=(usage& total, const usage& more) noexcept
{
    total.writes += more.writes;
    total.bytes_written += more.bytes_written;
    total.bytes_read += more.bytes_read;
    total.requests += more.requests;
    total.replies += more.replies;
    total.pushes += more.pushes;
    total.abandoned += more.abandoned;
    total.connects += more.connects;
    total.disconnects += more.disconnects;
    total.resubscribes += more.resubscribes;
    total.subscribe_refusals += more.subscribe_refusals;
    total.subscriptions_lost += more.subscriptions_lost;
    return total;
}

/// A cumulative histogram with fixed bucket bounds, as Prometheus reads one.
struct latency_histogram {
    /// Upper bounds of the buckets, in seconds (the last bucket, +Inf, is implied): from 0.25 ms to 10 s.
    static constexpr std::array<double, 14> bounds{0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                   0.05,    0.1,    0.25,  0.5,    1.0,   2.5,  10.0};
    /// counts[i]: observations <= bounds[i] (cumulative); counts.back(): all of them (+Inf).
    std::array<std::uint64_t, bounds.size() + 1> counts{};
    double sum_seconds = 0;
    std::uint64_t count() const noexcept { return counts.back(); }
};

/// Why acquisitions failed (the error each lock or acquire call completed with).
struct acquire_failures {
    std::uint64_t not_acquired = 0;      ///< held by others until the wait ran out
    std::uint64_t no_quorum = 0;         ///< too few nodes answered
    std::uint64_t timeout = 0;           ///< granted too late (validity below the minimum)
    std::uint64_t cancelled = 0;         ///< the caller cancelled
    std::uint64_t invalid_argument = 0;  ///< refused before any I/O
    std::uint64_t exceeds_limit = 0;     ///< more permits asked than a semaphore's stored limit
    std::uint64_t replica_acks = 0;      ///< granted, but too few replicas acknowledged it (lock_options::replica_acks)
    std::uint64_t other = 0;
};

/// One node: what its requests and its connection went through.
struct node_stats {
    std::string node;          ///< the node's URL without password
    std::uint64_t errors = 0;  ///< its answers that were failures (timeouts, connection errors, error replies)
    usage connection;          ///< the connection's own counters (connects, disconnects, resubscribes...)
    server_identity server;    ///< the server it runs, as its HELLO said (node::server()); unknown before
};

/// A snapshot of a client's counters since it was made. Every lock kind and semaphore of the client counts here.
struct client_stats {
    std::uint64_t acquires = 0;  ///< leases granted (locks and permits)
    acquire_failures failures;
    latency_histogram acquire_latency;     ///< from the call to the grant, waiting included
    std::uint64_t handoffs = 0;            ///< grants that a release message started (a waiter taking over)
    std::uint64_t wakeups_by_message = 0;  ///< waits that a release message ended
    std::uint64_t wakeups_by_timer = 0;    ///< waits that a timer ended (a holder's TTL, a heartbeat, a retry delay)
    std::uint64_t extensions = 0;          ///< successful extensions (the watchdog's and async_extend's)
    std::uint64_t extension_failures = 0;
    std::uint64_t releases = 0;  ///< releases that a quorum confirmed
    std::uint64_t release_failures = 0;
    std::uint64_t losses = 0;  ///< leases lost (validity ended without an extension, or taken by others)
    /// Release-channel subscriptions restored after reconnects, over every node.
    std::uint64_t subscriptions_restored = 0;
    /// cache_guard misses (on this client's guards) that found their Bloom filter missing on the store: they read
    /// every key as maybe present and load it. Rebuild the filter (doc/cache.md, "Bloom filter").
    std::uint64_t bloom_filter_missing = 0;
    std::vector<node_stats> nodes;
};

/// The snapshot in the Prometheus text exposition format 0.0.4 (`# HELP`, `# TYPE`, counters ending in
/// `_total`, the latency as a histogram), every name starting with `prefix` + "_". Append it to a /metrics
/// response; `labels` (e.g. `service="orders"`, already escaped) go on every sample.
/// Every node's server and version is the gauge `<prefix>_node_server_info{node, server, version}` (value 1).
std::string to_prometheus(const client_stats& stats, std::string_view prefix = "redlock", std::string_view labels = {});

/// The snapshot as a few lines of plain text, for a log or a terminal: the client's counters, then one line per
/// node with its server ("node redis://127.0.0.1:7101  server valkey 8.0.1  errors 0  reconnects 0").
std::string to_text(const client_stats& stats);

}  // namespace redlock
