// What a semaphore looks like on each node right now: read-only, for status tools and operators.
#pragma once

#include <redlock/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

/// One permit on one node.
struct permit_view {
    std::string id;
    std::int64_t count = 0;            ///< permits under this id
    std::chrono::milliseconds ttl{0};  ///< until it expires there, by the node's clock
};

/// One node's view of a semaphore.
struct node_semaphore_view {
    std::string node;                   ///< the node's URL without password
    error_code ec;                      ///< the node could not be read (then only `message` is set below)
    std::string message;                ///< why, or what is odd (the key is not a semaphore, the limit not a number)
    std::optional<std::int64_t> limit;  ///< empty: none stored (the semaphore is idle there)
    std::vector<permit_view> permits;   ///< live permits, soonest to expire first
    std::size_t waiters = 0;            ///< queued fair waiters (live or not yet dropped)

    std::int64_t held() const noexcept
    {
        std::int64_t n = 0;
        for (const auto& p : permits) n += p.count;
        return n;
    }
    /// Permits free there: the limit minus those held (0 when a lowered limit is still exceeded); empty without a
    /// limit.
    std::optional<std::int64_t> available() const noexcept
    {
        if (!limit) return std::nullopt;
        return std::max<std::int64_t>(0, *limit - held());
    }
};

/// A semaphore as semaphore::async_inspect read it on every node, without changing anything: its limit, the quorum a
/// permit needs, and per node the permits held and the waiters queued; holders() sums them up for the quorum.
struct semaphore_inspection {
    std::string name;
    /// The limit the quorum is computed from: the largest a node stores, else the one the semaphore was made with.
    std::int64_t limit = 0;
    std::size_t quorum = 0;  ///< Q = floor(N * limit / (limit + 1)) + 1 grants per permit
    std::vector<node_semaphore_view> nodes;

    /// N - Q: how many nodes may fail while permits are still granted (0 once limit >= N - 1).
    std::size_t failures_tolerated() const noexcept { return nodes.size() >= quorum ? nodes.size() - quorum : 0; }
    /// Nodes that answered.
    std::size_t reachable() const noexcept
    {
        std::size_t n = 0;
        for (const auto& v : nodes) n += !v.ec;
        return n;
    }
    /// The permits held on a quorum of nodes (the shortest TTL among those nodes): the ones that count.
    std::vector<permit_view> holders() const
    {
        std::vector<permit_view> out;
        for (const auto& v : nodes) {
            for (const auto& p : v.permits) {
                if (std::any_of(out.begin(), out.end(), [&](const permit_view& o) { return o.id == p.id; })) continue;
                permit_view held = p;
                std::size_t on = 0;
                for (const auto& w : nodes)
                    for (const auto& q : w.permits)
                        if (q.id == p.id) {
                            ++on;
                            held.ttl = std::min(held.ttl, q.ttl);
                        }
                if (on >= quorum) out.push_back(held);
            }
        }
        return out;
    }
};

}  // namespace redlock
