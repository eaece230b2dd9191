// Runs a test's coroutine to completion on an io_context, with a time limit.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <concepts>
#include <exception>
#include <functional>
#include <string>
#include <thread>

namespace redlock::test {

// co_spawns make() (an awaitable<void>) on ctx and runs ctx until it finishes; rethrows what it threw.
// Fails the test (BOOST_FAIL, after stopping ctx) if it has not finished after `limit`.
// `make` may be a capturing lambda: it outlives the coroutine. Other work on ctx (say a connection's
// reader) keeps its state: run the context again to let it wind down.
template <class F>
requires std::invocable<F&>
void run_coro(boost::asio::io_context& ctx, F make, std::chrono::seconds limit = std::chrono::seconds(60))
{
    bool done = false;
    std::exception_ptr error;
    boost::asio::co_spawn(ctx, make(), [&done, &error](std::exception_ptr e) {
        done = true;
        error = e;
    });
    auto deadline = std::chrono::steady_clock::now() + limit;
    if (ctx.stopped()) ctx.restart();
    while (!done) {
        auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            ctx.stop();
            BOOST_FAIL("run_coro: the coroutine did not finish within " + std::to_string(limit.count()) + " s");
        }
        // run_one_for, not run_for: background work must not keep us here once the coroutine is done.
        if (ctx.run_one_for(deadline - now) == 0 && ctx.stopped() && !done) {
            if (std::chrono::steady_clock::now() < deadline) {
                ctx.stop();
                BOOST_FAIL("run_coro: the io_context ran out of work (or was stopped) before the coroutine finished");
            }
        }
    }
    if (error) std::rethrow_exception(error);
}

template <class F>
requires std::invocable<F&>
void run_coro(F make, std::chrono::seconds limit = std::chrono::seconds(60))
{
    boost::asio::io_context ctx;
    run_coro(ctx, std::move(make), limit);
}

// Polls pred every 5 ms until it holds (true) or `limit` passed (false).
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit)
{
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (pred()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

}  // namespace redlock::test
