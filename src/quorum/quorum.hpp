// The decisions of the Redlock algorithm, as pure functions: quorum size, the vote tally, validity.
#pragma once

#include <chrono>
#include <cstddef>

namespace redlock::detail {

/// Q = N/2 + 1: two quorums always share a node.
constexpr std::size_t majority(std::size_t nodes) noexcept
{
    return nodes / 2 + 1;
}

/// What one node said.
enum class vote {
    yes,    ///< granted, extended, released
    no,     ///< answered: held by another owner
    error,  ///< did not answer in time, or failed
};

/// Counts votes and tells as soon as the outcome cannot change: `reached` at Q yes votes, `impossible` once
/// more than N - Q nodes said no or failed. Never waits for the slowest node.
class quorum_tally {
public:
    enum class decision { pending, reached, impossible };

    quorum_tally(std::size_t nodes, std::size_t quorum) noexcept : nodes_(nodes), quorum_(quorum) {}

    void add(vote v) noexcept
    {
        switch (v) {
            case vote::yes:
                ++yes_;
                break;
            case vote::no:
                ++no_;
                break;
            case vote::error:
                ++errors_;
                break;
        }
    }
    decision decide() const noexcept
    {
        if (yes_ >= quorum_) return decision::reached;
        if (no_ + errors_ > nodes_ - quorum_) return decision::impossible;
        return decision::pending;
    }
    /// For an impossible outcome: did errors alone make the quorum unreachable? (no_quorum rather than
    /// not_acquired: the nodes could not be asked, rather than said no.)
    bool failed_by_errors() const noexcept { return errors_ > nodes_ - quorum_; }

    std::size_t yes() const noexcept { return yes_; }
    std::size_t no() const noexcept { return no_; }
    std::size_t errors() const noexcept { return errors_; }
    std::size_t nodes() const noexcept { return nodes_; }
    std::size_t quorum() const noexcept { return quorum_; }

private:
    std::size_t nodes_, quorum_;
    std::size_t yes_ = 0, no_ = 0, errors_ = 0;
};

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
