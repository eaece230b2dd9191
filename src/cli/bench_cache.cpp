// `redlock bench --scenario cache`: what a cache hit costs. C cache guards (each its own client and store
// connection, as C processes would have) of W workers each; every worker first loads its own key (a miss),
// then reads it in a loop for the duration (hits). Then the same workers run plain GETs of the same keys on the
// same connections for the same time: the difference is the guard's own cost.
#include "alloc_count.hpp"
#include "bench_stats.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "output.hpp"
#include "run_to_exit_code.hpp"

#if defined(__GNUC__) && !defined(__clang__)
// As in bench_hold.cpp: g++ 12 misreports the aligned allocation of some coroutine frames.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <redlock/cache_guard.hpp>
#include <redlock/client.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <memory>
#include <random>

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t value_bytes = 100;

struct phase {
    std::vector<std::int64_t> us;
    double seconds = 0;
    double cpu_seconds = 0;
    std::optional<std::uint64_t> allocations;

    double ops_per_sec() const { return seconds > 0 ? static_cast<double>(us.size()) / seconds : 0; }
    std::string per_op(double total, double scale) const
    {
        return us.empty() ? std::string("null") : fixed(total * scale / static_cast<double>(us.size()), 2);
    }
    std::string at(double p) { return std::to_string(percentile(us, p).value_or(0)); }
    std::string json()
    {
        return "{\"ops\":" + std::to_string(us.size()) + ",\"ops_per_sec\":" + fixed(ops_per_sec(), 1) +
               ",\"cpu_us_per_op\":" + per_op(cpu_seconds, 1e6) + ",\"allocs_per_op\":" +
               (allocations ? per_op(static_cast<double>(*allocations), 1) : std::string("null")) +
               ",\"latency_us\":{\"p50\":" + at(50) + ",\"p90\":" + at(90) + ",\"p99\":" + at(99) +
               ",\"max\":" + at(100) + "}}";
    }
};

struct cache_result {
    std::size_t nodes = 0;
    int clients = 0, workers = 0;
    phase hits, gets;
    std::uint64_t errors = 0;
    std::string first_error;

    void count_error(std::string_view what, const error_code& ec)
    {
        if (errors++ == 0) first_error = std::string(what) + ": " + ec.message();
    }

    // Exactly the keys scenario, nodes, clients, workers, value_bytes, hit {ops, ops_per_sec, cpu_us_per_op,
    // allocs_per_op, latency_us {p50, p90, p99, max}}, get {the same}, errors.
    std::string json()
    {
        return "{\"scenario\":\"cache\",\"nodes\":" + std::to_string(nodes) +
               ",\"clients\":" + std::to_string(clients) + ",\"workers\":" + std::to_string(workers) +
               ",\"value_bytes\":" + std::to_string(value_bytes) + ",\"hit\":" + hits.json() +
               ",\"get\":" + gets.json() + ",\"errors\":" + std::to_string(errors) + "}\n";
    }

    std::string table()
    {
        std::string out = "scenario     cache, " + std::to_string(nodes) + " node(s) (values on the first), " +
                          std::to_string(clients) + " client(s) x " + std::to_string(workers) + " worker(s), " +
                          std::to_string(value_bytes) + "-byte values\n";
        char line[256];
        std::snprintf(line, sizeof line, "%-12s %10s %10s %10s %10s %12s %10s %10s\n", "us", "p50", "p90", "p99", "max",
                      "ops/s", "cpu/op", "allocs/op");
        out += line;
        for (auto* p : {&hits, &gets}) {
            std::snprintf(line, sizeof line, "%-12s %10s %10s %10s %10s %12s %10s %10s\n",
                          p == &hits ? "cache hit" : "plain GET", p->at(50).c_str(), p->at(90).c_str(),
                          p->at(99).c_str(), p->at(100).c_str(), fixed(p->ops_per_sec(), 0).c_str(),
                          p->per_op(p->cpu_seconds, 1e6).c_str(),
                          p->allocations ? p->per_op(static_cast<double>(*p->allocations), 1).c_str() : "-");
            out += line;
        }
        out += "errors       " + std::to_string(errors) + "\n";
        return out;
    }
};

struct bench_client {
    bench_client(asio::io_context& ctx, const bench_options& o)
        : locks(ctx.get_executor(), o.nodes),
          store(make_connection_node(ctx.get_executor(), o.nodes.front())),
          guard(locks, store, cache_options{.ttl = std::chrono::hours(1)})
    {}
    client locks;
    std::shared_ptr<node> store;
    cache_guard guard;
};

