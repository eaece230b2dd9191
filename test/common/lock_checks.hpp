// What the nodes hold, seen from outside the library (through redis-cli).
#pragma once

#include <chrono>
#include <common/redis_node.hpp>
#include <common/run_coro.hpp>
#include <string>

namespace redlock::test {

/// How many running nodes hold `key` with value `token`.
inline std::size_t nodes_holding(const cluster& nodes, const std::string& key, const std::string& token)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].running() && nodes[i].cli({"GET", key}) == token) ++n;
    return n;
}

/// Lock operations complete at the quorum; the other nodes apply them a moment later.
inline bool soon_holding(const cluster& nodes, const std::string& key, const std::string& token, std::size_t count)
{
    return wait_until([&] { return nodes_holding(nodes, key, token) == count; }, std::chrono::milliseconds(2000));
}

}  // namespace redlock::test
