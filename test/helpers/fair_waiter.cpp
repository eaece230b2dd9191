// A process of fair-lock waiters that the test starts one at a time: fair_lock_test runs three side by side and
// compares the order of their grants with the tickets the nodes' queues gave them.
//
// Usage: helper_fair_waiter NODE_URLS OBSERVER_URL KEY NAME WAITERS
//   NODE_URLS     comma-separated lock nodes
//   OBSERVER_URL  a node that is not a lock node. Each element popped from its list `go:NAME` (BLPOP) starts one
//                 waiter: processes signalled by one script start theirs at the same moment. A granted waiter
//                 appends its token (its member in the queue) to the list `grants` there before it releases: that
//                 list is the order of the grants across processes.
//   WAITERS       how many waiters to start
// Each waiter locks KEY fairly: ttl 10 s, wait 60 s, node timeout 300 ms, the default waiter TTL.
// Prints one line: granted=G failed=F (each failure on stderr).
// Exit status: 0 every waiter was granted; 1 a waiter failed, or an unexpected error; 2 bad arguments; 3 the
// overall deadline (90 s) passed.
#include "common.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

constexpr auto overall_deadline = 90s;

struct run {
    run(asio::io_context& ctx, std::vector<redlock::node_config> nodes, redlock::node_config observer_node)
        : client(ctx.get_executor(), std::move(nodes)), observer(ctx.get_executor(), std::move(observer_node))
    {}
    redlock::client client;
    redlock::connection observer;
    std::string key;
    std::string name;
    int waiters = 0;
    int granted = 0;
    int failed = 0;
};

void report(const run& r)
{
    std::printf("granted=%d failed=%d\n", r.granted, r.failed);
    std::fflush(stdout);
}

asio::awaitable<void> waiter(run& r)
{
    redlock::mutex m(r.client, r.key, {.ttl = 10'000ms, .wait = 60'000ms, .node_timeout = 300ms, .fair = true});
    redlock::diagnostics diag;
    auto [ec, held] = co_await m.async_lock(diag, use_tuple);
    if (ec) {
        ++r.failed;
        std::fprintf(stderr, "lock: %s: %s\n", ec.message().c_str(), std::string(diag.message()).c_str());
        co_return;
    }
    redlock::request push;
    push.push("RPUSH", "grants", held.token());
    redlock::response pushed;
    auto [e1] = co_await r.observer.async_exec(push, pushed, use_tuple);
    auto [e2] = co_await held.async_release(use_tuple);
    if (e1 || e2) {
        ++r.failed;
        std::fprintf(stderr, "observer: %s; release: %s\n", e1.message().c_str(), e2.message().c_str());
        co_return;
    }
    ++r.granted;
}

// Starts a waiter per signal, then waits for them all.
asio::awaitable<void> start_waiters(run& r)
{
    const auto deadline = steady::now() + overall_deadline;
    auto check_deadline = [&] {
        if (steady::now() < deadline) return;
        std::fprintf(stderr, "the overall deadline passed\n");
        report(r);
        std::_Exit(3);
    };
    co_await r.observer.async_connect(asio::use_awaitable);
    co_await r.client.async_connect(asio::use_awaitable);
    for (int started = 0; started < r.waiters;) {
        check_deadline();
        redlock::request pop;
        pop.push("BLPOP", "go:" + r.name, "0.2");  // short: the deadline is checked in between
        redlock::response popped;
        co_await r.observer.async_exec(pop, popped, asio::use_awaitable);
        if (!popped.empty() && !popped[0].is_null()) {
            asio::co_spawn(co_await asio::this_coro::executor, waiter(r), helpers::rethrow);
            ++started;
        }
    }
    while (r.granted + r.failed < r.waiters) {
        check_deadline();
        co_await helpers::pause(5ms);
    }
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s NODE_URLS OBSERVER_URL KEY NAME WAITERS\n", argv[0]);
        return 2;
    }
    try {
        asio::io_context ctx;
        run r(ctx, helpers::fast_reconnecting_nodes(argv[1]), redlock::parse_url(argv[2]));
        r.key = argv[3];
        r.name = argv[4];
        r.waiters = std::atoi(argv[5]);
        if (r.waiters <= 0) {
            std::fprintf(stderr, "WAITERS must be positive\n");
            return 2;
        }
        bool error = false;
        asio::co_spawn(ctx, start_waiters(r), [&](std::exception_ptr e) {
            if (e) {
                error = true;
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& x) {
                    std::fprintf(stderr, "error: %s\n", x.what());
                }
            }
            r.client.close();
            r.observer.close();
        });
        ctx.run();  // a waiter's exception leaves it: reported below, exit 1
        report(r);
        return error || r.failed > 0 ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
