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

/// The WAIT of a lock's replica acknowledgement: `replica_ack_timeout`, or the node timeout when it is 0.
constexpr std::chrono::milliseconds replica_wait(std::chrono::milliseconds node_timeout,
                                                 std::chrono::milliseconds replica_ack_timeout) noexcept
{
    return replica_ack_timeout > std::chrono::milliseconds(0) ? replica_ack_timeout : node_timeout;
}

/// How long one request of a lock may take: its node timeout, plus the WAIT's when it asks replicas to acknowledge.
constexpr std::chrono::milliseconds request_time(std::chrono::milliseconds node_timeout, int replica_acks,
                                                 std::chrono::milliseconds replica_ack_timeout) noexcept
{
    return replica_acks > 0 ? node_timeout + replica_wait(node_timeout, replica_ack_timeout) : node_timeout;
}

}  // namespace redlock::detail
