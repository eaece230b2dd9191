#include "cli/bench/alloc_count.hpp"
#include "cli/bench/driver.hpp"
#include "cli/common/exit_codes.hpp"
#include "cli/common/run_to_exit_code.hpp"
#include "cli/common/signals.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <random>

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// A spawned coroutine's exception leaves ctx.run() and reaches the command's error handling (never lost).
constexpr auto rethrow = [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
};

}  // namespace

std::string bench_run_id()
{
    std::random_device rd;
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%08x%08x", rd(), rd());
    return buffer;
}

bench_result per_operation_result(std::string scenario, const bench_options& o, bench_figures& f)
{
    auto& phase = f.phases.front();
    bench_result r;
    r.scenario = std::move(scenario);
    r.nodes = o.nodes.size();
    r.clients = o.clients;
    r.workers = o.workers;
    r.ops = phase.ops;
    r.seconds = phase.seconds;
    r.user_seconds = phase.cpu.user;
    r.system_seconds = phase.cpu.system;
    r.allocations = phase.allocations;
    r.errors = f.errors;
    r.acquire_us = std::move(phase.latency_us);
    return r;
}

client& bench_worker::shared_client() const noexcept
{
    return *run_.clients_[static_cast<std::size_t>(index_ / run_.workers_per_client_)];
}

const redis& bench_worker::shared_store() const noexcept
{
    return run_.stores_[static_cast<std::size_t>(index_ / run_.workers_per_client_)];
}

bool bench_worker::running() const noexcept
{
    return !run_.stopping_ && bench_clock::now() < run_.end_;
}

bench_clock::time_point bench_worker::end() const noexcept
{
    return run_.end_;
}

std::chrono::milliseconds bench_worker::time_left() const noexcept
{
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::ceil<std::chrono::milliseconds>(end() - bench_clock::now()));
}

asio::cancellation_slot bench_worker::cancel_slot() const noexcept
{
    return run_.cancels_[static_cast<std::size_t>(index_)]->slot();
}

void bench_worker::record(bench_clock::duration latency)
{
    run_.phase_->latency_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(latency).count());
}

void bench_worker::done()
{
    ++run_.phase_->ops;
}

asio::awaitable<void> bench_worker::failed(std::string_view what, error_code ec, const diagnostics* diag)
{
    run_.count_error(what, ec, diag);
    co_await pause(std::chrono::milliseconds(10));
}

void bench_worker::refused(error_code ec, const diagnostics& diag)
{
    if (run_.refused_.empty()) run_.refused_ = diag.message().empty() ? ec.message() : std::string(diag.message());
    run_.stop();
}

asio::awaitable<void> bench_worker::pause(bench_clock::duration d)
{
    asio::steady_timer t(run_.ctx_, d);
    co_await t.async_wait(use_tuple);
}

bench_driver::bench_driver(const bench_options& o) : o_(o), report_(o.output), signals_(ctx_)
{
    for (int signo : {SIGINT, SIGTERM, SIGHUP})
        if (!signal_ignored(signo)) signals_.add(signo);
}

void bench_driver::count_error(std::string_view what, error_code ec, const diagnostics* diag)
{
    if (errors_++ > 0) return;
    first_error_ = std::string(what) + ": " + ec.message();
    if (diag && !diag->message().empty()) first_error_ += ": " + std::string(diag->message());
}

void bench_driver::stop()
{
    stopping_ = true;
    end_ = std::min(end_, bench_clock::now());
    for (auto& c : cancels_) c->emit(asio::cancellation_type::terminal);
    phase_done_.cancel();
}

void bench_driver::finish()
{
    signals_.cancel();
    for (auto& c : clients_) c->close();
    for (auto& s : stores_) s.close();
}

int bench_driver::run(bench_scenario& s)
{
    workers_per_client_ = s.workers_per_client;
    // They start connecting now.
    for (int i = 0; i < s.clients; ++i) {
        clients_.push_back(std::make_unique<client>(ctx_.get_executor(), o_.nodes));
        if (s.stores) stores_.emplace_back(ctx_.get_executor(), o_.nodes.front());
    }
    for (int i = 0; i < s.clients * s.workers_per_client; ++i)
        cancels_.push_back(std::make_unique<asio::cancellation_signal>());
    return run_to_exit_code(ctx_, main(s), "bench");
}

asio::awaitable<int> bench_driver::main(bench_scenario& s)
{
    signals_.async_wait([this](error_code ec, int signo) {
        if (ec) return;
        interrupted_ = signo;
        stop();
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
            report_.error("bench: cannot reach " + s.unreachable + ": " + std::string(diag.message()));
            report_.error_lines(describe_nodes(diag.nodes()));
            finish();
            co_return exit_code::unavailable;
        }
    }
    if (const auto line = s.describe(*this); !line.empty()) report_.detail(line);

    co_await s.prepare(*this);
    bench_figures figures;
    figures.phases.resize(static_cast<std::size_t>(s.phases));
    for (int p = 0; p < s.phases; ++p) co_await phase(s, p, figures.phases[static_cast<std::size_t>(p)]);
    co_await s.conclude(*this);
    finish();

    if (!refused_.empty()) {
        report_.error("bench: cannot " + s.refusal + " with these options: " + refused_);
        write_stderr("Try 'redlock bench --help'.\n");
        co_return exit_code::usage;
    }
    figures.errors = errors_;
    write_stdout(s.output(figures, o_.json));
    if (errors_ > 0) report_.note("bench: " + std::to_string(errors_) + " errors; first: " + first_error_);
    if (interrupted_ != 0) {
        report_.error("bench: interrupted by " + signal_name(interrupted_) + "; the figures cover the run until then");
        co_return exit_code::signal_base + interrupted_;
    }
    co_return exit_code::ok;
}

asio::awaitable<void> bench_driver::phase(bench_scenario& s, int index, bench_phase& out)
{
    const auto start = bench_clock::now();
    const auto cpu_start = cpu_now();
    const auto allocations_start = allocation_count();
    end_ = stopping_ ? start : start + o_.duration;
    phase_ = &out;
    const int workers = static_cast<int>(cancels_.size());
    active_ = workers;
    for (int i = 0; i < workers; ++i) asio::co_spawn(ctx_, worker(s, i, index), rethrow);
    if (workers > 0) {
        phase_done_.expires_at(bench_clock::time_point::max());  // cancelled by the last worker
        while (active_ > 0) co_await phase_done_.async_wait(use_tuple);
    } else if (!stopping_) {
        phase_done_.expires_at(end_);  // or cancelled by an early stop
        co_await phase_done_.async_wait(use_tuple);
    }
    out.seconds = std::chrono::duration<double>(bench_clock::now() - start).count();
    const auto cpu_end = cpu_now();
    out.cpu = {cpu_end.user - cpu_start.user, cpu_end.system - cpu_start.system};
    if (counting_allocations()) out.allocations = allocation_count() - allocations_start;
    phase_ = nullptr;
}

asio::awaitable<void> bench_driver::worker(bench_scenario& s, int index, int phase)
{
    bench_worker w(*this, index, phase);
    co_await s.work(w);
    if (--active_ == 0) phase_done_.cancel();
}

}  // namespace redlock::cli