asio::awaitable<std::optional<std::string>> load_value()
{
    co_return std::string(value_bytes, 'v');
}

asio::awaitable<void> sleep_until(clock::time_point t)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, t);
    co_await timer.async_wait(use_tuple);
}

// Reads `key` until `end`: through the guard (hits), or as a plain GET on the store.
asio::awaitable<void> reader(bench_client& c, std::string key, bool through_guard, clock::time_point end,
                             cache_result& r, phase& p)
{
    cache_loader loader = [] { return load_value(); };
    request get;
    get.push("GET", key);
    response resp;
    while (clock::now() < end) {
        const auto t0 = clock::now();
        if (through_guard) {
            auto [ec, value] = co_await c.guard.async_get_or_load(key, loader, use_tuple);
            if (ec) {
                r.count_error("get_or_load", ec);
                co_await sleep_until(clock::now() + std::chrono::milliseconds(10));
                continue;
            }
        } else {
            auto [ec] = co_await asio::async_initiate<decltype(use_tuple), void(error_code)>(
                [&](auto handler) { c.store->async_exec(get, resp, key, std::move(handler)); }, use_tuple);
            if (ec) {
                r.count_error("GET", ec);
                co_await sleep_until(clock::now() + std::chrono::milliseconds(10));
                continue;
            }
        }
        p.us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
    }
}

asio::awaitable<int> run(asio::io_context& ctx, const bench_options& o, cache_result& r)
{
    std::vector<std::unique_ptr<bench_client>> clients;
    for (int i = 0; i < o.clients; ++i) clients.push_back(std::make_unique<bench_client>(ctx, o));
    for (auto& c : clients) {
        diagnostics diag;
        if (auto [ec] = co_await c->locks.async_connect(diag, use_tuple); ec) {
            write_stderr("redlock: bench: cannot reach a quorum of the nodes: " + std::string(diag.message()) + "\n");
            co_return exit_code::unavailable;
        }
    }
    std::random_device rd;
    const std::string prefix = "redlock-bench-cache:" + std::to_string(rd()) + ":";
    auto key = [&](int client, int worker) { return prefix + std::to_string(client * o.workers + worker); };
    // The misses: every key loaded once, so the measured reads are hits.
    cache_loader loader = [] { return load_value(); };
    for (int c = 0; c < o.clients; ++c)
        for (int w = 0; w < o.workers; ++w) {
            auto [ec, value] =
                co_await clients[static_cast<std::size_t>(c)]->guard.async_get_or_load(key(c, w), loader, use_tuple);
            if (ec) r.count_error("load", ec);
        }
    for (bool through_guard : {true, false}) {
        phase& p = through_guard ? r.hits : r.gets;
        const auto start = clock::now();
        const auto cpu_start = cpu_now();
        const auto allocations_start = allocation_count();
        const auto end = start + o.duration;
        int running = o.clients * o.workers;
        asio::steady_timer all_done(ctx, clock::time_point::max());
        for (int c = 0; c < o.clients; ++c)
            for (int w = 0; w < o.workers; ++w)
                asio::co_spawn(ctx, reader(*clients[static_cast<std::size_t>(c)], key(c, w), through_guard, end, r, p),
                               [&](std::exception_ptr e) {
                                   if (e) std::rethrow_exception(e);
                                   if (--running == 0) all_done.cancel();
                               });
        co_await all_done.async_wait(use_tuple);
        p.seconds = std::chrono::duration<double>(clock::now() - start).count();
        const auto cpu_end = cpu_now();
        p.cpu_seconds = (cpu_end.user - cpu_start.user) + (cpu_end.system - cpu_start.system);
        if (counting_allocations()) p.allocations = allocation_count() - allocations_start;
    }
    for (auto& c : clients) {
        c->locks.close();
        c->store->close();
    }
    co_return exit_code::ok;
}

}  // namespace

int run_bench_cache(const bench_options& o)
{
    asio::io_context ctx(1);
    cache_result r;
    r.nodes = o.nodes.size();
    r.clients = o.clients;
    r.workers = o.workers;
    const int code = run_to_exit_code(ctx, run(ctx, o, r), "bench");
    if (code == exit_code::ok) write_stdout(o.json ? r.json() : r.table());
    if (r.errors > 0)
        write_stderr("redlock: bench: " + std::to_string(r.errors) + " errors; first: " + r.first_error + "\n");
    return code;
}

}  // namespace redlock::cli
