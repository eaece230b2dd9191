// with_lock: a body that runs three times longer than the lock's TTL keeps the lock (the watchdog extends it),
// and a body that outlives the lease's max_hold is cancelled, with_lock throwing error::lost.
// Usage: redlock_example_with_lock_watchdog [URL,URL,...]
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
using steady = std::chrono::steady_clock;

std::vector<redlock::node_config> node_list(int argc, char** argv)
{
    const char* env = std::getenv("REDLOCK_NODES");
    return redlock::parse_node_list(argc > 1 ? argv[1] : env && *env ? env : "redis://127.0.0.1:6379");
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);  // throws operation_aborted if the body is cancelled
}

long since(steady::time_point start)
{
    return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start).count());
}

// [with-lock]
// `rival` is another client on the same nodes: another process, as far as the lock can tell.
asio::awaitable<int> nightly_report(redlock::client& client, redlock::client& rival)
{
    redlock::mutex m(client, "example:nightly-report", {.ttl = 1s});
    const auto start = steady::now();
    int rows = co_await redlock::with_lock(m, [&]() -> asio::awaitable<int> {
        for (int step = 1; step <= 6; ++step) {  // 3 s of work: three TTLs
            co_await sleep_for(500ms);
            redlock::mutex intruder(rival, "example:nightly-report");
            auto [ec, stolen] = co_await intruder.async_try_lock(asio::as_tuple(asio::use_awaitable));
            std::cout << "  " << since(start) << " ms: a rival's try_lock -> " << ec.message() << "\n";
            if (!ec) throw std::runtime_error("the watchdog let the lock go");
        }
        co_return 6;
    });
    std::cout << "done after " << since(start) << " ms, released\n";
    co_return rows;
}
// [with-lock]

// [lost]
asio::awaitable<void> bounded_job(redlock::client& client)
{
    // The watchdog stops extending after max_hold: the lease runs out less than one TTL later.
    redlock::mutex m(client, "example:bounded-job", {.ttl = 1s, .max_hold = 2s});
    const auto start = steady::now();
    try {
        co_await redlock::with_lock(m, [&]() -> asio::awaitable<void> {
            co_await sleep_for(10s);  // stuck: far longer than max_hold
            std::cout << "  not printed: the body is cancelled when the lease is lost\n";
        });
    } catch (const boost::system::system_error& e) {
        if (e.code() != redlock::error::lost) throw;
        std::cout << "  with_lock threw after " << since(start) << " ms: " << e.code().message() << "\n";
        co_return;
    }
    throw std::runtime_error("expected error::lost");
}
// [lost]

int main(int argc, char** argv)
{
    try {
        const auto nodes = node_list(argc, argv);
        asio::io_context ctx;
        redlock::client client(ctx.get_executor(), nodes);
        redlock::client rival(ctx.get_executor(), nodes);
        std::exception_ptr failure;
        asio::co_spawn(
            ctx,
            [&]() -> asio::awaitable<void> {
                co_await client.async_connect(asio::use_awaitable);
                co_await rival.async_connect(asio::use_awaitable);
                std::cout << "with_lock over " << client.size() << " node(s), ttl 1000 ms, body 3000 ms:\n";
                const int rows = co_await nightly_report(client, rival);
                std::cout << "the body returned " << rows << "\n";
                std::cout << "with_lock with max_hold 2000 ms, body 10000 ms:\n";
                co_await bounded_job(client);
            },
            [&](std::exception_ptr e) {
                failure = e;
                client.close();
                rival.close();
            });
        ctx.run();
        if (failure) std::rethrow_exception(failure);
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "with_lock_watchdog: " << e.what() << "\n";
        return 1;
    }
}
