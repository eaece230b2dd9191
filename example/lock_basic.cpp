// Takes a distributed lock with co_await, first on one node, then on all the nodes (Redlock), and releases it;
// then takes two keys together, runs a body under with_lock, and takes a fair lock and a reentrant one.
// Usage: redlock_example_lock_basic [URL,URL,...]
// The node URLs come from the argument, else from $REDLOCK_NODES (comma-separated), else redis://127.0.0.1:6379.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

std::vector<redlock::node_config> node_list(int argc, char** argv)
{
    const char* env = std::getenv("REDLOCK_NODES");
    return redlock::parse_node_list(argc > 1 ? argv[1] : env && *env ? env : "redis://127.0.0.1:6379");
}

const char* what(redlock::node_outcome::result r)
{
    switch (r) {
        case redlock::node_outcome::result::granted:
            return "granted";
        case redlock::node_outcome::result::refused:
            return "refused";
        case redlock::node_outcome::result::failed:
            return "failed";
        case redlock::node_outcome::result::pending:
            return "pending";
    }
    return "?";
}

asio::awaitable<void> work(std::chrono::milliseconds d)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

// [readme]
asio::awaitable<void> rebuild_index(redlock::client& client)
{
    redlock::mutex m(client, "jobs:rebuild-index", {.ttl = 10s});

    // Held while the body runs (the watchdog extends it) and released however the body ends; the body is
    // cancelled if the lock is lost.
    co_await redlock::with_lock(m, [&]() -> asio::awaitable<void> { co_await work(100ms); });

    // By hand: the lease is the lock. Release it, or its destructor releases it in the background.
    redlock::lease lease = co_await m.async_lock(asio::use_awaitable);
    std::cout << "rebuild-index: valid for " << lease.validity().count() << " ms\n";
    co_await lease.async_release(asio::use_awaitable);
}
// [readme]

// [lock-basic]
asio::awaitable<void> lock_basic(redlock::client& client)
{
    std::cout << "-- " << client.size() << " node(s), quorum " << client.quorum() << "\n";
    redlock::diagnostics diag;
    auto [connected] = co_await client.async_connect(diag, asio::as_tuple(asio::use_awaitable));
    if (connected) throw boost::system::system_error(connected, std::string(diag.message()));

    redlock::mutex m(client, "example:lock_basic", {.ttl = 10s, .wait = 5s});
    redlock::lease lease = co_await m.async_lock(diag, asio::use_awaitable);
    std::cout << "acquired " << lease.keys()[0] << " with token " << lease.token() << ", valid for "
              << lease.validity().count() << " ms\n";
    for (const auto& node : diag.nodes()) std::cout << "  " << node.node << ": " << what(node.what) << "\n";

    // Another owner (a second mutex on the same key has its own token) cannot take it meanwhile.
    redlock::mutex other(client, "example:lock_basic");
    auto [ec, none] = co_await other.async_try_lock(asio::as_tuple(asio::use_awaitable));
    std::cout << "a second owner's try_lock: " << ec.message() << "\n";
    if (ec != redlock::error::not_acquired) throw std::runtime_error("the lock was not exclusive");

    co_await lease.async_release(asio::use_awaitable);
    std::cout << "released\n";
}
// [lock-basic]

// [multi-key]
// Two keys taken together: on each node the script sets both or neither. The shared hash tag {account:42}
// keeps them in one slot, as a Redis Cluster requires of the keys of one script.
asio::awaitable<void> lock_two_keys(redlock::client& client)
{
    redlock::mutex one(client, "{account:42}:to", {.ttl = 10s});
    redlock::lease to = co_await one.async_lock(asio::use_awaitable);

    redlock::mutex both(client, std::vector<std::string>{"{account:42}:from", "{account:42}:to"}, {.wait = 0s});
    auto [ec, none] = co_await both.async_lock(asio::as_tuple(asio::use_awaitable));
    std::cout << "both keys while one is held: " << ec.message() << "\n";  // and ":from" was not taken either

    co_await to.async_release(asio::use_awaitable);
    redlock::lease pair = co_await both.async_lock(asio::use_awaitable);
    std::cout << "both keys once it is free: acquired " << pair.keys().size() << " keys, valid for "
              << pair.validity().count() << " ms\n";
    co_await pair.async_release(asio::use_awaitable);
}
// [multi-key]

// [fair-reentrant]
// A fair lock serves waiters in arrival order; a lock owned_by(request_id) is reentrant for that owner.
asio::awaitable<void> fair_and_reentrant(redlock::client& client, std::string request_id)
{
    redlock::mutex m(client, "payments:batch", {.ttl = 10s, .wait = 60s, .fair = true});
    auto lease = co_await m.async_lock(asio::use_awaitable);  // after every waiter that came before

    auto mine = redlock::mutex(client, "order:42", {.ttl = 10s, .fencing = true}).owned_by(request_id);
    auto outer = co_await mine.async_lock(asio::use_awaitable);
    auto inner = co_await mine.async_lock(asio::use_awaitable);  // at once: the owner holds it
    // inner.fencing_token() == outer.fencing_token()
    co_await inner.async_release(asio::use_awaitable);  // still held: the outer hold remains
    co_await outer.async_release(asio::use_awaitable);  // free
    std::cout << "reentrant: two holds of " << request_id << ", fencing tokens " << inner.fencing_token() << " and "
              << outer.fencing_token() << "\n";
    if (inner.fencing_token() != outer.fencing_token()) throw std::runtime_error("one token across re-entry");
    co_await lease.async_release(asio::use_awaitable);
}
// [fair-reentrant]

int main(int argc, char** argv)
{
    try {
        const auto nodes = node_list(argc, argv);
        asio::io_context ctx;
        redlock::client one(ctx.get_executor(), {nodes.front()});  // a plain lock on one node (N = 1)
        redlock::client all(ctx.get_executor(), nodes);            // Redlock over N nodes
        std::exception_ptr failure;
        asio::co_spawn(
            ctx,
            [&]() -> asio::awaitable<void> {
                co_await lock_basic(one);
                co_await lock_basic(all);
                co_await lock_two_keys(all);
                co_await rebuild_index(all);
                const std::string request_id = "request-7f3a";  // named: g++ 12 and temporaries in co_await
                co_await fair_and_reentrant(all, request_id);
            },
            [&](std::exception_ptr e) {
                failure = e;
                one.close();  // the connections would otherwise keep ctx.run() going
                all.close();
            });
        ctx.run();
        if (failure) std::rethrow_exception(failure);
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "lock_basic: " << e.what() << "\n";
        return 1;
    }
}
