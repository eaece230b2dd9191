// The one driver of every `redlock bench` scenario: it makes the C clients (one connection per node each, as C
// processes would have) and connects them, runs W workers per client for the duration (one phase or more), times
// them (latency samples, wall time, CPU, allocations), counts errors, stops early on INT, TERM or HUP, and
// prints what the scenario makes of the figures. A scenario brings only its own per-worker loop and its output.
#pragma once

#include "cli/bench/options.hpp"
#include "cli/bench/stats.hpp"
#include "cli/common/output.hpp"

#include <redlock/client.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/redis.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::cli {

using bench_clock = std::chrono::steady_clock;

// 16 random hex digits: a run's keys hold them (redlock-bench:<id>...), apart from other runs'.
std::string bench_run_id();

// What one timed phase measured.
struct bench_phase {
    std::vector<std::int64_t> latency_us;      // the samples the workers recorded (percentiles: stats.hpp)
    std::uint64_t ops = 0;                     // operations the workers completed
    double seconds = 0;                        // wall time of the phase
    cpu_times cpu;                             // this process's CPU time during it
    std::optional<std::uint64_t> allocations;  // calls of operator new during it, if counted (alloc_count.hpp)
};

// What the run measured, for the scenario's output.
struct bench_figures {
    std::vector<bench_phase> phases;  // one per phase, in order
    std::uint64_t errors = 0;
};

// The common figures of a scenario that reports per operation (stats.hpp), from its one phase: its name, the
// nodes, clients and workers of `o`, what the phase measured (latency: the first row) and the errors. The
// scenario adds its own columns.
bench_result per_operation_result(std::string scenario, const bench_options& o, bench_figures& f);

class bench_driver;

// One worker of a phase: a coroutine sharing its client with the other workers of that client, as the requests of
// one service share its client. The scenario's loop runs while running() and reports each operation.
class bench_worker {
public:
    bench_worker(bench_driver& run, int index, int phase) : run_(run), index_(index), phase_(phase) {}

    int index() const noexcept { return index_; }  // 0 .. clients x workers - 1
    int phase() const noexcept { return phase_; }
    // Worker i shares client i / W, and its store (bench_scenario::stores).
    client& shared_client() const noexcept;
    const redis& shared_store() const noexcept;
    // Until the phase's end, or an early stop (a signal, options the library refuses).
    bool running() const noexcept;
    bench_clock::time_point end() const noexcept;
    // Until end(), rounded up to a millisecond, at least 0: a wait that must not outlast the phase.
    std::chrono::milliseconds time_left() const noexcept;
    // `token` bound to this worker's cancellation slot, which an early stop emits (terminal).
    template <class Token>
    auto cancellable(Token&& token)
    {
        return boost::asio::bind_cancellation_slot(cancel_slot(), std::forward<Token>(token));
    }

    // One latency sample, and one operation completed (counted apart: an operation may fail after it was timed).
    void record(bench_clock::duration latency);
    void done();
    // A failed call: counted as an error (the first one's text is kept), then a pause of 10 ms: no hot loop against
    // a failing node.
    boost::asio::awaitable<void> failed(std::string_view what, error_code ec, const diagnostics* diag = nullptr);
    // The library refused the options (error::invalid_argument): every call would fail alike. Ends the run, which
    // exits 64 with the library's reason; the worker should return.
    void refused(error_code ec, const diagnostics& diag);
    boost::asio::awaitable<void> pause(bench_clock::duration d);

private:
    boost::asio::cancellation_slot cancel_slot() const noexcept;

    bench_driver& run_;
    int index_;
    int phase_;
};

// What a scenario brings to the driver.
class bench_scenario {
public:
    virtual ~bench_scenario() = default;

    // The clients (one connection per node each) and the workers of each; 0 workers: a phase only waits out the
    // duration (the hold scenario measures what the watchdog costs meanwhile).
    int clients = 1;
    int workers_per_client = 0;
    int phases = 1;
    // Beside each client, the first node as one Redis deployment (a redlock::redis, a connection of its own): for
    // what lives on one Redis (a rate limiter, a cache's values).
    bool stores = false;
    // How the messages name what fails: "bench: cannot reach <unreachable>", "bench: cannot <refusal> with these
    // options".
    std::string unreachable = "a quorum of the nodes";
    std::string refusal = "lock";

    // -v, once the clients are connected: what runs ("bench: ..."); nothing when empty.
    virtual std::string describe(bench_driver&) { return {}; }
    // Untimed, before the first phase: a warm-up (every key loaded once), counters reset on the nodes.
    virtual boost::asio::awaitable<void> prepare(bench_driver&) { co_return; }
    // One worker's operations, one after another while w.running().
    virtual boost::asio::awaitable<void> work(bench_worker& w) = 0;
    // Untimed, after the last phase (also after an early stop): counters read from the nodes, leases released.
    virtual boost::asio::awaitable<void> conclude(bench_driver&) { co_return; }
    // What stdout gets: JSON (--json) or the table.
    virtual std::string output(bench_figures& figures, bool json) = 0;
};

class bench_driver {
public:
    explicit bench_driver(const bench_options& o);
    bench_driver(const bench_driver&) = delete;
    bench_driver& operator=(const bench_driver&) = delete;

    // Runs `s` to the end; returns the exit code: 0, 64 (options the library refused), 69 (the nodes cannot be
    // reached at the start), 128 + N (interrupted by signal N; the figures up to then are printed), 70 (an internal
    // error).
    int run(bench_scenario& s);

    const bench_options& options() const noexcept { return o_; }
    boost::asio::io_context& context() noexcept { return ctx_; }
    client& client_at(std::size_t i) { return *clients_.at(i); }
    const redis& store_at(std::size_t i) const { return stores_.at(i); }
    std::size_t client_count() const noexcept { return clients_.size(); }
    const reporter& report() const noexcept { return report_; }
    // A signal or a refusal ended the run early.
    bool stopping() const noexcept { return stopping_; }
    // An error of the scenario's own (prepare, conclude, a worker): counted, the first one's text kept.
    void count_error(std::string_view what, error_code ec, const diagnostics* diag = nullptr);

private:
    friend class bench_worker;

    boost::asio::awaitable<int> main(bench_scenario& s);
    boost::asio::awaitable<void> phase(bench_scenario& s, int index, bench_phase& out);
    boost::asio::awaitable<void> worker(bench_scenario& s, int index, int phase);
    void stop();
    void finish();

    const bench_options& o_;
    boost::asio::io_context ctx_{1};
    reporter report_;
    boost::asio::signal_set signals_;
    std::vector<std::unique_ptr<client>> clients_;
    std::vector<redis> stores_;  // one per client, when the scenario asks for them
    std::vector<std::unique_ptr<boost::asio::cancellation_signal>> cancels_;  // one per worker
    int workers_per_client_ = 0;
    bench_clock::time_point end_{};
    bool stopping_ = false;
    int interrupted_ = 0;
    std::string refused_;  // the library's reason, when it refused the options
    std::uint64_t errors_ = 0;
    std::string first_error_;
    bench_phase* phase_ = nullptr;  // the phase running: its workers' samples go there
    int active_ = 0;                // its workers still running
    boost::asio::steady_timer phase_done_{ctx_};
};

}  // namespace redlock::cli
