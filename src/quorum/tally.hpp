// Quorum rules and the vote tally: how many nodes must agree, and whether they have yet.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace redlock::detail {

/// Q = N/2 + 1: two quorums always share a node.
constexpr std::size_t majority(std::size_t nodes) noexcept
{
    return nodes / 2 + 1;
}

/// A permit of a semaphore with `limit` permits over N nodes counts only with floor(N * L / (L + 1)) + 1
/// grants: with fewer, L + 1 holders could each hold that many nodes while no node exceeds L holders. For
/// L = 1 this is the majority; it reaches N once L >= N - 1 (then no node may fail).
constexpr std::size_t permit_quorum(std::size_t nodes, std::size_t limit) noexcept
{
    return nodes * limit / (limit + 1) + 1;
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
    /// A quorum rule that depends on the answers (a semaphore's limit, as each node reports it) sets the quorum
    /// those answers call for; the votes stay counted.
    void set_quorum(std::size_t quorum) noexcept { quorum_ = quorum; }
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

/// For diagnostics: "2 of 5 nodes granted, 2 refused, 1 failed; a quorum needs 3", with the operation's own
/// words for yes and no.
inline std::string tally_text(const quorum_tally& tally, std::string_view yes, std::string_view no)
{
    return std::to_string(tally.yes()) + " of " + std::to_string(tally.nodes()) + " nodes " + std::string(yes) + ", " +
           std::to_string(tally.no()) + " " + std::string(no) + ", " + std::to_string(tally.errors()) +
           " failed; a quorum needs " + std::to_string(tally.quorum());
}

}  // namespace redlock::detail
