// For lock tests: node configs for a cluster, a coroutine sleep, and what the nodes hold and who listens for
// releases there, seen from outside the library (through redis-cli).
#pragma once

#include <redlock/key_layout.hpp>
#include <redlock/node_config.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace redlock::test {

/// A node's config for lock tests: reconnecting fast after a kill or restart.
inline node_config fast_reconnecting(const std::string& url)
{
    auto c = parse_url(url);
    c.connect_timeout = std::chrono::milliseconds(300);
    c.reconnect_min_delay = std::chrono::milliseconds(20);
    c.reconnect_max_delay = std::chrono::milliseconds(200);
    return c;
}

/// The cluster's nodes, reconnecting fast after a kill or restart.
inline std::vector<node_config> configs(const cluster& nodes)
{
    std::vector<node_config> out;
    for (auto& url : nodes.urls()) out.push_back(fast_reconnecting(url));
    return out;
}

/// The same nodes listed from the `by`-th on: clients must agree whatever order they list the nodes in.
inline std::vector<node_config> rotated(std::vector<node_config> nodes, std::size_t by)
{
    std::rotate(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(by % nodes.size()), nodes.end());
    return nodes;
}

inline boost::asio::awaitable<void> sleep_for(std::chrono::milliseconds d)
{
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
    co_await t.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
}

/// How many running nodes hold `key` with value `token`.
inline std::size_t nodes_holding(const cluster& nodes, const std::string& key, const std::string& token)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].running() && nodes[i].cli({"GET", key}) == token) ++n;
    return n;
}

/// Lock operations complete at the quorum; the other nodes apply them a moment later. Polls from a coroutine,
/// so the io_context keeps running (nodes still connecting get there).
inline boost::asio::awaitable<bool> soon_holding(const cluster& nodes, std::string key, std::string token,
                                                 std::size_t count)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (nodes_holding(nodes, key, token) != count) {
        if (std::chrono::steady_clock::now() >= deadline) co_return false;
        co_await sleep_for(std::chrono::milliseconds(10));
    }
    co_return true;
}

/// How many connections listen to the release channel of `key` on `node`: sharded subscribers on Redis 7 (PUBSUB
/// SHARDNUMSUB), classic ones on 6.x (PUBSUB NUMSUB), as the library subscribes.
inline std::string release_listeners(const redis_node& node, const std::string& key)
{
    auto reply_text = node.cli({"PUBSUB", "SHARDNUMSUB", release_channel(key)});
    if (reply_text.find("unknown") != std::string::npos)
        reply_text = node.cli({"PUBSUB", "NUMSUB", release_channel(key)});
    std::istringstream reply(reply_text);
    std::string channel, count;
    std::getline(reply, channel);
    std::getline(reply, count);
    return count;
}

/// Until every running node has exactly `count` listeners (one, by default) on the release channel of `key`: a
/// waiter that was refused has subscribed everywhere. False after `limit`.
inline boost::asio::awaitable<bool> all_listening(const cluster& nodes, const std::string& key, std::string count = "1",
                                                  std::chrono::milliseconds limit = std::chrono::seconds(5))
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        bool all = true;
        for (std::size_t i = 0; i < nodes.size(); ++i)
            all = all && (!nodes[i].running() || release_listeners(nodes[i], key) == count);
        if (all) co_return true;
        if (std::chrono::steady_clock::now() >= deadline) co_return false;
        co_await sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace redlock::test
