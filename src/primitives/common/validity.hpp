// How long a grant is valid: the Redlock validity rule and the per-node deadline, as pure functions.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace redlock::detail {

/// drift = ttl * factor + 2 ms: the clock drift between nodes and the time Redis may take to expire a key.
constexpr std::chrono::microseconds drift(std::chrono::milliseconds ttl, double factor) noexcept
{
    return std::chrono::microseconds(static_cast<std::int64_t>(static_cast<double>(ttl.count()) * factor * 1000.0)) +
           std::chrono::milliseconds(2);
}

/// The local deadline of a grant obtained by an attempt that started at `start`:
/// start + ttl - drift, so validity = ttl - elapsed - drift.
constexpr std::chrono::steady_clock::time_point valid_until(std::chrono::steady_clock::time_point start,
                                                            std::chrono::milliseconds ttl, double factor) noexcept
{
    return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(ttl - drift(ttl, factor));
}

/// Per-node deadline by default: much shorter than the TTL, so a slow node cannot eat the validity.
constexpr std::chrono::milliseconds default_node_timeout(std::chrono::milliseconds ttl) noexcept
{
    return std::max(std::chrono::milliseconds(1), std::min(std::chrono::milliseconds(50), ttl / 10));
}

}  // namespace redlock::detail
