// `redlock bench`: lock latency, throughput, client CPU and allocations per operation against a deployment, with
// C clients (one connection per node each, as separate processes would have) of W worker coroutines each.
#include "alloc_count.hpp"
#include "bench_server_calls.hpp"
#include "bench_stats.hpp"
#include "commands.hpp"
#include "duration.hpp"
#include "exit_codes.hpp"
#include "run_to_exit_code.hpp"
#include "signals.hpp"

#include <redlock/client.hpp>
#include <redlock/mutex.hpp>

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
#include <optional>
#include <random>
#include <sys/resource.h>

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

std::int64_t micros(clock::duration d)
{
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

std::string run_id()
{
    std::random_device rd;
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%08x%08x", rd(), rd());
    return buffer;
}

class bench_run {
public:
    bench_run(asio::io_context& ctx, const bench_options& o) : ctx_(ctx), o_(o), report_(o.output), signals_(ctx)
    {
        for (int signo : {SIGINT, SIGTERM, SIGHUP})
            if (!signal_ignored(signo)) signals_.add(signo);
        for (int i = 0; i < o.clients; ++i) clients_.push_back(std::make_unique<client>(ctx.get_executor(), o.nodes));
        for (int i = 0; i < workers(); ++i) cancels_.push_back(std::make_unique<asio::cancellation_signal>());
        result_.scenario = handoff() ? "handoff" : contended() ? "contended" : "uncontended";
        result_.fencing = o_.fencing;
        result_.nodes = o.nodes.size();
        result_.clients = o.clients;
        result_.workers = o.workers;
        result_.has_handoff = contended();
        if (handoff()) {
            result_.waits.emplace();
            result_.lock_kind = o.fair ? "fair" : "plain";
        }
    }

    asio::awaitable<int> run();

private:
    struct grant {
        int holder;
        clock::time_point acquired;
        std::optional<clock::time_point> released;
        clock::time_point release_started{};
    };

    // Every worker on one key. The handoff scenario: a worker that released waits until another took the lock.
    bool contended() const noexcept { return o_.kind == bench_options::scenario::contended || handoff(); }
    bool handoff() const noexcept { return o_.kind == bench_options::scenario::handoff; }
    int workers() const noexcept { return o_.clients * o_.workers; }
    asio::awaitable<void> worker(int index);
    asio::awaitable<void> pause(milliseconds d);
    asio::awaitable<void> until_taken_after(std::size_t slot);
    void count_error(const error_code& ec, std::string_view what, const diagnostics* diag);
    void stop_early(int signo);
    void finish();

    asio::io_context& ctx_;
    const bench_options& o_;
    reporter report_;
    asio::signal_set signals_;
    std::vector<std::unique_ptr<client>> clients_;
    std::vector<std::unique_ptr<asio::cancellation_signal>> cancels_;
    const std::string prefix_ = "redlock-bench:" + run_id();
    clock::time_point end_{};
    bool stopping_ = false;
    int interrupted_ = 0;
    std::string invalid_options_;  // the library refused the lock options (a --ttl above 30 days): usage error
    int active_ = 0;
    std::unique_ptr<asio::steady_timer> all_done_;
    std::unique_ptr<asio::steady_timer> granted_;  // handoff: cancelled at every grant, wakes who waits for one
    std::vector<grant> grants_;
    std::string first_error_;
    bench_result result_;
};

void bench_run::count_error(const error_code& ec, std::string_view what, const diagnostics* diag)
{
    ++result_.errors;
    if (!first_error_.empty()) return;
    first_error_ = std::string(what) + ": " + ec.message();
    if (diag && !diag->message().empty()) first_error_ += ": " + std::string(diag->message());
}

void bench_run::stop_early(int signo)
{
    interrupted_ = signo;
    stopping_ = true;
    end_ = clock::now();
    for (auto& c : cancels_) c->emit(asio::cancellation_type::terminal);
}

asio::awaitable<void> bench_run::pause(milliseconds d)
{
    asio::steady_timer t(ctx_, d);
    co_await t.async_wait(use_tuple);
}

asio::awaitable<void> bench_run::until_taken_after(std::size_t slot)
{
    while (grants_.size() <= slot + 1 && !stopping_ && clock::now() < end_) co_await granted_->async_wait(use_tuple);
}

asio::awaitable<void> bench_run::worker(int index)
{
    auto& c = *clients_[static_cast<std::size_t>(index / o_.workers)];  // worker i shares client i / W
    auto& cancel = *cancels_[static_cast<std::size_t>(index)];
    const std::string key = contended() ? prefix_ : prefix_ + ":" + std::to_string(index);
    diagnostics diag;
    while (!stopping_ && clock::now() < end_) {
        lock_options lo;
        lo.ttl = o_.ttl;
        lo.fencing = o_.fencing;
        lo.fair = o_.fair;
        // Uncontended: one attempt, so the latency is the protocol's alone. Contended: wait for our turn,
        // but not past the end of the run.
        lo.wait = contended() ? std::max(milliseconds(0), std::chrono::ceil<milliseconds>(end_ - clock::now()))
                              : milliseconds(0);
        mutex m(c, key, lo);
        const auto t0 = clock::now();
        auto [ec, held] = co_await m.async_lock(diag, asio::bind_cancellation_slot(cancel.slot(), use_tuple));
        const auto t1 = clock::now();
        if (result_.waits) {
            result_.waits->attempts += diag.waiting().attempts;
            result_.waits->woken_by_release += diag.waiting().woken_by_release;
            result_.waits->timed_retries += diag.waiting().timed_retries;
        }
        if (ec) {
            // The run ended while we waited (a contended wait lasts until the end): not an error.
            if (stopping_ || t1 >= end_ || (contended() && ec == error::not_acquired)) break;
            if (ec == error::invalid_argument) {  // every attempt would fail the same way
                if (invalid_options_.empty()) invalid_options_ = diag.message().empty() ? ec.message() : diag.message();
                stopping_ = true;
                end_ = clock::now();
                for (auto& other : cancels_) other->emit(asio::cancellation_type::terminal);
                break;
            }
            count_error(ec, "lock", &diag);
            co_await pause(milliseconds(10));  // no hot loop against a failing node
            continue;
        }
        result_.acquire_us.push_back(micros(t1 - t0));
        std::size_t slot = grants_.size();
        if (contended()) {
            grants_.push_back({index, t1, std::nullopt});
            if (granted_) granted_->cancel();
            co_await pause(milliseconds(1));  // the holder's work
        }
        if (contended()) grants_[slot].release_started = clock::now();
        auto [rec] = co_await held.async_release(use_tuple);
        if (rec) {
            count_error(rec, "release", nullptr);
            continue;
        }
        if (contended()) grants_[slot].released = clock::now();
        ++result_.ops;
        if (handoff()) co_await until_taken_after(slot);
    }
    if (--active_ == 0) all_done_->cancel();
}

asio::awaitable<int> bench_run::run()
{
    signals_.async_wait([this](error_code ec, int signo) {
        if (!ec) stop_early(signo);
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
    report_.detail("bench: " + result_.scenario + ", " + std::to_string(o_.nodes.size()) + " node(s), " +
                   std::to_string(o_.clients) + " client(s) x " + std::to_string(o_.workers) + " worker(s), " +
                   format_duration(o_.duration) + ", keys " + prefix_ + (contended() ? "" : ":N"));

    if (handoff()) co_await reset_server_stats(ctx_.get_executor(), o_.nodes);
    const auto start = clock::now();
    const auto cpu_start = cpu_now();
    const auto allocations_start = allocation_count();
    end_ = start + o_.duration;
    all_done_ = std::make_unique<asio::steady_timer>(ctx_, clock::time_point::max());
    if (handoff()) granted_ = std::make_unique<asio::steady_timer>(ctx_, end_);
    active_ = workers();
    for (int i = 0; i < workers(); ++i) asio::co_spawn(ctx_, worker(i), rethrow);
    while (active_ > 0) co_await all_done_->async_wait(use_tuple);
    result_.seconds = std::chrono::duration<double>(clock::now() - start).count();
    const auto cpu_end = cpu_now();
    result_.user_seconds = cpu_end.user - cpu_start.user;
    result_.system_seconds = cpu_end.system - cpu_start.system;
    if (counting_allocations()) result_.allocations = allocation_count() - allocations_start;

    if (handoff()) result_.server_calls = co_await server_calls(ctx_.get_executor(), o_.nodes);

    // Grants come in lock order (one holder at a time): the gap is from grant k's release to grant k+1, when
    // the lock passed to another client (a holder taking it straight back hands nothing off). Contended: from
    // the release completing; handoff: from the release starting (the next holder may be granted before the
    // releaser heard back from every node).
    for (std::size_t k = 1; k < grants_.size(); ++k) {
        if (!grants_[k - 1].released || grants_[k - 1].holder == grants_[k].holder) continue;
        const auto from = handoff() ? grants_[k - 1].release_started : *grants_[k - 1].released;
        result_.handoff_us.push_back(std::max<std::int64_t>(0, micros(grants_[k].acquired - from)));
    }
    result_.grants = grants_.size();
    if (!invalid_options_.empty()) {
        finish();
        report_.error("bench: cannot lock with these options: " + invalid_options_);
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

void bench_run::finish()
{
    signals_.cancel();
    for (auto& c : clients_) c->close();
}

}  // namespace

int run_bench(const bench_options& o)
{
    if (o.kind == bench_options::scenario::hold) return run_bench_hold(o);
    if (o.kind == bench_options::scenario::limiter) return run_bench_limiter(o);
    if (o.kind == bench_options::scenario::semaphore) return run_bench_semaphore(o);
    if (o.kind == bench_options::scenario::cache) return run_bench_cache(o);
    asio::io_context ctx(1);
    bench_run bench(ctx, o);
    return run_to_exit_code(ctx, bench.run(), "bench");
}

}  // namespace redlock::cli
