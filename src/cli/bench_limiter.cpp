// `redlock bench --scenario limiter`: rate limiter decisions per second against one node. C clients of W
// workers; each worker asks its own key's limiter (one subject each, as per-user limits are) for one unit in a
// loop, without waiting, and counts what it was told. Reported as the lock scenarios are (bench_stats.hpp):
// an operation is one decision, its latency the acquire column.
#include "alloc_count.hpp"
#include "bench_stats.hpp"
#include "commands.hpp"
#include "duration.hpp"
#include "exit_codes.hpp"
#include "run_to_exit_code.hpp"
#include "signals.hpp"

#include <redlock/client.hpp>
#include <redlock/rate_limiter.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

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

const char* strategy_flag_name(rate_strategy s)
{
    switch (s) {
        case rate_strategy::fixed_window:
            return "fixed-window";
        case rate_strategy::sliding_window:
            return "sliding-window";
        case rate_strategy::gcra:
            break;
    }
    return "gcra";
}

class limiter_bench {
public:
    limiter_bench(asio::io_context& ctx, const bench_options& o) : ctx_(ctx), o_(o), report_(o.output), signals_(ctx)
    {
        for (int signo : {SIGINT, SIGTERM, SIGHUP})
            if (!signal_ignored(signo)) signals_.add(signo);
        for (int i = 0; i < o.clients; ++i) clients_.push_back(std::make_unique<client>(ctx.get_executor(), o.nodes));
        for (int i = 0; i < workers(); ++i) cancels_.push_back(std::make_unique<asio::cancellation_signal>());
        limit_.strategy = o.strategy;
        limit_.rate = o.rate.count;
        limit_.period = o.rate.period;
        limit_.burst = o.burst;
        result_.scenario = "limiter";
        result_.nodes = o.nodes.size();
        result_.clients = o.clients;
        result_.workers = o.workers;
        result_.limiter = bench_limiter_totals{strategy_flag_name(o.strategy), format_rate(o.rate), o.burst, 0, 0};
        std::random_device rd;
        char id[17];
        std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
        prefix_ = std::string("redlock-bench:") + id;
    }

    asio::awaitable<int> run();

private:
    int workers() const noexcept { return o_.clients * o_.workers; }
    asio::awaitable<void> worker(int index);
    void stop_all()
    {
        stopping_ = true;
        end_ = clock::now();
        for (auto& c : cancels_) c->emit(asio::cancellation_type::terminal);
    }
    void finish()
    {
        signals_.cancel();
        for (auto& c : clients_) c->close();
    }

    asio::io_context& ctx_;
    const bench_options& o_;
    reporter report_;
    asio::signal_set signals_;
    std::vector<std::unique_ptr<client>> clients_;
    std::vector<std::unique_ptr<asio::cancellation_signal>> cancels_;
    rate_limit limit_;
    std::string prefix_;
    clock::time_point end_{};
    bool stopping_ = false;
    int interrupted_ = 0;
    std::string invalid_options_;  // the library refused the limit (or the nodes): a usage error
    std::string first_error_;
    int active_ = 0;
    std::unique_ptr<asio::steady_timer> all_done_;
    bench_result result_;
};

asio::awaitable<void> limiter_bench::worker(int index)
{
    auto& c = *clients_[static_cast<std::size_t>(index / o_.workers)];  // worker i shares client i / W
    auto& cancel = *cancels_[static_cast<std::size_t>(index)];
    rate_limiter limiter(c, prefix_ + ":" + std::to_string(index), limit_);
    diagnostics diag;
    auto& totals = *result_.limiter;
    while (!stopping_ && clock::now() < end_) {
        const auto t0 = clock::now();
        auto [ec, d] =
            co_await limiter.async_try_acquire(1, diag, asio::bind_cancellation_slot(cancel.slot(), use_tuple));
        const auto t1 = clock::now();
        if (stopping_) break;
        if (ec == error::invalid_argument) {  // every call would fail the same way
            if (invalid_options_.empty()) invalid_options_ = diag.message().empty() ? ec.message() : diag.message();
            stop_all();
            break;
        }
        if (ec) {
            if (result_.errors++ == 0) {
                first_error_ = "decision: " + ec.message();
                if (!diag.message().empty()) first_error_ += ": " + std::string(diag.message());
            }
            asio::steady_timer pause(ctx_, milliseconds(10));  // no hot loop against a failing node
            co_await pause.async_wait(use_tuple);
            continue;
        }
        result_.acquire_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count());
        ++result_.ops;
        ++(d.allowed() ? totals.admitted : totals.limited);
    }
    if (--active_ == 0) all_done_->cancel();
}

asio::awaitable<int> limiter_bench::run()
{
    signals_.async_wait([this](error_code ec, int signo) {
        if (ec) return;
        interrupted_ = signo;
        stop_all();
    });
    for (auto& c : clients_) {
        diagnostics diag;
        auto [ec] = co_await c->async_connect(diag, use_tuple);
        if (interrupted_ != 0) {
            report_.error("bench: interrupted by " + signal_name(interrupted_));
            finish();
            co_return exit_code::signal_base + interrupted_;
        }
        if (ec) {
            report_.error("bench: cannot reach the node: " + std::string(diag.message()));
            report_.error_lines(describe_nodes(diag.nodes()));
            finish();
            co_return exit_code::unavailable;
        }
    }
    report_.detail("bench: limiter, " + std::string(strategy_flag_name(o_.strategy)) + " " + format_rate(o_.rate) +
                   (o_.strategy == rate_strategy::gcra ? ", burst " + std::to_string(o_.burst) : "") + ", " +
                   std::to_string(o_.nodes.size()) + " node(s), " + std::to_string(o_.clients) + " client(s) x " +
                   std::to_string(o_.workers) + " worker(s), " + format_duration(o_.duration) + ", keys " + prefix_ +
                   ":N");

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

    finish();
    if (!invalid_options_.empty()) {
        report_.error("bench: cannot use the rate limiter with these options: " + invalid_options_);
        write_stderr("Try 'redlock bench --help'.\n");
        co_return exit_code::usage;
    }
    write_stdout(o_.json ? to_json(result_) : to_table(result_));
    if (result_.errors > 0)
        report_.note("bench: " + std::to_string(result_.errors) + " errors; first: " + first_error_);
    if (interrupted_ != 0) {
        report_.error("bench: interrupted by " + signal_name(interrupted_) + "; the figures cover the run until then");
        co_return exit_code::signal_base + interrupted_;
    }
    co_return exit_code::ok;
}

}  // namespace

int run_bench_limiter(const bench_options& o)
{
    asio::io_context ctx(1);
    limiter_bench bench(ctx, o);
    return run_to_exit_code(ctx, bench.run(), "bench");
}

}  // namespace redlock::cli
