#include "primitives/election/leader_decision.hpp"

#include <algorithm>
#include <functional>
#include <map>

namespace redlock::detail {

namespace {

using ms = std::chrono::milliseconds;

// A key without TTL lives as long as anything may: it sorts after every TTL.
ms lifetime(const node_leader_view& v)
{
    return v.ttl ? *v.ttl : ms::max();
}

}  // namespace

leader_decision decide_leader(const std::vector<node_leader_view>& nodes, std::size_t quorum)
{
    leader_decision out;
    std::map<std::string, std::size_t> held;  // token -> nodes holding it
    for (const auto& v : nodes) {
        if (!v.answered) continue;
        ++out.answered;
        if (v.holder) ++held[*v.holder];
    }
    std::size_t most = 0;  // the most nodes holding one token
    for (const auto& [token, count] : held) {
        if (count >= quorum) out.holder = token;  // at most one token: quorums intersect
        most = std::max(most, count);
    }
    if (!out.holder) {
        // Nobody only when no token could hold a quorum with every node not heard from: a node down, or one that
        // replied an error, may hold the leader's key (a quorum of {A, nil, down} may be A's).
        out.decided = most + (nodes.size() - out.answered) < quorum;
        // Nobody holds a quorum; keys held on some nodes may lapse (or be taken) without a message.
        std::optional<ms> shortest;
        for (const auto& v : nodes)
            if (v.answered && v.holder && v.ttl) shortest = std::min(shortest.value_or(ms::max()), *v.ttl);
        out.recheck_in = shortest;
        return out;
    }
    const auto& token = *out.holder;
    std::vector<ms> lives;
    for (const auto& v : nodes)
        if (v.answered && v.holder == token) lives.push_back(lifetime(v));
    std::sort(lives.begin(), lives.end(), std::greater<>());
    // lives.size() >= quorum: once the quorum-th longest has expired, fewer than a quorum hold the key.
    if (lives[quorum - 1] != ms::max()) out.recheck_in = lives[quorum - 1];

    // The value of the highest revision among the hashes naming the holder (on any node that answered: a node whose
    // key lapsed still tells what the leader wrote there). The first of equal revisions: the same write.
    const node_leader_view* best = nullptr;
    for (const auto& v : nodes) {
        if (!v.answered || v.hash_token != token) continue;
        if (!best || v.hash_revision > best->hash_revision) best = &v;
    }
    if (best) out.leader = leader_info{token, best->hash_term, best->hash_value, best->hash_revision};
    return out;
}

bool observed_leaders::is_change(const std::optional<leader_info>& next) const noexcept
{
    if (!delivered_any) return true;
    if (next && next->token == token && next->revision < revision) return false;
    return next != last;
}

void observed_leaders::deliver(const std::optional<leader_info>& next)
{
    delivered_any = true;
    last = next;
    if (!next) return;
    if (next->token != token) {
        token = next->token;
        revision = next->revision;
    } else {
        revision = std::max(revision, next->revision);
    }
}

}  // namespace redlock::detail
