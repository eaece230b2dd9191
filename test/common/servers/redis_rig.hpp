// The real-server rig of integration and fault tests, as fake_rig.hpp is the unit tests': N redis-server nodes on
// free loopback ports, one io_context, and one or more redlock::clients listing every node, reconnecting fast
// (lock_checks.hpp's configs). The context runs only inside run(): what a test does to the nodes between making the
// rig and run() (kill one, set a key) happens before any client connects.
#pragma once

#include <redlock/client.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/node_setups.hpp>
#include <common/servers/redis_node.hpp>
#include <concepts>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace redlock::test {

class redis_rig {
public:
    /// `nodes` nodes started with `options`, then `clients` clients over all of them.
    explicit redis_rig(std::size_t nodes, std::size_t clients = 1, node_options options = {})
        : nodes(nodes, std::move(options))
    {
        add_clients(clients);
    }

    /// A cluster shape of node_setups.hpp: s.nodes nodes, the last s.down of them killed, then `clients` clients.
    explicit redis_rig(const node_setup& s, std::size_t clients = 1) : nodes(static_cast<std::size_t>(s.nodes))
    {
        stop_minority(nodes, s);
        add_clients(clients);
    }

    redis_rig(const redis_rig&) = delete;
    redis_rig& operator=(const redis_rig&) = delete;

    // Declared in this order so that the clients go first, then the context, then the nodes.
    cluster nodes;
    boost::asio::io_context ctx;
    std::vector<std::unique_ptr<redlock::client>> clients;

    /// The i-th client (the only one, by default).
    redlock::client& client(std::size_t i = 0) { return *clients.at(i); }

    /// run_coro on the rig's context: runs make() (an awaitable<void>) to completion, rethrows what it threw,
    /// fails the test after `limit`.
    template <class F>
    requires std::invocable<F&>
    void run(F make, std::chrono::seconds limit = std::chrono::seconds(60)) { run_coro(ctx, std::move(make), limit); }

private:
    void add_clients(std::size_t count)
    {
        for (std::size_t i = 0; i < count; ++i)
            clients.push_back(std::make_unique<redlock::client>(ctx.get_executor(), configs(nodes)));
    }
};

}  // namespace redlock::test
