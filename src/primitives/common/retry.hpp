// How long to wait before the next attempt at a lock that someone else holds.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

namespace redlock::detail {

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
    if (holder_ttl) delay = std::min(delay, *holder_ttl + ms(1));
    return std::clamp(delay, ms(0), std::max(ms(0), left));
}

}  // namespace redlock::detail
