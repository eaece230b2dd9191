#include "cli/bench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sys/resource.h>

namespace redlock::cli {
namespace {

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

// One row of the latency table: label, p50, p90, p99, max.
std::string latency_row(std::string_view label, std::vector<std::int64_t>& samples)
{
    char line[256];
    std::snprintf(line, sizeof line, "%-12s %10s %10s %10s %10s\n", std::string(label).c_str(),
                  number_or_dash(percentile(samples, 50)).c_str(), number_or_dash(percentile(samples, 90)).c_str(),
                  number_or_dash(percentile(samples, 99)).c_str(), number_or_dash(percentile(samples, 100)).c_str());
    return line;
}

}  // namespace

std::string number_or_null(std::optional<std::int64_t> v)
{
    return v ? std::to_string(*v) : "null";
}

std::string json_field(std::string_view key, std::string_view value)
{
    return ",\"" + std::string(key) + "\":" + std::string(value);
}

std::string json_string(std::string_view text)
{
    return "\"" + std::string(text) + "\"";
}

std::string short_percentiles(std::vector<std::int64_t>& samples)
{
    return "{\"p50\":" + number_or_null(percentile(samples, 50)) +
           ",\"p99\":" + number_or_null(percentile(samples, 99)) +
           ",\"max\":" + number_or_null(percentile(samples, 100)) + "}";
}

std::string to_json(bench_result r)
{
    std::string out = "{";
    out += "\"scenario\":" + json_string(r.scenario);
    out += json_field("fencing", r.fencing ? "true" : "false");
    out += json_field("nodes", std::to_string(r.nodes));
    out += json_field("clients", std::to_string(r.clients));
    out += json_field("workers", std::to_string(r.workers));
    out += json_field("ops", std::to_string(r.ops));
    out += json_field("ops_per_sec", fixed(ops_per_sec(r), 1));
    out += json_field("cpu_us_per_op", per_op_or_null(r, r.user_seconds + r.system_seconds, 1e6));
    out += json_field("user_us_per_op", per_op_or_null(r, r.user_seconds, 1e6));
    out += json_field("sys_us_per_op", per_op_or_null(r, r.system_seconds, 1e6));
    out += json_field("allocs_per_op", allocs_per_op_or_null(r));
    out += json_field("acquire_us", "{\"p50\":" + number_or_null(percentile(r.acquire_us, 50)) +
                                        ",\"p90\":" + number_or_null(percentile(r.acquire_us, 90)) +
                                        ",\"p99\":" + number_or_null(percentile(r.acquire_us, 99)) +
                                        ",\"max\":" + number_or_null(percentile(r.acquire_us, 100)) + "}");
    out += json_field("handoff_us", "{\"p50\":" + number_or_null(percentile(r.handoff_us, 50)) +
                                        ",\"p99\":" + number_or_null(percentile(r.handoff_us, 99)) + "}");
    out += r.columns.json;
    out += json_field("errors", std::to_string(r.errors));
    out += "}\n";
    return out;
}

std::string to_table(bench_result r)
{
    const auto& c = r.columns;
    std::string out;
    auto lines = [&out](const std::vector<std::string>& more) {
        for (const auto& line : more) out += line + "\n";
    };
    out += "scenario     " + r.scenario + (r.fencing ? ", with fencing tokens" : "") + "\n";
    out += "nodes        " + std::to_string(r.nodes) + "\n";
    out += "clients      " + std::to_string(r.clients) + " x " + std::to_string(r.workers) + " worker(s)\n";
    out += "duration     " + fixed(r.seconds, 2) + " s\n";
    out += "operations   " + std::to_string(r.ops) + " (" + c.operation + ")\n";
    char label[16];
    std::snprintf(label, sizeof label, "%-13s", c.rate.c_str());
    out += label + fixed(ops_per_sec(r), 1) + "\n";
    lines(c.after_rate);
    if (r.ops > 0) {
        out += "cpu/op       " + per_op_or_null(r, r.user_seconds + r.system_seconds, 1e6) +
               " us (this process: user " + per_op_or_null(r, r.user_seconds, 1e6) + " + system " +
               per_op_or_null(r, r.system_seconds, 1e6) + ")\n";
        if (r.allocations)
            out += "allocs/op    " + allocs_per_op_or_null(r) + " (calls of operator new in this process)\n";
    }
    out += "errors       " + std::to_string(r.errors) + "\n";
    lines(c.after_errors);
    char line[256];
    std::snprintf(line, sizeof line, "%-12s %10s %10s %10s %10s\n", "latency us", "p50", "p90", "p99", "max");
    out += line;
    out += latency_row(c.latency, r.acquire_us);
    for (auto& [name, samples] : r.columns.latency_rows) out += latency_row(name, samples);
    return out;
}

}  // namespace redlock::cli
