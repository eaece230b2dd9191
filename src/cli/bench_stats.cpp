#include "bench_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sys/resource.h>

namespace redlock::cli {
namespace {

std::string number_or_null(std::optional<std::int64_t> v)
{
    return v ? std::to_string(*v) : "null";
}

std::string number_or_dash(std::optional<std::int64_t> v)
{
    return v ? std::to_string(*v) : "-";
}

double ops_per_sec(const bench_result& r)
{
    return r.seconds > 0 ? static_cast<double>(r.ops) / r.seconds : 0.0;
}

}  // namespace

std::string fixed(double v, int decimals)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, v);
    return buffer;
}

cpu_times cpu_now()
{
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    auto seconds = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    return {seconds(u.ru_utime), seconds(u.ru_stime)};
}

std::optional<std::int64_t> percentile(std::vector<std::int64_t>& samples, double p)
{
    if (samples.empty()) return std::nullopt;
    std::sort(samples.begin(), samples.end());
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(samples.size())));
    rank = std::clamp<std::size_t>(rank, 1, samples.size());
    return samples[rank - 1];
}

namespace {

// Microseconds (or counts, for allocations) per operation, with two decimals; null without operations.
std::string per_op_or_null(const bench_result& r, double total, double scale)
{
    return r.ops > 0 ? fixed(total * scale / static_cast<double>(r.ops), 2) : std::string("null");
}

std::string allocs_per_op_or_null(const bench_result& r)
{
    return r.allocations ? per_op_or_null(r, static_cast<double>(*r.allocations), 1.0) : std::string("null");
}

// {"p50":..,"p99":..,"max":..} of `samples` (sorts them).
std::string short_percentiles(std::vector<std::int64_t>& samples)
{
    return "{\"p50\":" + number_or_null(percentile(samples, 50)) +
           ",\"p99\":" + number_or_null(percentile(samples, 99)) +
           ",\"max\":" + number_or_null(percentile(samples, 100)) + "}";
}

}  // namespace

std::string to_json(bench_result r)
{
    std::string out = "{";
    out += "\"scenario\":\"" + r.scenario + "\"";
    out += std::string(",\"fencing\":") + (r.fencing ? "true" : "false");
    out += ",\"nodes\":" + std::to_string(r.nodes);
    out += ",\"clients\":" + std::to_string(r.clients);
    out += ",\"workers\":" + std::to_string(r.workers);
    out += ",\"ops\":" + std::to_string(r.ops);
    out += ",\"ops_per_sec\":" + fixed(ops_per_sec(r), 1);
    out += ",\"cpu_us_per_op\":" + per_op_or_null(r, r.user_seconds + r.system_seconds, 1e6);
    out += ",\"user_us_per_op\":" + per_op_or_null(r, r.user_seconds, 1e6);
    out += ",\"sys_us_per_op\":" + per_op_or_null(r, r.system_seconds, 1e6);
    out += ",\"allocs_per_op\":" + allocs_per_op_or_null(r);
    out += ",\"acquire_us\":{\"p50\":" + number_or_null(percentile(r.acquire_us, 50)) +
           ",\"p90\":" + number_or_null(percentile(r.acquire_us, 90)) +
           ",\"p99\":" + number_or_null(percentile(r.acquire_us, 99)) +
           ",\"max\":" + number_or_null(percentile(r.acquire_us, 100)) + "}";
    out += ",\"handoff_us\":{\"p50\":" + number_or_null(percentile(r.handoff_us, 50)) +
           ",\"p99\":" + number_or_null(percentile(r.handoff_us, 99)) + "}";
    if (r.semaphore) {
        auto& s = *r.semaphore;  // percentile() sorts the samples
        out += ",\"limit\":" + std::to_string(s.limit);
        out += std::string(",\"fair\":") + (s.fair ? "true" : "false");
        out += ",\"max_held\":" + std::to_string(s.max_held);
        out += ",\"first_try\":" + std::to_string(s.first_try);
        out += ",\"first_try_us\":" + short_percentiles(s.first_try_us);
        out += ",\"waited\":" + std::to_string(s.waited);
        out += ",\"waited_us\":" + short_percentiles(s.waited_us);
        out += ",\"attempts\":" + std::to_string(s.attempts);
        out += ",\"woken_by_release\":" + std::to_string(s.woken_by_release);
        out += ",\"timed_retries\":" + std::to_string(s.timed_retries);
    }
    if (r.waits) {
        out += ",\"lock\":\"" + r.lock_kind + "\"";
        out += ",\"handoffs\":" + std::to_string(r.handoff_us.size());
        out += ",\"handoff_max_us\":" + number_or_null(percentile(r.handoff_us, 100));
        out += ",\"attempts\":" + std::to_string(r.waits->attempts);
        out += ",\"woken_by_release\":" + std::to_string(r.waits->woken_by_release);
        out += ",\"timed_retries\":" + std::to_string(r.waits->timed_retries);
        out += ",\"server_calls\":{";
        for (std::size_t i = 0; i < r.server_calls.size(); ++i)
            out += (i ? ",\"" : "\"") + r.server_calls[i].first + "\":" + std::to_string(r.server_calls[i].second);
        out += "}";
    }
    if (r.limiter) {
        out += ",\"strategy\":\"" + r.limiter->strategy + "\"";
        out += ",\"rate\":\"" + r.limiter->rate + "\"";
        out += ",\"burst\":" + std::to_string(r.limiter->burst);
        out += ",\"admitted\":" + std::to_string(r.limiter->admitted);
        out += ",\"limited\":" + std::to_string(r.limiter->limited);
    }
    out += ",\"errors\":" + std::to_string(r.errors);
    out += "}\n";
    return out;
}

