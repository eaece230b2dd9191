// Redlock over five independent nodes: a lock counts once 3 of the 5 granted it, so it is still granted with 2
// nodes down and refused with 3 down; its validity is the TTL less the time the attempt took and a clock-drift
// allowance. A second client stands for another process.
// Usage: redlock_example_redlock_five_nodes [URL,URL,URL,URL,URL]
// The five node URLs come from the argument, else from $REDLOCK_NODES (eval "$(scripts/dev nodes start 5)").
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::vector<redlock::node_config> node_list(int argc, char** argv)
{
    const char* env = std::getenv("REDLOCK_NODES");
    return redlock::parse_node_list(argc > 1 ? argv[1] : env && *env ? env : "");
}

// What each node answered in the last attempt.
void show(const redlock::diagnostics& diag)
{
    for (const auto& node : diag.nodes()) {
        std::cout << "  " << node.node << ": ";
        switch (node.what) {
            case redlock::node_outcome::result::granted:
                std::cout << "granted\n";
                break;
            case redlock::node_outcome::result::refused:
                std::cout << "refused (held by another owner)\n";
                break;
            case redlock::node_outcome::result::failed:
                std::cout << "failed: " << node.ec.message() << "\n";
                break;
            case redlock::node_outcome::result::pending:
                std::cout << "no answer yet when the outcome was decided\n";
                break;
        }
    }
}

// [five-nodes]
asio::awaitable<void> five_nodes(redlock::client& client, redlock::client& rival)
{
    std::cout << "-- " << client.size() << " nodes: a lock needs " << client.quorum() << " grants, so "
              << client.size() - client.quorum() << " nodes may fail\n";
    const redlock::lock_options options{.ttl = 10s};
    redlock::mutex m(client, "example:five-nodes", options);
    redlock::diagnostics diag;
    const auto start = steady::now();
    redlock::lease lease = co_await m.async_lock(diag, asio::use_awaitable);  // sent to the 5 nodes at once
    const std::chrono::duration<double, std::milli> took = steady::now() - start;
    show(diag);
    // validity = ttl - elapsed - drift, with drift = ttl * drift_factor + 2 ms: 102 ms for a 10 s ttl.
    const double drift = static_cast<double>(options.ttl.count()) * options.drift_factor + 2;
    std::cout << std::fixed << std::setprecision(1) << "acquired in " << took.count() << " ms, valid for "
              << lease.validity().count() << " ms (ttl " << options.ttl.count() << " - " << took.count()
              << " elapsed - " << drift << " drift)\n";

    // Another process asks meanwhile: every node it reaches refuses it.
    redlock::mutex other(rival, "example:five-nodes");
    auto [ec, none] = co_await other.async_try_lock(diag, use_tuple);
    std::cout << "another client's try_lock: " << ec.message() << "\n";
    show(diag);
    if (ec != redlock::error::not_acquired) throw std::runtime_error("the lock was not exclusive");
    co_await lease.async_release(asio::use_awaitable);
}
// [five-nodes]

// [nodes-down]
// `client` lists the same 5 nodes, `down` of them unreachable.
asio::awaitable<void> with_nodes_down(redlock::client& client, std::size_t down)
{
    std::cout << "-- " << down << " of " << client.size() << " nodes down\n";
    redlock::diagnostics diag;
    auto [connected] = co_await client.async_connect(diag, use_tuple);  // no_quorum as soon as 3 failed
    redlock::mutex m(client, "example:five-nodes", {.ttl = 10s, .wait = 0s});
    auto [ec, lease] = co_await m.async_lock(diag, use_tuple);
    std::cout << "lock: " << (ec ? ec.message() : "acquired") << "\n";
    show(diag);
    const bool quorum_left = client.size() - down >= client.quorum();
    if (quorum_left ? bool(ec) || connected : ec != redlock::error::no_quorum)
        throw std::runtime_error("the quorum rule did not hold");
    if (lease) co_await lease.async_release(asio::use_awaitable);  // reaches the 3 nodes that are up: a quorum
}
// [nodes-down]

int main(int argc, char** argv)
{
    try {
        const auto nodes = node_list(argc, argv);
        if (nodes.size() != 5) {
            std::cerr << "redlock_five_nodes: give 5 node URLs, or run eval \"$(scripts/dev nodes start 5)\" first\n";
            return 2;
        }
        asio::io_context ctx;
        // Stand-ins for nodes that are down: loopback ports bound but not listening, so connecting is refused.
        std::vector<asio::ip::tcp::acceptor> dead;
        std::vector<redlock::node_config> down_configs;
        for (int i = 0; i < 3; ++i) {
            auto& port = dead.emplace_back(ctx);
            port.open(asio::ip::tcp::v4());
            port.bind({asio::ip::make_address("127.0.0.1"), 0});
            down_configs.push_back(
                redlock::parse_url("redis://127.0.0.1:" + std::to_string(port.local_endpoint().port())));
        }
        redlock::client client(ctx.get_executor(), nodes);
        redlock::client rival(ctx.get_executor(), nodes);
        redlock::client two_down(ctx.get_executor(), {nodes[0], nodes[1], nodes[2], down_configs[0], down_configs[1]});
        redlock::client three_down(ctx.get_executor(),
                                   {nodes[0], nodes[1], down_configs[0], down_configs[1], down_configs[2]});
        asio::co_spawn(
            ctx,
            [&]() -> asio::awaitable<void> {
                co_await client.async_connect(asio::use_awaitable);
                co_await rival.async_connect(asio::use_awaitable);
                co_await five_nodes(client, rival);
                co_await with_nodes_down(two_down, 2);
                co_await with_nodes_down(three_down, 3);
            },
            [&](std::exception_ptr e) {
                for (auto* c : {&client, &rival, &two_down, &three_down}) c->close();
                if (e) std::rethrow_exception(e);
            });
        ctx.run();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "redlock_five_nodes: " << e.what() << "\n";
        return 1;
    }
}
