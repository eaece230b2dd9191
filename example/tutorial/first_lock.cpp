// A first distributed lock: connect to one Redis node, take a lock, work while holding it, release it.
// doc/tutorial.md walks through it. Usage: first_lock [redis://127.0.0.1:6379]
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <iostream>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// [lock]
asio::awaitable<void> run(redlock::client& client)
{
    redlock::diagnostics diag;
    auto [ec] = co_await client.async_connect(diag, asio::as_tuple(asio::use_awaitable));  // until the node answers
    if (ec) {
        for (const auto& node : diag.nodes()) std::cerr << node.node << ": " << node.message << "\n";
        throw boost::system::system_error(ec, std::string(diag.message()));
    }

    redlock::mutex m(client, "tutorial:report", {.ttl = 10s, .wait = 10s});
    const auto asked = steady::now();
    redlock::lease lease = co_await m.async_lock(asio::use_awaitable);  // waits while another process holds it
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - asked);
    std::cout << "locked " << lease.keys().front() << " after " << waited.count() << " ms, valid for "
              << lease.validity().count() << " ms\n";

    asio::steady_timer work(co_await asio::this_coro::executor, 500ms);  // the critical section
    co_await work.async_wait(asio::use_awaitable);

    co_await lease.async_release(asio::use_awaitable);
    std::cout << "released\n";
}
// [lock]

// [main]
int main(int argc, char** argv)
{
    try {
        asio::io_context ctx;
        redlock::client client(ctx.get_executor(), {redlock::parse_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379")});
        asio::co_spawn(ctx, run(client), [&](std::exception_ptr e) {
            client.close();  // its connections would keep ctx.run() busy
            if (e) std::rethrow_exception(e);
        });
        ctx.run();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "first_lock: " << e.what() << "\n";
        return 1;
    }
}
// [main]