std::string to_table(bench_result r)
{
    std::string out;
    out += "scenario     " + r.scenario + (r.fencing ? ", with fencing tokens" : "") + "\n";
    out += "nodes        " + std::to_string(r.nodes) + "\n";
    out += "clients      " + std::to_string(r.clients) + " x " + std::to_string(r.workers) + " worker(s)\n";
    out += "duration     " + fixed(r.seconds, 2) + " s\n";
    out += "operations   " + std::to_string(r.ops) +
           (r.limiter     ? " (decisions)\n"
            : r.semaphore ? " (permit acquire + release)\n"
                          : " (lock + release)\n");
    out += (r.limiter ? "decisions/s  " : "ops/s        ") + fixed(ops_per_sec(r), 1) + "\n";
    if (r.limiter) {
        const auto& l = *r.limiter;
        out += "limiter      " + l.strategy + " " + l.rate +
               (l.strategy == "gcra" ? ", burst " + std::to_string(l.burst) : "") +
               " per worker's key: " + std::to_string(l.admitted) + " admitted, " + std::to_string(l.limited) +
               " limited\n";
    }
    if (r.ops > 0) {
        out += "cpu/op       " + per_op_or_null(r, r.user_seconds + r.system_seconds, 1e6) +
               " us (this process: user " + per_op_or_null(r, r.user_seconds, 1e6) + " + system " +
               per_op_or_null(r, r.system_seconds, 1e6) + ")\n";
        if (r.allocations)
            out += "allocs/op    " + allocs_per_op_or_null(r) + " (calls of operator new in this process)\n";
    }
    out += "errors       " + std::to_string(r.errors) + "\n";
    if (r.has_handoff) {
        out += "handoffs     " + std::to_string(r.handoff_us.size()) + " of " + std::to_string(r.grants) +
               " grants went to another worker than the one that released\n";
    }
    if (r.semaphore) {
        const auto& s = *r.semaphore;
        out += "semaphore    limit " + std::to_string(s.limit) + (s.fair ? ", fair" : "") + "; at most " +
               std::to_string(s.max_held) + " permit(s) held at once by this run\n";
        out += "acquires     " + std::to_string(s.first_try) + " found room at once, " + std::to_string(s.waited) +
               " waited; " +
               (s.first_try + s.waited > 0 ? fixed(static_cast<double>(s.attempts) / (s.first_try + s.waited), 2)
                                           : std::string("-")) +
               " attempts per permit; retries woken by a release " + std::to_string(s.woken_by_release) +
               ", by a timer " + std::to_string(s.timed_retries) + "\n";
    }
    if (r.waits && r.grants > 0) {
        const auto per_grant = [&](std::uint64_t n) { return fixed(static_cast<double>(n) / r.grants, 2); };
        out += "lock         " + r.lock_kind + "\n";
        out += "waiting      " + per_grant(r.waits->attempts) + " attempts per grant; retries woken by a release " +
               std::to_string(r.waits->woken_by_release) + ", by a timer " + std::to_string(r.waits->timed_retries) +
               "\n";
        std::string calls;
        for (const auto& [command, n] : r.server_calls) calls += " " + command + " " + per_grant(n);
        out += "server/grant" + calls + " (calls over every node)\n";
    }
    char line[256];
    std::snprintf(line, sizeof line, "%-12s %10s %10s %10s %10s\n", "latency us", "p50", "p90", "p99", "max");
    out += line;
    std::snprintf(
        line, sizeof line, "%-12s %10s %10s %10s %10s\n", r.limiter ? "decision" : "acquire",
        number_or_dash(percentile(r.acquire_us, 50)).c_str(), number_or_dash(percentile(r.acquire_us, 90)).c_str(),
        number_or_dash(percentile(r.acquire_us, 99)).c_str(), number_or_dash(percentile(r.acquire_us, 100)).c_str());
    out += line;
    if (r.semaphore) {
        for (auto* samples : {&r.semaphore->first_try_us, &r.semaphore->waited_us}) {
            std::snprintf(
                line, sizeof line, "%-12s %10s %10s %10s %10s\n",
                samples == &r.semaphore->waited_us ? "  waited" : "  at once",
                number_or_dash(percentile(*samples, 50)).c_str(), number_or_dash(percentile(*samples, 90)).c_str(),
                number_or_dash(percentile(*samples, 99)).c_str(), number_or_dash(percentile(*samples, 100)).c_str());
            out += line;
        }
    }
    if (r.has_handoff) {
        std::snprintf(line, sizeof line, "%-12s %10s %10s %10s %10s\n", "handoff",
                      number_or_dash(percentile(r.handoff_us, 50)).c_str(),
                      number_or_dash(percentile(r.handoff_us, 90)).c_str(),
                      number_or_dash(percentile(r.handoff_us, 99)).c_str(),
                      number_or_dash(percentile(r.handoff_us, 100)).c_str());
        out += line;
    }
    return out;
}

}  // namespace redlock::cli
