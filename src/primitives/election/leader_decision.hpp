// Who leads an election, decided from what each node holds (pure: no I/O), and which of the states an observer reads
// it delivers. doc/election.md has the rules; test/unit/primitives/election/ checks every case.
#pragma once

#include <redlock/election.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

/// What one node holds of an election: the key's token and remaining TTL, and the leader hash.
struct node_leader_view {
    /// The node answered the read (else the rest is empty). An error reply that tells nothing of the key (LOADING,
    /// NOPERM...) is no answer: the node may hold anything. WRONGTYPE is an answer (a key that is nobody's leadership).
    bool answered = false;
    std::optional<std::string> holder;             ///< the election key's value (a token), if the key exists
    std::optional<std::chrono::milliseconds> ttl;  ///< its remaining TTL; nullopt with a holder: the key never expires
    std::optional<std::string> hash_token;         ///< the leader hash: the token it names, if any
    std::uint64_t hash_term = 0;
    std::string hash_value;
    std::uint64_t hash_revision = 0;
};

struct leader_decision {
    std::size_t answered = 0;  ///< how many nodes answered
    /// false: no token holds a quorum among the answers, but the nodes not heard from could complete one (for some
    /// token seen, or one not seen at all): the read tells neither a holder nor nobody, and counts as no_quorum.
    bool decided = true;
    /// The leader: the token held on a quorum whose hash some node holds (the highest revision's term and value).
    std::optional<leader_info> leader;
    /// The token held on a quorum, proclaimed or not (a campaign under way, a plain lock of the same name).
    std::optional<std::string> holder;
    /// From the read, how long until the state may change without a message: with a quorum holder, until its key
    /// has expired on so many nodes that no quorum holds it (the quorum-th longest TTL); else, with keys held on some
    /// nodes, the shortest of their TTLs. nullopt: only a message can change it (nothing held, or keys without TTL).
    std::optional<std::chrono::milliseconds> recheck_in;
};

/// The leader among `nodes` (one view per node of the client) for a quorum of `quorum`.
leader_decision decide_leader(const std::vector<node_leader_view>& nodes, std::size_t quorum);

/// What an observer has delivered so far: the last state, and the last leader's highest revision.
struct observed_leaders {
    bool delivered_any = false;
    std::optional<leader_info> last;
    std::string token;           ///< the last leader delivered (it may have been followed by nobody)
    std::uint64_t revision = 0;  ///< the highest revision of its delivered

    /// Whether `next` (a fresh read) is a change to deliver: it differs from the last state and is not an older value
    /// of the last leader (a read that missed the node with its newer value). The first read is always delivered.
    /// A lower term with another token is delivered: terms only grow while the fence counters survive on a majority,
    /// and a leader whose term went back (counters lost) must not be hidden.
    bool is_change(const std::optional<leader_info>& next) const noexcept;
    /// Records `next` as delivered.
    void deliver(const std::optional<leader_info>& next);
};

}  // namespace redlock::detail
