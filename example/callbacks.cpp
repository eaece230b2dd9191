// The lock API without coroutines: plain callbacks (with a cancellation slot bound to one of them), then
// asio::use_future from a thread that is not running the io_context. Every async function takes any Asio
// completion token.
// Usage: redlock_example_callbacks [URL,URL,...]
// The node URLs come from the argument, else from $REDLOCK_NODES (comma-separated), else redis://127.0.0.1:6379.
#include <redlock/redlock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

std::vector<redlock::node_config> node_list(int argc, char** argv)
{
    const char* env = std::getenv("REDLOCK_NODES");
    return redlock::parse_node_list(argc > 1 ? argv[1] : env && *env ? env : "redis://127.0.0.1:6379");
}

// [callbacks]
// lock -> a second owner waits, and is cancelled -> extend -> release, each step started from the previous
// one's completion handler. The flow owns what the handlers share; each handler keeps the flow alive.
struct callback_flow : std::enable_shared_from_this<callback_flow> {
    callback_flow(redlock::client& c)
        : client(c),
          m(c, "example:callbacks", {.ttl = 10s}),
          waiter(c, "example:callbacks", {.wait = redlock::lock_options::wait_forever}),
          timer(c.get_executor())
    {}

    void start()
    {
        m.async_lock([self = shared_from_this()](redlock::error_code ec, redlock::lease l) {
            if (ec) return self->finish("lock", ec);
            std::cout << "callbacks: acquired, valid for " << l.validity().count() << " ms\n";
            self->held = std::move(l);
            self->start_waiter();
        });
    }

    void start_waiter()
    {
        // A waiter that would wait forever, bound to a cancellation slot; the timer cancels it after 300 ms.
        const auto started = steady::now();
        auto on_done = [self = shared_from_this(), started](redlock::error_code ec, redlock::lease) {
            const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - started);
            std::cout << "callbacks: the waiter completed after " << waited.count() << " ms: " << ec.message() << "\n";
            if (ec != asio::error::operation_aborted) return self->finish("waiter", ec);
            self->extend();
        };
        waiter.async_lock(asio::bind_cancellation_slot(cancel.slot(), std::move(on_done)));
        timer.expires_after(300ms);
        timer.async_wait([self = shared_from_this()](redlock::error_code) {
            self->cancel.emit(asio::cancellation_type::terminal);  // operation_aborted, nodes cleaned up
        });
    }

    void extend()
    {
        held.async_extend([self = shared_from_this()](redlock::error_code ec) {
            if (ec) return self->finish("extend", ec);
            std::cout << "callbacks: extended, valid for " << self->held.validity().count() << " ms\n";
            self->release();
        });
    }

    void release()
    {
        held.async_release([self = shared_from_this()](redlock::error_code ec) {
            if (ec) return self->finish("release", ec);
            std::cout << "callbacks: released\n";
            self->ok = true;
            self->finish("done", ec);
        });
    }

    void finish(const char* step, redlock::error_code ec)
    {
        if (ec) std::cout << "callbacks: " << step << " failed: " << ec.message() << "\n";
        client.close();  // lets ctx.run() return
    }

    redlock::client& client;
    redlock::mutex m;
    redlock::mutex waiter;
    redlock::lease held;
    asio::steady_timer timer;
    asio::cancellation_signal cancel;
    bool ok = false;
};
// [callbacks]

// [future]
// From a thread of its own while another thread runs the io_context: use_future turns each operation into a
// std::future; an error becomes a boost::system::system_error thrown by get().
bool with_futures(redlock::client& client)
{
    redlock::mutex m(client, "example:callbacks", {.ttl = 10s});
    client.async_connect(asio::use_future).get();
    redlock::lease lease = m.async_lock(asio::use_future).get();
    std::cout << "future: acquired, valid for " << lease.validity().count() << " ms\n";

    redlock::mutex other(client, "example:callbacks");
    try {
        other.async_try_lock(asio::use_future).get();
        return false;
    } catch (const boost::system::system_error& e) {
        std::cout << "future: a second owner's try_lock threw: " << e.code().message() << "\n";
        if (e.code() != redlock::error::not_acquired) return false;
    }
    lease.async_release(asio::use_future).get();
    std::cout << "future: released\n";
    return true;
}
// [future]

int main(int argc, char** argv)
{
    try {
        const auto nodes = node_list(argc, argv);
        asio::io_context ctx;

        // 1. Plain callbacks, on this thread.
        redlock::client first(ctx.get_executor(), nodes);
        auto flow = std::make_shared<callback_flow>(first);
        flow->start();
        ctx.run();  // returns once the last callback closed the client
        const bool callbacks_ok = flow->ok;
        flow.reset();

        // 2. Futures: ctx runs on a worker thread, this thread blocks on the futures.
        ctx.restart();
        redlock::client second(ctx.get_executor(), nodes);
        auto work = asio::make_work_guard(ctx);
        std::thread runner([&ctx] { ctx.run(); });
        bool futures_ok = false;
        try {
            futures_ok = with_futures(second);
        } catch (const std::exception& e) {
            std::cout << "future: " << e.what() << "\n";
        }
        second.close();
        work.reset();
        runner.join();

        return callbacks_ok && futures_ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "callbacks: " << e.what() << "\n";
        return 1;
    }
}
