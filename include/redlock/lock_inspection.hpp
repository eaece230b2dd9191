// What a lock looks like on each node right now: read-only, for status tools and operators.
#pragma once

#include <redlock/error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

/// One node's view of a lock key.
struct node_lock_view {
    std::string node;                   ///< the node's URL without password
    error_code ec;                      ///< the node could not be read (then only `message` is set below)
    std::string message;                ///< why, or what is odd (the key is not a lock, the counter is not a number)
    std::optional<std::string> holder;  ///< the token in the key; empty when the lock is free there
    std::optional<std::chrono::milliseconds> ttl;  ///< the holder key's remaining TTL; empty: no expiry
    std::optional<std::uint64_t> fence;            ///< the fencing counter, when set and a number
};

/// A lock as client::async_inspect read it on every node, without changing anything: per node the holder, its TTL
/// and the fencing counter; holder() and highest_fence() sum them up for the quorum.
struct lock_inspection {
    std::string key;
    std::size_t quorum = 0;
    std::vector<node_lock_view> nodes;

    /// Nodes that answered.
    std::size_t reachable() const noexcept
    {
        std::size_t n = 0;
        for (const auto& v : nodes) n += !v.ec;
        return n;
    }
    /// The token that holds the key on a quorum of nodes, if one does.
    std::optional<std::string> holder() const
    {
        for (const auto& v : nodes) {
            if (!v.holder) continue;
            std::size_t same = 0;
            for (const auto& w : nodes) same += w.holder == v.holder;
            if (same >= quorum) return v.holder;
        }
        return std::nullopt;
    }
    /// The highest fencing counter among the nodes (0 when none is set): the last token issued is at most this.
    std::uint64_t highest_fence() const noexcept
    {
        std::uint64_t highest = 0;
        for (const auto& v : nodes)
            if (v.fence && *v.fence > highest) highest = *v.fence;
        return highest;
    }
};

}  // namespace redlock
