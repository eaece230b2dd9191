// What a `redlock bench` run measured, its percentiles, and the table and JSON of the scenarios that report per
// operation (uncontended, contended, handoff, semaphore, limiter): the figures every one has, plus each
// scenario's own columns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::cli {

// `v` with `decimals` digits after the point ("12.70").
std::string fixed(double v, int decimals);

// User and system CPU time of this process so far, in seconds.
struct cpu_times {
    double user = 0;
    double system = 0;
};
cpu_times cpu_now();

// Nearest-rank percentile (p in (0, 100]) of the samples; nullopt when there are none. Sorts `samples`.
std::optional<std::int64_t> percentile(std::vector<std::int64_t>& samples, double p);

// JSON pieces for a scenario's own keys: `,"key":value` (value as JSON text), a string, a number or null,
// and {"p50":..,"p99":..,"max":..} of `samples` (sorts them).
std::string json_field(std::string_view key, std::string_view value);
std::string json_string(std::string_view text);
std::string number_or_null(std::optional<std::int64_t> v);
std::string short_percentiles(std::vector<std::int64_t>& samples);

// A scenario's own part of the report, around the figures every scenario has.
struct bench_columns {
    std::string operation = "lock + release";                                     // "operations   N (<operation>)"
    std::string rate = "ops/s";                                                   // the label of operations per second
    std::string latency = "acquire";                                              // the first latency row's label
    std::vector<std::string> after_rate;                                          // table lines after the rate
    std::vector<std::string> after_errors;                                        // table lines after "errors"
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> latency_rows;  // more rows: label, samples
    std::string json;  // more keys, after handoff_us and before errors: json_field(...) + ...
};

struct bench_result {
    std::string scenario;
    bool fencing = false;
    std::size_t nodes = 0;
    int clients = 0;
    int workers = 1;  // per client
    std::uint64_t ops = 0;
    double user_seconds = 0;                   // this process's user CPU time during the run
    double system_seconds = 0;                 // and its system CPU time
    double seconds = 0;                        // measured run time
    std::optional<std::uint64_t> allocations;  // calls of the global operator new during the run, if counted
    std::uint64_t errors = 0;
    std::vector<std::int64_t> acquire_us;  // the operation's latency (the first row): async_lock start to lease...
    std::vector<std::int64_t> handoff_us;  // contended: a release to another client's acquire; else none
    bench_columns columns;
};

// Exactly the keys scenario, fencing, nodes, clients, workers, ops, ops_per_sec, cpu_us_per_op (user +
// system), user_us_per_op, sys_us_per_op, allocs_per_op, acquire_us {p50,p90,p99,max}, handoff_us {p50,p99},
// then the scenario's own (columns.json), then errors. A percentile without samples (handoff when uncontended) is
// null; so are the four per-op figures without operations, and allocs_per_op when allocations were not counted
// (sanitizer builds).
std::string to_json(bench_result r);
std::string to_table(bench_result r);

}  // namespace redlock::cli
