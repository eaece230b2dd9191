// A fair lock's queue as the nodes hold it (doc/locks.md, "Fair lock": `{name}:queue`, a ZSET of waiters' tokens
// scored by ticket), read from outside the library through redis-cli.
#pragma once

#include <redlock/key_layout.hpp>

#include <common/servers/redis_node.hpp>
#include <cstdint>
#include <istream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace redlock::test {

/// One entry of a fair lock's queue.
struct queued_waiter {
    std::string token;
    std::uint64_t ticket = 0;
};

/// How many waiters `node` queues for the fair lock `key` (live, or dead and not dropped yet).
inline std::size_t fair_queue_length(const redis_node& node, const std::string& key)
{
    return std::stoul(node.cli({"ZCARD", aux_name(key, "queue")}));
}

/// The queue of the fair lock `key` on `node`, in its order: by ticket, then by token (the order the lock serves).
inline std::vector<queued_waiter> fair_queue(const redis_node& node, const std::string& key)
{
    std::vector<queued_waiter> out;
    std::istringstream lines(node.cli({"ZRANGE", aux_name(key, "queue"), "0", "-1", "WITHSCORES"}));
    for (std::string token, score; std::getline(lines, token) && std::getline(lines, score);)
        out.push_back({token, std::stoull(score)});
    return out;
}

/// The waiters queued for `key` on a majority of `nodes` (N/2 + 1, nodes down included in N): those the order
/// binds (doc/locks.md, "Why the order holds over N nodes").
inline std::set<std::string> queued_on_quorum(const cluster& nodes, const std::string& key)
{
    std::multiset<std::string> seen;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].running())
            for (auto& w : fair_queue(nodes[i], key)) seen.insert(std::move(w.token));
    std::set<std::string> out;
    for (const auto& token : seen)
        if (seen.count(token) >= nodes.size() / 2 + 1) out.insert(token);
    return out;
}

}  // namespace redlock::test
