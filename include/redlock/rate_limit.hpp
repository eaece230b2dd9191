// What a rate limiter allows: its strategy, rate, period and burst, and how long an acquire waits.
#pragma once

#include <chrono>
#include <cstdint>
#include <type_traits>

namespace redlock {

/// How a limiter counts (doc/rate-limiting.md compares them).
enum class rate_strategy {
    /// Generic cell rate algorithm: `rate` per `period` evenly spaced, plus up to `burst` at once after an idle
    /// spell. One key holding one timestamp per subject. The default.
    gcra,
    /// At most `rate` per window of `period` that starts with the first admission (INCRBY + PEXPIRE). The
    /// cheapest, but up to 2 x rate pass within a short time across a window's end.
    fixed_window,
    /// At most `rate` in any `period` ending now: an exact log of the admissions of the last period (a sorted
    /// set, one member per admitted call), so memory grows with `rate`.
    sliding_window,
};

/// What a rate_limiter allows (strategy, rate, period, burst) and how long async_acquire waits. An aggregate for
/// designated initializers; the first call checks it and fails with invalid_argument before any I/O.
struct rate_limit {
    /// Every duration of the limit.
    using ms = std::chrono::milliseconds;
    /// `wait` value: async_acquire waits until it is admitted or cancelled.
    static constexpr ms wait_forever = ms::max();
    /// The longest period accepted: 30 days (a longer one is a quota, better kept in a database).
    static constexpr ms max_period = std::chrono::hours(24 * 30);
    /// The largest rate accepted (cost units per period).
    static constexpr std::int64_t max_rate = 1'000'000'000'000;

    rate_strategy strategy = rate_strategy::gcra;
    /// Cost units admitted per period, in (0, max_rate]. A call of cost c takes c units.
    std::int64_t rate = 0;
    /// In [1 ms, max_period].
    ms period{1000};
    /// GCRA only (0 for the windows): how many units beyond one may pass at once after an idle spell, as
    /// CL.THROTTLE's max_burst. The most one call can take (rate_decision::limit) is burst + 1; over any span
    /// D, at most rate * D / period + burst + 1 units pass.
    std::int64_t burst = 0;
    /// How long async_acquire waits for room; 0 makes one attempt (as async_try_acquire does).
    ms wait{10'000};
    /// Deadline of the node's answer to each call.
    ms node_timeout{100};
};

// Options are often written as temporaries inside co_await expressions, which g++ 12 may destroy twice: keep
// them trivially destructible (as lock_options).
static_assert(std::is_trivially_destructible_v<rate_limit>);

}  // namespace redlock
