// Connects to one Redis node, runs a pipeline, then shows many concurrent requests sharing few writes.
// Usage: redlock_example_quickstart [redis://127.0.0.1:6379]
#include <redlock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <iostream>

namespace asio = boost::asio;

asio::awaitable<void> quickstart(redlock::connection& conn)
{
    co_await conn.async_connect(asio::use_awaitable);  // HELLO 3, AUTH, SELECT as the URL says

    redlock::request req;
    req.push("SET", "greeting", "hello", "PX", 60000);
    req.push("GET", "greeting");
    redlock::response resp;
    co_await conn.async_exec(req, resp, asio::use_awaitable);  // one write, two replies
    std::cout << "GET greeting -> " << resp[1].text << "\n";

    // 10,000 concurrent requests from callbacks: the connection coalesces them into a handful of writes.
    constexpr int count = 10'000;
    std::vector<redlock::request> requests(count);
    int done = 0, failed = 0;
    const auto before = conn.get_usage();
    const auto start = std::chrono::steady_clock::now();
    for (auto& r : requests) {
        r.push("INCR", "quickstart:counter");
        conn.async_exec(r, [&](redlock::error_code ec) {
            ++done;
            if (ec) ++failed;
        });
    }
    asio::steady_timer poll(co_await asio::this_coro::executor);
    while (done < count) {
        poll.expires_after(std::chrono::milliseconds(1));
        co_await poll.async_wait(asio::use_awaitable);
    }
    const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto after = conn.get_usage();
    std::cout << count << " concurrent INCRs: " << failed << " failed, " << (after.writes - before.writes)
              << " socket writes, " << static_cast<long>(count / elapsed) << " requests/s\n";
    conn.close();
    if (failed) throw std::runtime_error("some requests failed");
}

int main(int argc, char** argv)
{
    try {
        asio::io_context ctx;
        redlock::connection conn(ctx.get_executor(), redlock::parse_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379"));
        asio::co_spawn(ctx, quickstart(conn), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
        ctx.run();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "quickstart: " << e.what() << "\n";
        return 1;
    }
}
