// `redlock bench --scenario cache`: what a cache hit costs. C cache guards (each its own client and store
// connection, as C processes would have) of W workers each; every worker first loads its own key (a miss, the
// warm-up), then reads it in a loop for the duration (hits: the first phase). Then the same workers run plain GETs
// of the same keys on the same connections for the same time (the second phase): the difference is the guard's
// own cost.
#include "cli/bench/scenarios.hpp"

#if defined(__GNUC__) && !defined(__clang__)
// As in hold.cpp: g++ 12 misreports the aligned allocation of some coroutine frames.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <redlock/cache_guard.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <memory>

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t value_bytes = 100;
enum phase_index { hits = 0, gets = 1 };

asio::awaitable<std::optional<std::string>> load_value()
{
    co_return std::string(value_bytes, 'v');
}

// One phase's row: {ops, ops_per_sec, cpu_us_per_op, allocs_per_op, latency_us {p50, p90, p99, max}}, or the table's.
struct row {
    bench_phase& p;

    double ops_per_sec() const { return p.seconds > 0 ? static_cast<double>(p.latency_us.size()) / p.seconds : 0; }
    std::string per_op(double total, double scale) const
    {
        return p.latency_us.empty() ? std::string("null")
                                    : fixed(total * scale / static_cast<double>(p.latency_us.size()), 2);
    }
    std::string cpu_per_op() const { return per_op(p.cpu.user + p.cpu.system, 1e6); }
    std::string at(double pct) { return std::to_string(percentile(p.latency_us, pct).value_or(0)); }
    std::string json()
    {
        return "{\"ops\":" + std::to_string(p.latency_us.size()) + json_field("ops_per_sec", fixed(ops_per_sec(), 1)) +
               json_field("cpu_us_per_op", cpu_per_op()) +
               json_field("allocs_per_op",
                          p.allocations ? per_op(static_cast<double>(*p.allocations), 1) : std::string("null")) +
               json_field("latency_us", "{\"p50\":" + at(50) + ",\"p90\":" + at(90) + ",\"p99\":" + at(99) +
                                            ",\"max\":" + at(100) + "}") +
               "}";
    }
    std::string table(const char* label)
    {
        char line[256];
        std::snprintf(line, sizeof line, "%-12s %10s %10s %10s %10s %12s %10s %10s\n", label, at(50).c_str(),
                      at(90).c_str(), at(99).c_str(), at(100).c_str(), fixed(ops_per_sec(), 0).c_str(),
                      cpu_per_op().c_str(),
                      p.allocations ? per_op(static_cast<double>(*p.allocations), 1).c_str() : "-");
        return line;
    }
};

class cache_bench final : public bench_scenario {
public:
    explicit cache_bench(const bench_options& o) : o_(o), prefix_("redlock-bench-cache:" + bench_run_id() + ":")
    {
        clients = o.clients;
        workers_per_client = o.workers;
        phases = 2;
        stores = true;
    }

    // Each client's guard (its rebuild locks on every node, the values on the first), and every key loaded once:
    // the measured reads are hits.
    asio::awaitable<void> prepare(bench_driver& d) override
    {
        for (std::size_t c = 0; c < d.client_count(); ++c) {
            guards_.push_back(std::make_unique<cache_guard>(d.client_at(c), d.store_at(c),
                                                            cache_options{.ttl = std::chrono::hours(1)}));
        }
        cache_loader loader = [] { return load_value(); };
        for (int k = 0; k < o_.clients * o_.workers && !d.stopping(); ++k) {
            auto [ec, value] = co_await guards_[static_cast<std::size_t>(k / o_.workers)]->async_get_or_load(
                key(k), loader, use_tuple);
            if (ec) d.count_error("load", ec);
        }
    }

    // Reads the worker's key until the end: through the guard (hits), or as a plain GET on the store.
    asio::awaitable<void> work(bench_worker& w) override
    {
        const std::string k = key(w.index());
        const auto client = static_cast<std::size_t>(w.index() / o_.workers);
        auto& guard = *guards_[client];
        const auto& store = w.shared_store();
        cache_loader loader = [] { return load_value(); };
        request get;
        get.push("GET", k);
        response resp;
        while (w.running()) {
            const auto t0 = bench_clock::now();
            if (w.phase() == hits) {
                auto [ec, value] = co_await guard.async_get_or_load(k, loader, use_tuple);
                if (ec) {
                    co_await w.failed("get_or_load", ec);
                    continue;
                }
            } else {
                auto [ec] = co_await store.async_exec(get, resp, k, use_tuple);
                if (ec) {
                    co_await w.failed("GET", ec);
                    continue;
                }
            }
            w.record(bench_clock::now() - t0);
            w.done();
        }
    }

    // JSON: exactly the keys scenario, nodes, clients, workers, value_bytes, hit {ops, ops_per_sec, cpu_us_per_op,
    // allocs_per_op, latency_us {p50, p90, p99, max}}, get {the same}, errors.
    std::string output(bench_figures& f, bool json) override
    {
        row hit{f.phases[hits]}, get{f.phases[gets]};
        if (json) {
            return "{\"scenario\":\"cache\"" + json_field("nodes", std::to_string(o_.nodes.size())) +
                   json_field("clients", std::to_string(o_.clients)) +
                   json_field("workers", std::to_string(o_.workers)) +
                   json_field("value_bytes", std::to_string(value_bytes)) + json_field("hit", hit.json()) +
                   json_field("get", get.json()) + json_field("errors", std::to_string(f.errors)) + "}\n";
        }
        std::string out = "scenario     cache, " + std::to_string(o_.nodes.size()) +
                          " node(s) (values on the first), " + std::to_string(o_.clients) + " client(s) x " +
                          std::to_string(o_.workers) + " worker(s), " + std::to_string(value_bytes) + "-byte values\n";
        char line[256];
        std::snprintf(line, sizeof line, "%-12s %10s %10s %10s %10s %12s %10s %10s\n", "us", "p50", "p90", "p99", "max",
                      "ops/s", "cpu/op", "allocs/op");
        out += line;
        out += hit.table("cache hit");
        out += get.table("plain GET");
        out += "errors       " + std::to_string(f.errors) + "\n";
        return out;
    }

private:
    std::string key(int worker) const { return prefix_ + std::to_string(worker); }

    const bench_options& o_;
    const std::string prefix_;
    std::vector<std::unique_ptr<cache_guard>> guards_;  // per client
};

}  // namespace

std::unique_ptr<bench_scenario> cache_scenario(const bench_options& o)
{
    return std::make_unique<cache_bench>(o);
}

}  // namespace redlock::cli
