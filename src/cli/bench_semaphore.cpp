// `redlock bench --scenario semaphore`: C clients x W workers contend for the L permits of one semaphore, each
// holding a permit about 1 ms, releasing it and asking again at once. With L about half the workers, some acquires
// find room at once and others wait for a release: the table says how many of each. Reported as the lock
// scenarios are (bench_stats.hpp): an operation is one permit acquired, held and released.
#include "alloc_count.hpp"
#include "bench_stats.hpp"
#include "commands.hpp"
#include "duration.hpp"
#include "exit_codes.hpp"
#include "run_to_exit_code.hpp"
#include "signals.hpp"

#include <redlock/client.hpp>
#include <redlock/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>
#include <random>

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// A spawned coroutine's exception leaves ctx.run() and reaches the command's error handling (never lost).
constexpr auto rethrow = [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
};
constexpr milliseconds hold_time{1};  // a holder's work, as in the contended lock scenario
// Between a release and the next acquire, uniform in [0, 2 * think_time): without it every worker asks again at
// once and the semaphore is always full. With it each worker wants a permit about half the time, so with half as
// many permits as workers some acquires find room and others wait (a fixed pause swings the run from almost all
// waiting to almost none with the machine's speed; a random one spreads the arrivals).
constexpr std::chrono::microseconds think_time{1'500};

// Half the workers, so that about half the acquires find a permit free and the others wait for one.
std::int64_t default_limit(int workers)
{
    return std::max(1, workers / 2);
}

class semaphore_bench {
public:
    semaphore_bench(asio::io_context& ctx, const bench_options& o)
        : ctx_(ctx), o_(o), report_(o.output), signals_(ctx), limit_(o.limit > 0 ? o.limit : default_limit(workers()))
    {
        for (int signo : {SIGINT, SIGTERM, SIGHUP})
            if (!signal_ignored(signo)) signals_.add(signo);
        for (int i = 0; i < o.clients; ++i) clients_.push_back(std::make_unique<client>(ctx.get_executor(), o.nodes));
        for (int i = 0; i < workers(); ++i) cancels_.push_back(std::make_unique<asio::cancellation_signal>());
        result_.scenario = "semaphore";
        result_.nodes = o.nodes.size();
        result_.clients = o.clients;
        result_.workers = o.workers;
        result_.semaphore.emplace();
        result_.semaphore->limit = limit_;
        result_.semaphore->fair = o.fair;
        std::random_device rd;
        char id[17];
        std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
        name_ = std::string("redlock-bench:") + id;
    }

    asio::awaitable<int> run();

private:
    int workers() const noexcept { return o_.clients * o_.workers; }
    asio::awaitable<void> worker(int index);
    asio::awaitable<void> pause(clock::duration d);
    void count_error(const error_code& ec, std::string_view what, const diagnostics* diag);
    void stop_all();
    void finish();

    asio::io_context& ctx_;
    const bench_options& o_;
    reporter report_;
    asio::signal_set signals_;
    std::int64_t limit_;
    std::vector<std::unique_ptr<client>> clients_;
    std::vector<std::unique_ptr<asio::cancellation_signal>> cancels_;
    std::string name_;
    clock::time_point end_{};
    bool stopping_ = false;
    int interrupted_ = 0;
    std::string invalid_options_;  // the library refused the options (a --ttl above 30 days): usage error
    int active_ = 0;
    std::int64_t holding_ = 0;  // permits granted to this run and not yet given back
    std::unique_ptr<asio::steady_timer> all_done_;
    std::string first_error_;
    bench_result result_;
};

void semaphore_bench::count_error(const error_code& ec, std::string_view what, const diagnostics* diag)
{
    ++result_.errors;
    if (!first_error_.empty()) return;
    first_error_ = std::string(what) + ": " + ec.message();
    if (diag && !diag->message().empty()) first_error_ += ": " + std::string(diag->message());
}

void semaphore_bench::stop_all()
{
    stopping_ = true;
    end_ = std::min(end_, clock::now());
    for (auto& c : cancels_) c->emit(asio::cancellation_type::terminal);
}

asio::awaitable<void> semaphore_bench::pause(clock::duration d)
{
    asio::steady_timer t(ctx_, d);
    co_await t.async_wait(use_tuple);
}

asio::awaitable<void> semaphore_bench::worker(int index)
{
    auto& c = *clients_[static_cast<std::size_t>(index / o_.workers)];  // worker i shares client i / W
    auto& cancel = *cancels_[static_cast<std::size_t>(index)];
    auto& totals = *result_.semaphore;
    diagnostics diag;
    std::minstd_rand random(static_cast<std::minstd_rand::result_type>(index + 1));
    std::uniform_int_distribution<std::int64_t> think(0, 2 * think_time.count() - 1);
    while (!stopping_ && clock::now() < end_) {
        semaphore_options so;
        so.ttl = o_.ttl;
        so.fair = o_.fair;
        // Wait for a permit, but not past the end of the run.
        so.wait = std::max(milliseconds(0), std::chrono::ceil<milliseconds>(end_ - clock::now()));
        semaphore s(c, name_, limit_, so);
        const auto t0 = clock::now();
        auto [ec, held] = co_await s.async_acquire(1, diag, asio::bind_cancellation_slot(cancel.slot(), use_tuple));
        const auto t1 = clock::now();
        const auto& waiting = diag.waiting();
        totals.attempts += waiting.attempts;
        totals.woken_by_release += waiting.woken_by_release;
        totals.timed_retries += waiting.timed_retries;
        if (ec) {
            // The run ended while we waited: not an error.
            if (stopping_ || t1 >= end_ || ec == error::not_acquired) break;
            if (ec == error::invalid_argument) {  // every attempt would fail the same way
                if (invalid_options_.empty()) invalid_options_ = diag.message().empty() ? ec.message() : diag.message();
                stop_all();
                break;
            }
            count_error(ec, "acquire", &diag);
            co_await pause(milliseconds(10));  // no hot loop against a failing node
            continue;
        }
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count();
        result_.acquire_us.push_back(us);
        const bool at_once = waiting.attempts <= 1;
        ++(at_once ? totals.first_try : totals.waited);
        (at_once ? totals.first_try_us : totals.waited_us).push_back(us);
        totals.max_held = std::max(totals.max_held, ++holding_);
        co_await pause(hold_time);
        --holding_;  // before the release is sent: a count never above what the nodes hold
        auto [rec] = co_await held.async_release(use_tuple);
        if (rec) {
            count_error(rec, "release", nullptr);
            continue;
        }
        ++result_.ops;
        co_await pause(std::chrono::microseconds(think(random)));
    }
    if (--active_ == 0) all_done_->cancel();
}

asio::awaitable<int> semaphore_bench::run()
{
    signals_.async_wait([this](error_code ec, int signo) {
        if (ec) return;
        interrupted_ = signo;
        stop_all();
    });
    // The clients started connecting when they were made: this waits for the slowest first attempt.
    for (auto& c : clients_) {
        diagnostics diag;
        auto [ec] = co_await c->async_connect(diag, use_tuple);
        if (interrupted_ != 0) {
            report_.error("bench: interrupted by " + signal_name(interrupted_));
            finish();
            co_return exit_code::signal_base + interrupted_;
        }
        if (ec) {
            report_.error("bench: cannot reach a quorum of the nodes: " + std::string(diag.message()));
            report_.error_lines(describe_nodes(diag.nodes()));
            finish();
            co_return exit_code::unavailable;
        }
    }
    const semaphore probe(*clients_.front(), name_, limit_);
    report_.detail("bench: semaphore, limit " + std::to_string(limit_) + (o_.fair ? " (fair)" : "") + ", " +
                   std::to_string(o_.nodes.size()) + " node(s), quorum " + std::to_string(probe.quorum()) + ", " +
                   std::to_string(o_.clients) + " client(s) x " + std::to_string(o_.workers) + " worker(s), " +
                   format_duration(o_.duration) + ", key " + name_);

    const auto start = clock::now();
    const auto cpu_start = cpu_now();
    const auto allocations_start = allocation_count();
    end_ = start + o_.duration;
    all_done_ = std::make_unique<asio::steady_timer>(ctx_, clock::time_point::max());
    active_ = workers();
    for (int i = 0; i < workers(); ++i) asio::co_spawn(ctx_, worker(i), rethrow);
    while (active_ > 0) co_await all_done_->async_wait(use_tuple);
    result_.seconds = std::chrono::duration<double>(clock::now() - start).count();
    const auto cpu_end = cpu_now();
    result_.user_seconds = cpu_end.user - cpu_start.user;
    result_.system_seconds = cpu_end.system - cpu_start.system;
    if (counting_allocations()) result_.allocations = allocation_count() - allocations_start;
    result_.grants = result_.acquire_us.size();

    if (!invalid_options_.empty()) {
        finish();
        report_.error("bench: cannot acquire with these options: " + invalid_options_);
        write_stderr("Try 'redlock bench --help'.\n");
        co_return exit_code::usage;
    }
    write_stdout(o_.json ? to_json(result_) : to_table(result_));
    if (result_.errors > 0)
        report_.note("bench: " + std::to_string(result_.errors) + " errors; first: " + first_error_);
    finish();
    if (interrupted_ != 0) {
        report_.error("bench: interrupted by " + signal_name(interrupted_) + "; the figures cover the run until then");
        co_return exit_code::signal_base + interrupted_;
    }
    co_return exit_code::ok;
}

void semaphore_bench::finish()
{
    signals_.cancel();
    for (auto& c : clients_) c->close();
}

}  // namespace

int run_bench_semaphore(const bench_options& o)
{
    asio::io_context ctx(1);
    semaphore_bench bench(ctx, o);
    return run_to_exit_code(ctx, bench.run(), "bench");
}

}  // namespace redlock::cli
