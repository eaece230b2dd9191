// A rate limiter's answer to one call: the five fields of CL.THROTTLE, in milliseconds.
#pragma once

#include <chrono>
#include <cstdint>

namespace redlock {

/// Maps onto an HTTP reply directly: 429 unless allowed(), `Retry-After: ceil(retry_after / 1 s)`,
/// `RateLimit-Limit: limit`, `RateLimit-Remaining: remaining`, `RateLimit-Reset: ceil(reset_after / 1 s)`.
struct rate_decision {
    /// What the limiter decided for this call.
    enum class outcome : std::uint8_t {
        allowed,  ///< admitted: the call's cost was taken
        limited,  ///< not now: admitted if asked again after retry_after (unless others take the room first)
        never,    ///< the cost is above `limit`: no wait helps (retry_after is -1 ms)
    };

    outcome result = outcome::limited;
    /// The most one call can take: burst + 1 for GCRA, the rate for the windows (CL.THROTTLE's second field).
    std::int64_t limit = 0;
    /// How many calls of cost 1 would be admitted right now, after this one.
    std::int64_t remaining = 0;
    /// limited: how long until this call would be admitted, rounded up; -1 ms when allowed or never.
    std::chrono::milliseconds retry_after{-1};
    /// How long until the limiter is back to its full limit if nothing else is admitted, rounded up.
    std::chrono::milliseconds reset_after{0};
    /// The node's clock (TIME) when it decided, since the Unix epoch: the only clock the decision used.
    std::chrono::microseconds server_time{0};

    bool allowed() const noexcept { return result == outcome::allowed; }
    /// CL.THROTTLE's first field.
    bool limited() const noexcept { return result != outcome::allowed; }

    friend bool operator==(const rate_decision&, const rate_decision&) = default;
};

}  // namespace redlock
