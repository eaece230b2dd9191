// Runs a command's coroutine on an io_context, then its cleanup on the same io_context, whatever happened: the
// coroutine returned, threw, or a handler threw out of ctx.run(). `redlock exec` relies on it so that on every
// way out the command is stopped and a lease taken is released (bounded by the per-node deadline) before the
// process exits, rather than left on the nodes until its TTL.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <functional>
#include <optional>

namespace redlock::cli {

template <class T>
struct guarded_outcome {
    std::optional<T> value;      // what `body` returned, if it did
    std::exception_ptr failure;  // the first exception: from `body`, a handler, or `cleanup`
};

// Runs `body` until it completes (or a handler throws), stops the io_context, then runs `cleanup(failure)` to
// completion on it (exceptions thrown by handlers meanwhile are recorded and the loop goes on), and stops the
// io_context again: background work left over (reconnect loops, a watchdog) does not keep it running.
template <class T>
guarded_outcome<T> run_guarded(boost::asio::io_context& ctx, boost::asio::awaitable<T> body,
                               const std::function<boost::asio::awaitable<void>(std::exception_ptr)>& cleanup)
{
    namespace asio = boost::asio;
    guarded_outcome<T> out;
    auto record = [&out](std::exception_ptr e) {
        if (e && !out.failure) out.failure = std::move(e);
    };
    bool cleaning = false;
    asio::co_spawn(ctx, std::move(body), [&](std::exception_ptr e, T value) {
        if (e)
            record(std::move(e));
        else
            out.value = std::move(value);
        if (!cleaning) ctx.stop();  // after a handler threw, the body may still finish during the cleanup
    });
    try {
        ctx.run();
    } catch (...) {
        record(std::current_exception());
    }

    cleaning = true;
    bool cleaned = false;
    ctx.restart();
    asio::co_spawn(ctx, cleanup(out.failure), [&](std::exception_ptr e) {
        record(std::move(e));
        cleaned = true;
        ctx.stop();
    });
    while (!cleaned) {
        try {
            if (ctx.run() == 0) break;  // nothing left to run: the cleanup cannot complete (never expected)
        } catch (...) {
            record(std::current_exception());
        }
        ctx.restart();
    }
    return out;
}

}  // namespace redlock::cli
