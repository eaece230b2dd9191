// `redlock bench --scenario hold`: what many held leases cost one client. It takes L leases with the watchdog
// (a bounded number of acquires in flight), holds them for the duration while the watchdog extends them (a phase
// without workers: the driver measures the CPU the watchdog takes), then releases them; it reports the memory
// they take, that CPU, and how many were lost (none should be).
#include "cli/bench/scenarios.hpp"

#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the aligned_alloc of an Asio coroutine frame with the frame's own operator delete (which frees
// it correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <redlock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fstream>
#include <functional>

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr int in_flight = 256;  // acquires at once: enough to pipeline, few enough not to flood the nodes

// A memory figure of this process from /proc/self/status, in MB: VmRSS (resident now) or VmHWM (its peak).
double status_mb(const std::string& field)
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
    return 0;
}

double resident_mb()
{
    return status_mb("VmRSS");
}

double seconds_since(bench_clock::time_point t)
{
    return std::chrono::duration<double>(bench_clock::now() - t).count();
}

// Calls start(k, finished) for every k in [0, count), with at most `in_flight` operations started and not
// finished; returns once all have finished. `start` returns false when it started nothing for k (then it does
// not call `finished`); an operation it starts must call `finished` once, never inside `start` itself.
using start_fn = std::function<bool(std::size_t k, std::function<void()> finished)>;
asio::awaitable<void> for_each_bounded(asio::io_context& ctx, int count, const start_fn& start)
{
    int next = 0, running = 0;
    asio::steady_timer done(ctx, bench_clock::time_point::max());
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

class hold_bench final : public bench_scenario {
public:
    explicit hold_bench(const bench_options& o)
        : o_(o), prefix_("redlock-bench-hold:" + bench_run_id() + ":"), leases_(static_cast<std::size_t>(o.leases))
    {
        clients = 1;
        workers_per_client = 0;
    }

    // The leases, taken before the clock starts.
    asio::awaitable<void> prepare(bench_driver& d) override
    {
        rss_before_mb_ = resident_mb();
        const auto start = bench_clock::now();
        // Named, not temporaries in the co_await: g++ 12 destroys such temporaries twice.
        const start_fn take = [&](std::size_t k, std::function<void()> finished) {
            if (d.stopping()) return false;
            mutex m(d.client_at(0), prefix_ + std::to_string(k), {.ttl = o_.ttl, .watchdog = true});
            m.async_lock([&, k, finished](error_code ec, lease l) {
                if (ec) d.count_error("lock", ec);
                leases_[k] = std::move(l);
                finished();
            });
            return true;
        };
        co_await for_each_bounded(d.context(), o_.leases, take);
        acquire_seconds_ = seconds_since(start);
        for (const auto& l : leases_) held_ += l ? 1 : 0;
        rss_held_mb_ = resident_mb();
        const auto stats = d.client_at(0).stats();
        extensions_before_ = stats.extensions;
        extension_failures_before_ = stats.extension_failures;
    }

    asio::awaitable<void> work(bench_worker&) override { co_return; }  // no workers: the watchdog works alone

    asio::awaitable<void> conclude(bench_driver& d) override
    {
        for (const auto& l : leases_) lost_ += l && l.lost() ? 1 : 0;
        const auto stats = d.client_at(0).stats();
        extensions_ = stats.extensions - extensions_before_;
        extension_failures_ = stats.extension_failures - extension_failures_before_;
        rss_peak_mb_ = status_mb("VmHWM");  // before the releases, whose requests are not the leases' cost
        const auto start = bench_clock::now();
        const start_fn give_back = [&](std::size_t k, std::function<void()> finished) {
            if (!leases_[k]) return false;
            leases_[k].async_release([&, finished](error_code ec) {
                if (ec && ec != error::lost) d.count_error("release", ec);
                finished();
            });
            return true;
        };
        co_await for_each_bounded(d.context(), o_.leases, give_back);
        release_seconds_ = seconds_since(start);
    }

    std::string output(bench_figures& f, bool json) override
    {
        const auto& hold = f.phases.front();
        const double cpu_seconds = hold.cpu.user + hold.cpu.system;
        const double cpu_percent = hold.seconds > 0 ? cpu_seconds * 100.0 / hold.seconds : 0;
        // What the watchdog costs the client per successful extension (its batches spread a script call over many);
        // none made: null in JSON, as the other scenarios' per-op figures.
        const std::string us_per_extension =
            extensions_ > 0 ? fixed(cpu_seconds * 1e6 / static_cast<double>(extensions_), 2) : "null";
        const double bytes_per_lease = held_ > 0 ? (rss_held_mb_ - rss_before_mb_) * 1048576.0 / held_ : 0;
        const std::string ttl_ms = std::to_string(o_.ttl.count());
        if (json) {
            return "{\"scenario\":\"hold\"" + json_field("nodes", std::to_string(o_.nodes.size())) +
                   json_field("leases", std::to_string(o_.leases)) + json_field("ttl_ms", ttl_ms) +
                   json_field("held", std::to_string(held_)) +
                   json_field("acquire_seconds", fixed(acquire_seconds_, 2)) +
                   json_field("rss_before_mb", fixed(rss_before_mb_, 1)) +
                   json_field("rss_held_mb", fixed(rss_held_mb_, 1)) +
                   json_field("rss_peak_mb", fixed(rss_peak_mb_, 1)) +
                   json_field("bytes_per_lease", fixed(bytes_per_lease, 0)) +
                   json_field("hold_seconds", fixed(hold.seconds, 2)) +
                   json_field("hold_cpu_percent", fixed(cpu_percent, 1)) +
                   json_field("extensions", std::to_string(extensions_)) +
                   json_field("extension_failures", std::to_string(extension_failures_)) +
                   json_field("us_per_extension", us_per_extension) + json_field("lost", std::to_string(lost_)) +
                   json_field("release_seconds", fixed(release_seconds_, 2)) +
                   json_field("errors", std::to_string(f.errors)) + "}\n";
        }
        return "scenario     hold, " + std::to_string(o_.nodes.size()) + " node(s), " + std::to_string(o_.leases) +
               " leases with the watchdog, ttl " + ttl_ms + " ms (extended every ttl/3)\n" + "held         " +
               std::to_string(held_) + " (acquired in " + fixed(acquire_seconds_, 2) + " s)\n" + "memory       " +
               fixed(rss_held_mb_, 1) + " MB resident (" + fixed(rss_before_mb_, 1) + " MB before, peak " +
               fixed(rss_peak_mb_, 1) + " MB), " + fixed(bytes_per_lease, 0) + " bytes per lease\n" + "watchdog     " +
               fixed(cpu_percent, 1) + "% of a core over " + fixed(hold.seconds, 1) + " s, " +
               std::to_string(extensions_) + " extensions (" + std::to_string(extension_failures_) + " failed), " +
               us_per_extension + " us each\n" + "lost         " + std::to_string(lost_) + "\nreleased     in " +
               fixed(release_seconds_, 2) + " s\nerrors       " + std::to_string(f.errors) + "\n";
    }

private:
    const bench_options& o_;
    const std::string prefix_;
    std::vector<lease> leases_;
    int held_ = 0;
    int lost_ = 0;
    double acquire_seconds_ = 0;
    double rss_before_mb_ = 0;
    double rss_held_mb_ = 0;
    double rss_peak_mb_ = 0;
    std::uint64_t extensions_before_ = 0;  // successful ones
    std::uint64_t extensions_ = 0;
    std::uint64_t extension_failures_before_ = 0;
    std::uint64_t extension_failures_ = 0;
    double release_seconds_ = 0;
};

}  // namespace

std::unique_ptr<bench_scenario> hold_scenario(const bench_options& o)
{
    return std::make_unique<hold_bench>(o);
}

}  // namespace redlock::cli
