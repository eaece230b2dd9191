// What `redlock bench` measured, its percentiles, and its two renderings (table and JSON).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

// The semaphore scenario: the permits contended for, the most this process held at once (never above the limit
// when the semaphore is right), and how the acquires went: room found on the first attempt, or a wait.
struct bench_semaphore_totals {
    std::int64_t limit = 0;
    bool fair = false;
    std::int64_t max_held = 0;
    std::uint64_t first_try = 0;             // granted on the first attempt
    std::uint64_t waited = 0;                // granted after more than one attempt
    std::vector<std::int64_t> first_try_us;  // their acquire latencies, apart: the protocol's own
    std::vector<std::int64_t> waited_us;     // and the wait for a release
    std::uint64_t attempts = 0;              // diagnostics::waiting(), summed over every acquire
    std::uint64_t woken_by_release = 0;
    std::uint64_t timed_retries = 0;
};

// How the lock calls of a run waited: diagnostics::waiting(), summed.
struct bench_wait_totals {
    std::uint64_t attempts = 0;
    std::uint64_t woken_by_release = 0;
    std::uint64_t timed_retries = 0;
};

// The limiter scenario: the limit each worker's key had, and what the decisions were.
struct bench_limiter_totals {
    std::string strategy = "gcra";  // as --strategy spells it
    std::string rate;               // as --rate spells it: "1000/s"
    std::int64_t burst = 0;
    std::uint64_t admitted = 0;
    std::uint64_t limited = 0;
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
    std::vector<std::int64_t> acquire_us;  // async_lock start to lease, per successful acquire
    std::vector<std::int64_t> handoff_us;  // contended: a release completing to another client's acquire completing
    bool has_handoff = false;
    std::uint64_t grants = 0;  // contended: successful acquires (handoff_us.size() of them went to another client)
    // The semaphore scenario: an operation is a permit acquired, held and released. JSON adds, after handoff_us:
    // limit, fair, max_held, first_try, first_try_us {p50,p99,max}, waited, waited_us {p50,p99,max}, attempts,
    // woken_by_release, timed_retries.
    std::optional<bench_semaphore_totals> semaphore;
    // The handoff scenario: how the lock calls waited (diagnostics::waiting(), summed) and what the nodes ran.
    std::optional<bench_wait_totals> waits;
    std::vector<std::pair<std::string, std::uint64_t>> server_calls;  // per command, over every node
    std::string lock_kind = "plain";                                  // or "fair"
    // The limiter scenario: an operation is one decision (try_acquire), acquire_us its latency.
    std::optional<bench_limiter_totals> limiter;
};

// Exactly the keys scenario, fencing, nodes, clients, workers, ops, ops_per_sec, cpu_us_per_op (user +
// system), user_us_per_op, sys_us_per_op, allocs_per_op, acquire_us {p50,p90,p99,max}, handoff_us {p50,p99},
// errors, in this order. A percentile without samples (handoff when uncontended) is null; so are the four
// per-op figures without operations, and allocs_per_op when allocations were not counted (sanitizer builds).
// The handoff scenario adds, before errors: lock ("plain" or "fair"), handoffs, handoff_max_us, attempts,
// woken_by_release, timed_retries and server_calls {command: calls over every node}. The limiter scenario
// (ops are decisions, acquire_us their latency) adds, before errors: strategy, rate, burst, admitted, limited.
std::string to_json(bench_result r);
std::string to_table(bench_result r);

}  // namespace redlock::cli
