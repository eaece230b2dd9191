// A process whose coroutines take permits of a semaphore again and again, and record on an observer node (not a
// semaphore node) who holds one: the semaphore fault test runs several, kills some, and faults the nodes.
//
// Usage: helper_semaphore_worker NODE_URLS OBSERVER_URL NAME LIMIT COROUTINES DURATION_MS [fair]
//   NODE_URLS     comma-separated semaphore nodes
//   OBSERVER_URL  where holders register: ZADD NAME:holders <end of validity, wall-clock ms> <holder>, the holder
//                 being "<pid>:<coroutine>:<n>:<permit id>"; and every grant: ZADD NAME:grants <wall-clock ms now>
//                 "<wall-clock ms when the try-acquire was called> <holder>", so the test can tell the grants
//                 whose whole attempt fell inside a fault; and, once a coroutine's last call has returned,
//                 ZADD NAME:finished <wall-clock ms> "<pid>:<coroutine>", so the test knows when the last write
//                 to the semaphore's keys was made
// Each holder registers when granted, counts the registered holders whose validity has not ended (itself
// included), holds a few ms, unregisters and releases. A holder killed meanwhile stays registered until its
// validity ends: its permit may be taken only after that. A count above LIMIT is an overlap.
// Prints one line: grants=G overlaps=O acquire_failures=F release_failures=R most=M
// Exit status: 0 done; 1 unexpected error; 2 bad arguments.
#include "common.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

struct run {
    run(asio::io_context& ctx, std::vector<redlock::node_config> nodes, redlock::node_config observer_node)
        : client(ctx.get_executor(), std::move(nodes)), observer(ctx.get_executor(), std::move(observer_node))
    {}
    redlock::client client;
    redlock::connection observer;
    std::string name;
    std::int64_t limit = 0;
    redlock::semaphore_options options;
    std::chrono::steady_clock::time_point end;
    long grants = 0, overlaps = 0, acquire_failures = 0, release_failures = 0, most = 0;
    bool failed = false;
};

long long wall_ms()
{
    return std::chrono::duration_cast<ms>(std::chrono::system_clock::now().time_since_epoch()).count();
}

using helpers::pause;

// Once a coroutine's last call has returned: when, on the observer.
asio::awaitable<void> record_finished(run& r, const std::string& me)
{
    redlock::request done;
    done.push("ZADD", r.name + ":finished", wall_ms(), me);
    redlock::response added;
    auto [ec] = co_await r.observer.async_exec(done, added, use_tuple);
    if (ec) {
        std::fprintf(stderr, "observer: %s\n", ec.message().c_str());
        r.failed = true;
    }
}

asio::awaitable<void> holder(run& r, int index)
{
    std::minstd_rand rng(static_cast<unsigned>(getpid() * 100 + index));
    const auto me = std::to_string(getpid()) + ":" + std::to_string(index);
    redlock::semaphore s(r.client, r.name, r.limit, r.options);
    for (long n = 0; std::chrono::steady_clock::now() < r.end; ++n) {
        const auto called = wall_ms();
        auto [ec, p] = co_await s.async_try_acquire(use_tuple);
        if (ec) {
            if (ec != redlock::error::not_acquired) ++r.acquire_failures;
            co_await pause(ms(1 + rng() % 5));
            continue;
        }
        ++r.grants;
        const auto id = me + ":" + std::to_string(n) + ":" + p.id();
        const auto now = wall_ms();
        const auto valid_end = now + p.validity().count();
        redlock::request reg;
        reg.push("ZADD", r.name + ":holders", valid_end, id);
        reg.push("ZCOUNT", r.name + ":holders", "(" + std::to_string(now), "+inf");
        reg.push("ZADD", r.name + ":grants", now, std::to_string(called) + " " + id);
        redlock::response seen;
        auto [e1] = co_await r.observer.async_exec(reg, seen, use_tuple);
        if (e1 || seen.size() != 3 || !seen[1].as_integer()) {
            std::fprintf(stderr, "observer: %s\n", e1 ? e1.message().c_str() : "unexpected reply");
            r.failed = true;
            co_return;
        }
        const auto holders = *seen[1].as_integer();
        r.most = std::max<long>(r.most, static_cast<long>(holders));
        if (holders > r.limit) {
            ++r.overlaps;
            std::fprintf(stderr, "overlap: %lld holders, %s among them\n", static_cast<long long>(holders), id.c_str());
        }
        co_await pause(ms(2 + rng() % 20));
        redlock::request unreg;
        unreg.push("ZREM", r.name + ":holders", id);
        redlock::response gone;
        co_await r.observer.async_exec(unreg, gone, use_tuple);
        auto [e2] = co_await p.async_release(use_tuple);
        if (e2) ++r.release_failures;
    }
    co_await record_finished(r, me);
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 7 && argc != 8) {
        std::fprintf(stderr, "usage: %s NODE_URLS OBSERVER_URL NAME LIMIT COROUTINES DURATION_MS [fair]\n", argv[0]);
        return 2;
    }
    try {
        const auto nodes = helpers::fast_reconnecting_nodes(argv[1]);
        asio::io_context ctx;
        run r(ctx, nodes, redlock::parse_url(argv[2]));
        r.name = argv[3];
        r.limit = std::atoll(argv[4]);
        const int coroutines = std::atoi(argv[5]);
        r.end = std::chrono::steady_clock::now() + ms(std::atol(argv[6]));
        r.options.ttl = 1500ms;
        r.options.node_timeout = 100ms;
        r.options.fair = argc == 8 && std::string(argv[7]) == "fair";
        int running = coroutines;
        r.observer.async_connect([&](redlock::error_code ec) {
            if (ec) {
                std::fprintf(stderr, "observer: %s\n", ec.message().c_str());
                r.failed = true;
                return r.client.close();
            }
            for (int i = 0; i < coroutines; ++i)
                asio::co_spawn(ctx, holder(r, i), [&](std::exception_ptr e) {
                    if (e) r.failed = true;
                    if (--running == 0) {
                        r.client.close();
                        r.observer.close();
                    }
                });
        });
        ctx.run();
        std::printf("grants=%ld overlaps=%ld acquire_failures=%ld release_failures=%ld most=%ld\n", r.grants,
                    r.overlaps, r.acquire_failures, r.release_failures, r.most);
        return r.failed ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
