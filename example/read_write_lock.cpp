// A read-write lock shared by every process that names it: readers of a report run together, its rebuild runs
// alone, and once the rebuild waits, readers that come after it wait behind it. Then a downgrade (rebuild, then
// keep reading what was written, no writer in between) and an upgrade tried once.
// Usage: redlock_example_read_write_lock [URL,URL,...]
// The node URLs come from the argument, else from $REDLOCK_NODES (comma-separated), else redis://127.0.0.1:6379.
#include <redlock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
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

// Who is inside, in this process (one thread: no atomics needed).
int readers = 0, most_readers = 0, writers = 0;
bool broken = false;

// [readers]
asio::awaitable<void> read_report(redlock::shared_mutex report, int reader)
{
    // The read side while the body runs: beside other readers, never beside a writer; the lease is this reader's
    // own, kept by the watchdog, and given back however the body ends.
    auto body = [reader]() -> asio::awaitable<void> {
        most_readers = std::max(most_readers, ++readers);
        broken = broken || writers != 0;
        std::cout << "reader " << reader << " reads beside " << readers - 1 << " other(s)\n";
        co_await work(150ms);
        --readers;
    };
    co_await redlock::with_shared_lock(report, body);
}
// [readers]

// [writer]
asio::awaitable<void> rebuild_report(redlock::shared_mutex report)
{
    // The write side: alone. While it waits, readers that ask after it wait behind it.
    auto body = []() -> asio::awaitable<void> {
        broken = broken || readers != 0 || writers++ != 0;
        std::cout << "the rebuild runs alone\n";
        co_await work(100ms);
        --writers;
    };
    co_await redlock::with_lock(report, body);
}
// [writer]

// [downgrade]
asio::awaitable<void> rebuild_then_read(redlock::shared_mutex report)
{
    redlock::lease write = co_await report.async_lock(asio::use_awaitable);
    std::cout << "rebuilt by hand, token " << write.token() << "\n";
    // The write key becomes this reader's entry on each node in one step: no writer comes in between.
    redlock::lease read = co_await report.async_downgrade(std::move(write), asio::use_awaitable);
    std::cout << "downgraded: still " << read.token() << ", now beside other readers\n";
    co_await read.async_release(asio::use_awaitable);
}
// [downgrade]

// [upgrade]
asio::awaitable<void> read_then_maybe_write(redlock::shared_mutex report)
{
    auto [ec, read] = co_await report.async_lock_shared(asio::as_tuple(asio::use_awaitable));
    if (ec) throw boost::system::system_error(ec);
    // Tried once: granted only to the only reader. Refused, the read lease comes back, held as before.
    auto [up, held] = co_await report.async_try_upgrade(std::move(read), asio::as_tuple(asio::use_awaitable));
    std::cout << (up ? "upgrade refused (" + up.message() + "): still reading" : std::string("upgraded: writing"))
              << "\n";
    co_await held.async_release(asio::use_awaitable);
}
// [upgrade]

asio::awaitable<void> demo(redlock::client& client)
{
    co_await client.async_connect(asio::use_awaitable);
    // [make]
    redlock::shared_mutex report(client, "report:daily", {.ttl = 10s, .wait = 10s});
    // [make]
    std::cout << "-- " << client.size() << " node(s): each side needs " << client.quorum() << " of them\n";

    auto ex = co_await asio::this_coro::executor;
    for (int reader = 1; reader <= 3; ++reader) asio::co_spawn(ex, read_report(report, reader), asio::detached);
    co_await work(50ms);  // the readers hold: the rebuild waits for them, the later readers for the rebuild
    asio::co_spawn(ex, rebuild_report(report), asio::detached);
    co_await work(50ms);
    for (int reader = 4; reader <= 5; ++reader) asio::co_spawn(ex, read_report(report, reader), asio::detached);
    co_await work(1000ms);
    co_await rebuild_then_read(report);
    co_await read_then_maybe_write(report);
    client.close();
    if (broken || most_readers < 2) {
        std::cerr << "the read-write lock did not hold: a writer beside someone, or readers never together\n";
        std::exit(1);
    }
    std::cout << "at most " << most_readers << " readers at once, the rebuild always alone\n";
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
