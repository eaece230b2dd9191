// How long to wait before the next attempt at a lock that someone else holds.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

namespace redlock::detail {

/// The longest a waiter sleeps at once, whatever the holder's TTL says: a key may carry any PX a foreign writer
/// gave it (PX 9000000000000000 is valid), and a pause converted to the timer clock's nanoseconds overflows past
/// about 292 years, firing at once. A waiter woken at the cap only looks again.
inline constexpr std::chrono::milliseconds longest_pause = std::chrono::hours(24);

/// `d` within [0, longest_pause].
inline std::chrono::milliseconds bounded_pause(std::chrono::milliseconds d) noexcept
{
    return std::clamp(d, std::chrono::milliseconds(0), longest_pause);
}

/// Uniform in [base - jitter, base + jitter] (`unit` is a uniform random number in [0, 1)), so contending
/// clients do not retry in step; never longer than the holder's remaining TTL (+1 ms), when it is known,
/// because the lock is free then; never past `left` (the caller's wait deadline).
inline std::chrono::milliseconds retry_delay(std::chrono::milliseconds base, std::chrono::milliseconds jitter,
                                             std::optional<std::chrono::milliseconds> holder_ttl,
                                             std::chrono::milliseconds left, double unit) noexcept
{
    using ms = std::chrono::milliseconds;
    const auto low = std::max(ms(0), base - jitter);
    const auto span = (base + jitter - low).count();
    auto delay = low + ms(static_cast<ms::rep>(unit * static_cast<double>(span + 1)));
    delay = std::min(delay, base + jitter);
    if (holder_ttl) delay = std::min(delay, bounded_pause(*holder_ttl) + ms(1));
    return std::clamp(delay, ms(0), std::max(ms(0), left));
}

}  // namespace redlock::detail
