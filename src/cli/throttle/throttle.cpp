// `redlock throttle`: wait for room in a rate limiter, then run the command in redlock's place (execv). Nothing
// is held once the room is taken, so nothing needs redlock to stay: the command keeps its own exit code, signals
// and process id, as with `flock -n ... cmd` or `nice cmd`.
#include "cli/common/child.hpp"
#include "cli/common/duration.hpp"
#include "cli/common/exit_codes.hpp"
#include "cli/common/run_to_exit_code.hpp"
#include "cli/common/signals.hpp"
#include "cli/common/wait_progress.hpp"
#include "cli/throttle/options.hpp"
#include "cli/throttle/throttle.hpp"

#include <redlock/rate_limiter.hpp>
#include <redlock/redis.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

double ms_since(clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

const char* strategy_name(rate_strategy s)
{
    switch (s) {
        case rate_strategy::fixed_window:
            return "fixed window";
        case rate_strategy::sliding_window:
            return "sliding window";
        case rate_strategy::gcra:
            break;
    }
    return "gcra";
}

rate_limit limit_of(const throttle_options& o)
{
    rate_limit l;
    l.strategy = o.strategy;
    l.rate = o.rate.count;
    l.period = o.rate.period;
    l.burst = o.burst;
    l.wait = o.wait ? *o.wait : rate_limit::wait_forever;
    return l;
}

class throttle_session {
public:
    throttle_session(asio::io_context& ctx, const throttle_options& o)
        : o_(o), report_(o.output), signals_(ctx), store_(ctx.get_executor(), o.node)
    {
        // A signal the caller left ignored stays ignored, for us and for the command that takes our place.
        for (int signo : {SIGINT, SIGTERM, SIGHUP})
            if (!signal_ignored(signo)) signals_.add(signo);
    }

    asio::awaitable<int> run();
    void finish()
    {
        signals_.cancel();
        store_.close();
    }

private:
    std::string limit_text() const
    {
        std::string text = std::string(strategy_name(o_.strategy)) + " " + format_rate(o_.rate);
        if (o_.strategy == rate_strategy::gcra) text += ", burst " + std::to_string(o_.burst);
        return text;
    }
    std::string waited() const
    {
        if (!o_.wait) return "";
        return *o_.wait == std::chrono::milliseconds(0) ? " in one try (--wait 0)"
                                                        : " within --wait " + format_duration(*o_.wait);
    }

    const throttle_options& o_;
    reporter report_;
    asio::signal_set signals_;
    redis store_;
    asio::cancellation_signal cancel_;  // the connect or the wait, on a signal
    int interrupted_ = 0;
};

asio::awaitable<int> throttle_session::run()
{
    signals_.async_wait([this](error_code ec, int signo) {
        if (ec) return;
        interrupted_ = signo;
        cancel_.emit(asio::cancellation_type::terminal);
    });
    const auto interrupted_exit = [this] {
        report_.error("interrupted by " + signal_name(interrupted_) + " while waiting for room in '" + o_.key + "'" +
                      (o_.command.empty() ? std::string() : "; the command was not run"));
        return exit_code::signal_base + interrupted_;
    };
    report_.detail("throttle '" + o_.key + "' (" + limit_text() + ") on " + store_.name() + ", cost " +
                   std::to_string(o_.cost) + ", wait " +
                   (o_.wait ? format_duration(*o_.wait) : std::string("forever")));

    // One try must not find the node still connecting (as exec --wait 0); a longer wait retries anyway.
    const auto start = clock::now();
    if (o_.wait == std::chrono::milliseconds(0)) {
        diagnostics connect_diag;
        co_await store_.async_connect(connect_diag, asio::bind_cancellation_slot(cancel_.slot(), use_tuple));
        if (interrupted_ != 0) co_return interrupted_exit();
    }

    rate_limiter limiter(store_, o_.key, limit_of(o_));
    diagnostics diag;
    wait_progress progress(store_.get_executor(), report_, diag, 1,
                           [](const std::vector<node_outcome>& nodes) { return describe_nodes(nodes); });
    progress.start("room in '" + o_.key + "'");
    auto [ec, d] =
        co_await limiter.async_acquire(o_.cost, diag, asio::bind_cancellation_slot(cancel_.slot(), use_tuple));
    progress.stop();
    if (interrupted_ != 0) co_return interrupted_exit();
    if (ec == error::invalid_argument) {
        report_.error("throttle: cannot use the rate limiter '" + o_.key +
                      "' with these options: " + (diag.message().empty() ? ec.message() : std::string(diag.message())));
        write_stderr("Try 'redlock throttle --help'.\n");
        co_return exit_code::usage;
    }
    if (ec == error::rate_limited) {
        report_.error("no room in '" + o_.key + "' (" + limit_text() + ") for cost " + std::to_string(o_.cost) +
                      waited() + "; room again in " + std::to_string(d.retry_after.count()) + " ms" +
                      (o_.command.empty() ? std::string() : "; the command was not run"));
        co_return exit_code::busy;
    }
    if (ec) {
        std::string text = "could not ask the rate limiter '" + o_.key + "'" + waited() + ": " + ec.message();
        if (!diag.message().empty()) text += ": " + std::string(diag.message());
        report_.error(text);
        report_.error_lines(describe_nodes(diag.nodes()));
        co_return exit_code::unavailable;
    }
    report_.detail("admitted by '" + o_.key + "' in " + format_ms(ms_since(start)) + ": remaining " +
                   std::to_string(d.remaining) + " of " + std::to_string(d.limit) + ", full again in " +
                   std::to_string(d.reset_after.count()) + " ms");
    co_return exit_code::ok;
}

}  // namespace

namespace {

int run_throttle(const throttle_options& o)
{
    reporter report(o.output);
    // A typo in the command must not take room: look it up before any I/O.
    std::optional<std::string> path;
    if (!o.command.empty()) {
        int error = 0;
        path = resolve_command(o.command.front(), error);
        if (!path) {
            report.error("cannot run '" + o.command.front() +
                         "': " + (error == ENOENT ? std::string("command not found") : std::strerror(error)));
            return error == ENOENT ? exit_code::not_found : exit_code::cannot_run;
        }
    }

    int code = exit_code::lost;
    {
        asio::io_context ctx(1);
        throttle_session session(ctx, o);
        code = run_to_exit_code(ctx, session.run(), "throttle");
        session.finish();
    }  // the connections are closed and our signal handlers gone before the command takes our place
    if (code != exit_code::ok || o.command.empty()) return code;

    std::vector<char*> argv;
    for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    close_own_fds_on_exec();
    ::execv(path->c_str(), argv.data());
    const int e = errno;
    report.error("cannot run '" + o.command.front() + "': " + std::strerror(e) + " (its room in '" + o.key +
                 "' was taken)");
    return e == ENOENT ? exit_code::not_found : exit_code::cannot_run;
}

}  // namespace

subcommand throttle_command()
{
    return {"throttle", throttle_help, &parse_and_run<parse_throttle, run_throttle>};
}

}  // namespace redlock::cli
