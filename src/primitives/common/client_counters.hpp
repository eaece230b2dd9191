// What a client counts for client::stats(): atomics, bumped on the client's strand and read from any thread.
#pragma once

#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/stats.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace redlock::detail {

class client_counters {
public:
    /// An acquire call ended: granted (`ec` clear) after `took`, or failed; `waiting` says how its waits ended;
    /// `handoff`: the grant followed a release message.
    void acquire_ended(error_code ec, std::chrono::steady_clock::duration took, const wait_summary& waiting,
                       bool handoff) noexcept;
    void extension(bool ok) noexcept { bump(ok ? extensions_ : extension_failures_); }
    void release(bool ok) noexcept { bump(ok ? releases_ : release_failures_); }
    void loss() noexcept { bump(losses_); }
    void bloom_filter_missing() noexcept { bump(bloom_filter_missing_); }

    /// Fills everything but the nodes.
    void snapshot(client_stats& out) const noexcept;

private:
    using counter = std::atomic<std::uint64_t>;
    static void bump(counter& c, std::uint64_t by = 1) noexcept { c.fetch_add(by, std::memory_order_relaxed); }
    static std::uint64_t read(const counter& c) noexcept { return c.load(std::memory_order_relaxed); }

    counter acquires_{0}, not_acquired_{0}, no_quorum_{0}, timeout_{0}, cancelled_{0}, invalid_argument_{0},
        exceeds_limit_{0}, replica_acks_{0}, other_failures_{0};
    std::array<counter, latency_histogram::bounds.size() + 1> buckets_{};  // per bucket, not cumulative
    counter latency_ns_{0};
    counter handoffs_{0}, wakeups_by_message_{0}, wakeups_by_timer_{0};
    counter extensions_{0}, extension_failures_{0}, releases_{0}, release_failures_{0}, losses_{0};
    counter bloom_filter_missing_{0};
};

}  // namespace redlock::detail
