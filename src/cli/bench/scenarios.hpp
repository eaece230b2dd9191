// The scenarios of `redlock bench`, one file each, all run by the one driver (driver.hpp); and the columns each
// adds to the common report (stats.hpp), pure functions for the unit tests.
#pragma once

#include "cli/bench/driver.hpp"
#include "cli/bench/options.hpp"
#include "cli/bench/server_calls.hpp"
#include "cli/bench/stats.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::cli {

// uncontended, contended and handoff (lock.cpp).
std::unique_ptr<bench_scenario> lock_scenario(const bench_options& o);
// Many leases held with the watchdog (hold.cpp).
std::unique_ptr<bench_scenario> hold_scenario(const bench_options& o);
// The permits of one semaphore (semaphore.cpp).
std::unique_ptr<bench_scenario> semaphore_scenario(const bench_options& o);
// Rate limiter decisions (limiter.cpp).
std::unique_ptr<bench_scenario> limiter_scenario(const bench_options& o);
// Cache hits beside plain GETs (cache.cpp).
std::unique_ptr<bench_scenario> cache_scenario(const bench_options& o);

// The handoff scenario: how the lock calls waited (diagnostics::waiting(), summed) and what the nodes ran.
struct lock_waits {
    std::string lock_kind = "plain";  // or "fair"
    std::uint64_t attempts = 0;
    std::uint64_t woken_by_release = 0;
    std::uint64_t timed_retries = 0;
    command_calls server_calls;  // per command, over every node
};
// Contended (and handoff): the "handoffs" line and latency row, from `grants` and the gaps of those that went to
// another worker. Handoff (`waits`): JSON adds, before errors, lock, handoffs, handoff_max_us, attempts,
// woken_by_release, timed_retries and server_calls {command: calls over every node}; the table, how they waited.
bench_columns lock_columns(bool contended, std::uint64_t grants, std::vector<std::int64_t> handoff_us,
                           const std::optional<lock_waits>& waits);

// The semaphore scenario: the permits contended for, the most this process held at once (never above the limit
// when the semaphore is right), and how the acquires went: room found on the first attempt, or a wait.
struct semaphore_totals {
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
// An operation is a permit acquired, held and released. JSON adds, after handoff_us: limit, fair, max_held,
// first_try, first_try_us {p50,p99,max}, waited, waited_us {p50,p99,max}, attempts, woken_by_release,
// timed_retries; the table, the limit and the acquires' two latency rows.
bench_columns semaphore_columns(semaphore_totals t);

// The limiter scenario: the limit each worker's key had, and what the decisions were.
struct limiter_totals {
    std::string strategy = "gcra";  // as --strategy spells it
    std::string rate;               // as --rate spells it: "1000/s"
    std::int64_t burst = 0;
    std::uint64_t admitted = 0;
    std::uint64_t limited = 0;
};
// An operation is one decision (try_acquire), acquire_us its latency. JSON adds, before errors: strategy, rate,
// burst, admitted, limited; the table, decisions/s and a line of the limit and the outcomes.
bench_columns limiter_columns(const limiter_totals& t);

}  // namespace redlock::cli
