// `redlock bench --scenario hold`: what many held leases cost one client. It takes L leases with the
// watchdog (a bounded number of acquires in flight), holds them for the duration while the watchdog extends
// them, then releases them; it reports the memory they take, the client CPU their extensions cost, and how
// many were lost (none should be).
#include "bench_stats.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "output.hpp"
#include "run_to_exit_code.hpp"

#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the aligned_alloc of an Asio coroutine frame with the frame's own operator delete (which frees
// it correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <redlock/client.hpp>
#include <redlock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <fstream>
#include <functional>
#include <random>

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr int in_flight = 256;  // acquires at once: enough to pipeline, few enough not to flood the nodes

// Resident memory of this process, in bytes (VmRSS).
double resident_bytes()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
    return 0;
}

double cpu_seconds()
{
    const auto t = cpu_now();
    return t.user + t.system;
}

double seconds_since(clock::time_point t)
{
    return std::chrono::duration<double>(clock::now() - t).count();
}

struct hold_result {
    std::size_t nodes = 0;
    int leases = 0;
    long long ttl_ms = 0;
    int held = 0;
    double acquire_seconds = 0;
    double rss_before_mb = 0;
    double rss_held_mb = 0;
    double hold_seconds = 0;
    double hold_cpu_percent = 0;  // of one core, while the watchdog kept the leases
    int lost = 0;
    double release_seconds = 0;
    std::uint64_t errors = 0;
    std::string first_error;

    void count_error(std::string_view what, const error_code& ec)
    {
        if (errors++ == 0) first_error = std::string(what) + ": " + ec.message();
    }

    double bytes_per_lease() const { return held > 0 ? (rss_held_mb - rss_before_mb) * 1048576.0 / held : 0; }

    std::string json() const
    {
        return "{\"scenario\":\"hold\",\"nodes\":" + std::to_string(nodes) + ",\"leases\":" + std::to_string(leases) +
               ",\"ttl_ms\":" + std::to_string(ttl_ms) + ",\"held\":" + std::to_string(held) +
               ",\"acquire_seconds\":" + fixed(acquire_seconds, 2) + ",\"rss_before_mb\":" + fixed(rss_before_mb, 1) +
               ",\"rss_held_mb\":" + fixed(rss_held_mb, 1) + ",\"bytes_per_lease\":" + fixed(bytes_per_lease(), 0) +
               ",\"hold_seconds\":" + fixed(hold_seconds, 2) + ",\"hold_cpu_percent\":" + fixed(hold_cpu_percent, 1) +
               ",\"lost\":" + std::to_string(lost) + ",\"release_seconds\":" + fixed(release_seconds, 2) +
               ",\"errors\":" + std::to_string(errors) + "}\n";
    }
    std::string table() const
    {
        return "scenario     hold, " + std::to_string(nodes) + " node(s), " + std::to_string(leases) +
               " leases with the watchdog, ttl " + std::to_string(ttl_ms) + " ms (extended every ttl/3)\n" +
               "held         " + std::to_string(held) + " (acquired in " + fixed(acquire_seconds, 2) + " s)\n" +
               "memory       " + fixed(rss_held_mb, 1) + " MB resident (" + fixed(rss_before_mb, 1) + " MB before), " +
               fixed(bytes_per_lease(), 0) + " bytes per lease\n" + "watchdog     " + fixed(hold_cpu_percent, 1) +
               "% of a core over " + fixed(hold_seconds, 1) + " s\n" + "lost         " + std::to_string(lost) +
               "\nreleased     in " + fixed(release_seconds, 2) + " s\nerrors       " + std::to_string(errors) + "\n";
    }
};

// Calls start(k, finished) for every k in [0, count), with at most `in_flight` operations started and not
// finished; returns once all have finished. `start` returns false when it started nothing for k (then it does
// not call `finished`); an operation it starts must call `finished` once, never inside `start` itself.
using start_fn = std::function<bool(std::size_t k, std::function<void()> finished)>;
asio::awaitable<void> for_each_bounded(asio::io_context& ctx, int count, const start_fn& start)
{
    int next = 0, running = 0;
    asio::steady_timer done(ctx, clock::time_point::max());
    std::function<void()> refill = [&] {
        while (running < in_flight && next < count) {
            auto finished = [&] {
                --running;
                refill();
                if (running == 0 && next == count) done.cancel();
            };
            if (start(static_cast<std::size_t>(next++), finished)) ++running;
        }
    };
    refill();
    if (running > 0) co_await done.async_wait(use_tuple);
}

asio::awaitable<int> hold(asio::io_context& ctx, const bench_options& o, hold_result& r)
{
    client c(ctx.get_executor(), o.nodes);
    diagnostics diag;
    if (auto [ec] = co_await c.async_connect(diag, use_tuple); ec) {
        write_stderr("redlock: bench: cannot reach a quorum of the nodes: " + std::string(diag.message()) + "\n");
        co_return exit_code::unavailable;
    }
    std::random_device rd;
    const std::string prefix = "redlock-bench-hold:" + std::to_string(rd()) + ":";
    std::vector<lease> leases(static_cast<std::size_t>(o.leases));
    r.rss_before_mb = resident_bytes() / 1048576.0;

    const auto acquire_start = clock::now();
    // Named, not temporaries in the co_await: g++ 12 destroys such temporaries twice.
    const start_fn take = [&](std::size_t k, std::function<void()> finished) {
        mutex m(c, prefix + std::to_string(k), {.ttl = o.ttl, .watchdog = true});
        m.async_lock([&, k, finished](error_code ec, lease l) {
            if (ec) r.count_error("lock", ec);
            leases[k] = std::move(l);
            finished();
        });
        return true;
    };
    co_await for_each_bounded(ctx, o.leases, take);
    r.acquire_seconds = seconds_since(acquire_start);
    for (const auto& l : leases) r.held += l ? 1 : 0;
    r.rss_held_mb = resident_bytes() / 1048576.0;

    const auto hold_start = clock::now();
    const auto cpu_start = cpu_seconds();
    asio::steady_timer wait(ctx, o.duration);
    co_await wait.async_wait(use_tuple);
    r.hold_seconds = seconds_since(hold_start);
    r.hold_cpu_percent = (cpu_seconds() - cpu_start) * 100.0 / r.hold_seconds;
    for (const auto& l : leases) r.lost += l && l.lost() ? 1 : 0;

    const auto release_start = clock::now();
    const start_fn give_back = [&](std::size_t k, std::function<void()> finished) {
        if (!leases[k]) return false;
        leases[k].async_release([&, finished](error_code ec) {
            if (ec && ec != error::lost) r.count_error("release", ec);
            finished();
        });
        return true;
    };
    co_await for_each_bounded(ctx, o.leases, give_back);
    r.release_seconds = seconds_since(release_start);
    c.close();
    co_return exit_code::ok;
}

}  // namespace

int run_bench_hold(const bench_options& o)
{
    asio::io_context ctx(1);
    hold_result r;
    r.nodes = o.nodes.size();
    r.leases = o.leases;
    r.ttl_ms = o.ttl.count();
    const int code = run_to_exit_code(ctx, hold(ctx, o, r), "bench");
    if (code == exit_code::ok) write_stdout(o.json ? r.json() : r.table());
    if (r.errors > 0)
        write_stderr("redlock: bench: " + std::to_string(r.errors) + " errors; first: " + r.first_error + "\n");
    return code;
}

}  // namespace redlock::cli
