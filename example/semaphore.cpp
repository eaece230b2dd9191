// A semaphore of 3 permits shared by every process that names it: 6 jobs run at most 3 at a time, with
// with_permit and by hand; then a look at the permits on each node, and a new limit.
// Usage: redlock_example_semaphore [URL,URL,...]
// The node URLs come from the argument, else from $REDLOCK_NODES (comma-separated), else redis://127.0.0.1:6379.
#include <redlock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
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

asio::awaitable<void> work(std::chrono::milliseconds d)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

int running = 0;  // jobs of this process holding a permit (one thread: no atomics needed)

// [with-permit]
asio::awaitable<void> crawl(redlock::semaphore crawlers, int job)
{
    // One permit while the body runs (the watchdog keeps it), given back however the body ends.
    auto body = [job]() -> asio::awaitable<void> {
        std::cout << "job " << job << " runs beside " << running++ << " other(s)\n";
        co_await work(200ms);
        --running;
    };
    co_await redlock::with_permit(crawlers, body);
}
// [with-permit]

// [by-hand]
asio::awaitable<void> reindex(redlock::semaphore& crawlers)
{
    // Two permits under one id, for a job that counts double; wait at most 10 s for them.
    redlock::permit held = co_await crawlers.async_acquire(2, asio::use_awaitable);
    std::cout << "reindex holds " << held.count() << " permits, valid for " << held.validity().count() << " ms\n";
    // Extending says how long the nodes now give the permits, by their own clocks.
    std::chrono::milliseconds left = co_await held.async_extend(asio::use_awaitable);
    std::cout << "extended: " << left.count() << " ms on the nodes\n";
    co_await held.async_release(asio::use_awaitable);  // error::not_owner had they expired meanwhile
}
// [by-hand]

// [inspect]
asio::awaitable<void> show(redlock::semaphore& crawlers)
{
    redlock::semaphore_inspection seen = co_await crawlers.async_inspect(asio::use_awaitable);
    std::cout << seen.name << ": limit " << seen.limit << ", quorum " << seen.quorum << " of " << seen.nodes.size()
              << " nodes (" << seen.failures_tolerated() << " may fail)\n";
    for (const auto& node : seen.nodes)
        std::cout << "  " << node.node << ": " << node.held() << " held, " << node.available().value_or(0)
                  << " available\n";
}
// [inspect]

// [fair]
asio::awaitable<void> fair_export(redlock::client& client)
{
    redlock::semaphore fifo(client, "exports", 4, {.wait = 60s, .fair = true});
    redlock::permit held = co_await fifo.async_acquire(asio::use_awaitable);  // after every earlier waiter
    std::cout << "a permit of the fair semaphore " << held.name() << " (limit " << fifo.limit() << ": a permit needs "
              << fifo.quorum() << " of " << client.size() << " nodes)\n";
    co_await held.async_release(asio::use_awaitable);
}
// [fair]

asio::awaitable<void> demo(redlock::client& client)
{
    co_await client.async_connect(asio::use_awaitable);
    // [make]
    redlock::semaphore crawlers(client, "crawlers", 3, {.ttl = 10s, .wait = 10s});
    // [make]
    std::cout << "-- " << client.size() << " node(s): a permit needs " << crawlers.quorum() << " of them\n";

    auto ex = co_await asio::this_coro::executor;
    for (int job = 1; job <= 6; ++job) asio::co_spawn(ex, crawl(crawlers, job), asio::detached);
    co_await work(50ms);
    co_await show(crawlers);
    co_await reindex(crawlers);

    // [set-limit]
    co_await crawlers.async_set_limit(5, asio::use_awaitable);  // for every process, at once
    // [set-limit]
    co_await work(500ms);
    co_await show(crawlers);
    co_await fair_export(client);
    client.close();
}

int main(int argc, char** argv)
{
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), node_list(argc, argv));
    asio::co_spawn(ctx, demo(client), [](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            std::cerr << "error: " << ex.what() << "\n";
            std::exit(1);
        }
    });
    ctx.run();
}
