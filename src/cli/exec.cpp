// `redlock exec`: take the lock, run the command under it, stop the command if the lease is lost, release.
#include "child.hpp"
#include "commands.hpp"
#include "duration.hpp"
#include "exit_codes.hpp"
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
#include <cerrno>
#include <csignal>
#include <cstring>
#include <unistd.h>

extern char** environ;

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// A spawned coroutine's exception leaves ctx.run() and reaches the command's error handling (never lost).
constexpr auto rethrow = [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
};

double ms_since(clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

std::vector<std::string> child_environment(const std::string& key, const lease& held)
{
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        // An outer redlock's values must not leak through: the command sees this lock only.
        if (entry.starts_with("REDLOCK_KEY=") || entry.starts_with("REDLOCK_TOKEN=") ||
            entry.starts_with("REDLOCK_FENCING_TOKEN="))
            continue;
        env.emplace_back(entry);
    }
    env.push_back("REDLOCK_KEY=" + key);
    env.push_back("REDLOCK_TOKEN=" + held.token());
    if (held.fencing_token() != 0) env.push_back("REDLOCK_FENCING_TOKEN=" + std::to_string(held.fencing_token()));
    return env;
}

std::string command_line(const std::vector<std::string>& command)
{
    std::string out;
    for (const auto& a : command) {
        if (!out.empty()) out += ' ';
        out += a;
    }
    return out;
}

class exec_session {
public:
    exec_session(asio::io_context& ctx, const exec_options& o, std::string path)
        : o_(o),
          path_(std::move(path)),
          report_(o.output),
          signals_(ctx),
          sigchld_(ctx, SIGCHLD),
          client_(ctx.get_executor(), o.nodes),
          grace_timer_(ctx),
          pause_(ctx),
          progress_(ctx)
    {
        // Signals the caller left ignored (nohup, `cmd &` in a script) stay ignored, for us and the command.
        for (int signo : {SIGINT, SIGTERM, SIGHUP})
            if (!signal_ignored(signo)) signals_.add(signo);
    }

    ~exec_session()
    {
        // Only after an internal error: never leave the command running without its lock.
        if (child_.running()) {
            child_.signal(SIGKILL);
            while (!child_.try_reap()) ::usleep(1000);
        }
    }

    asio::awaitable<int> run();

private:
    enum class phase { acquiring, running, finishing };

    asio::awaitable<void> watch_signals();
    void on_signal(int signo);
    asio::awaitable<void> connect();
    asio::awaitable<int> run_command(lease& held);
    void on_lost();
    void stop_leftovers();
    asio::awaitable<void> sleep_for(std::chrono::milliseconds d);
    asio::awaitable<void> settle();
    int interrupted_exit(std::string_view while_doing) const;
    std::vector<std::string> node_lines(const std::vector<node_outcome>& nodes) const;
    void schedule_progress(clock::time_point since);
    void finish();

    const exec_options& o_;
    std::string path_;
    reporter report_;
    asio::signal_set signals_;
    asio::signal_set sigchld_;  // before the fork: an early exit of the command is not missed
    client client_;
    asio::cancellation_signal cancel_op_;  // the connect or lock in progress, on a signal
    asio::steady_timer grace_timer_;
    asio::steady_timer pause_;
    asio::steady_timer progress_;  // "still waiting" while the lock is busy or the nodes are down
    diagnostics lock_diag_;        // the last attempt's outcome, read by the progress report
    phase phase_ = phase::acquiring;
    int interrupted_ = 0;  // the signal that interrupted the acquisition
    child_process child_;
    bool lost_ = false;
    diagnostics connect_diag_;
    std::vector<node_outcome> connect_outcomes_;
};

asio::awaitable<void> exec_session::watch_signals()
{
    for (;;) {
        auto [ec, signo] = co_await signals_.async_wait(use_tuple);
        if (ec) co_return;  // cancelled at the end
        on_signal(signo);
    }
}

void exec_session::on_signal(int signo)
{
    switch (phase_) {
        case phase::acquiring:
            if (interrupted_ == 0) interrupted_ = signo;
            cancel_op_.emit(asio::cancellation_type::terminal);
            break;
        case phase::running:
            report_.detail("forwarding " + signal_name(signo) + " to the command");
            child_.signal(signo);
            break;
        case phase::finishing:
            break;  // the command is gone; the release is bounded by the per-node deadline
    }
}

int exec_session::interrupted_exit(std::string_view while_doing) const
{
    report_.error("interrupted by " + signal_name(interrupted_) + " while " + std::string(while_doing) + " '" + o_.key +
                  "'; the command was not run");
    return exit_code::signal_base + interrupted_;
}

asio::awaitable<void> exec_session::sleep_for(std::chrono::milliseconds d)
{
    pause_.expires_after(d);
    co_await pause_.async_wait(use_tuple);
}

// A quorum operation completes as soon as its outcome is decided, and a failed or cancelled attempt sends its
// releases in the background: before closing the connections, let the requests still in flight reach their
// nodes (or time out: the per-node deadline is this long), rather than leave keys there until their TTL.
asio::awaitable<void> exec_session::settle()
{
    co_await sleep_for(std::clamp(o_.ttl / 10, std::chrono::milliseconds(1), std::chrono::milliseconds(50)));
}

std::vector<std::string> exec_session::node_lines(const std::vector<node_outcome>& nodes) const
{
    auto lines = describe_nodes(nodes);
    // "not connected" says little: add why the connection failed, when the connect phase knew.
    for (std::size_t i = 0; i < nodes.size() && i < connect_outcomes_.size() && i < lines.size(); ++i) {
        const auto& c = connect_outcomes_[i];
        if (nodes[i].what == node_outcome::result::failed && c.ec) {
            lines[i] += "; connecting: " + (c.message.empty() ? c.ec.message() : c.message);
        }
    }
    return lines;
}

// With --wait 0 the one attempt must not find nodes still connecting: wait for each node's first connection
// attempt (each bounded by its connect timeout, 2 s), interruptible by signals. With a longer wait, the retries
// cover slow connections, and waiting for all nodes would make one hung node cost every run 2 s: the lock
// starts at once, and the connection results only feed the error messages.
asio::awaitable<void> exec_session::connect()
{
    if (o_.wait != std::chrono::milliseconds(0)) {
        client_.async_connect(connect_diag_, [this](error_code) { connect_outcomes_ = connect_diag_.nodes(); });
        co_return;
    }
    const auto start = clock::now();
    auto [ec] =
        co_await client_.async_connect(connect_diag_, asio::bind_cancellation_slot(cancel_op_.slot(), use_tuple));
    connect_outcomes_ = connect_diag_.nodes();
    if (ec == asio::error::operation_aborted) co_return;
    if (ec) {
        report_.detail("connecting: " + std::string(connect_diag_.message()) + " (" + format_ms(ms_since(start)) + ")");
        report_.detail_lines(describe_nodes(connect_outcomes_));
    } else {
        report_.detail("connected to a quorum in " + format_ms(ms_since(start)));
    }
}

asio::awaitable<int> exec_session::run()
{
    asio::co_spawn(signals_.get_executor(), watch_signals(), rethrow);
    const auto started = clock::now();
    const auto deadline = o_.wait ? started + *o_.wait : clock::time_point::max();
    report_.detail("lock '" + o_.key + "' on " + std::to_string(client_.size()) + " node(s), quorum " +
                   std::to_string(client_.quorum()) + ", ttl " + format_duration(o_.ttl) + ", wait " +
                   (o_.wait ? format_duration(*o_.wait) : std::string("forever")) + ", watchdog " +
                   (o_.watchdog ? "on" : "off"));

    co_await connect();
    if (interrupted_ != 0) {
        finish();
        co_return interrupted_exit("connecting for lock");
    }

    lock_options lo;
    lo.ttl = o_.ttl;
    lo.watchdog = o_.watchdog;
    lo.fencing = o_.fencing;
    if (!o_.wait) {
        lo.wait = lock_options::wait_forever;
    } else {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
        lo.wait = std::max(std::chrono::milliseconds(0), left);  // 0: the one attempt --wait still grants
    }
    mutex m(client_, o_.key, lo);
    auto& diag = lock_diag_;
    const auto lock_start = clock::now();
    schedule_progress(lock_start);
    auto [ec, held] = co_await m.async_lock(diag, asio::bind_cancellation_slot(cancel_op_.slot(), use_tuple));
    progress_.cancel();
    if (interrupted_ != 0) {
        if (held) co_await held.async_release(use_tuple);
        co_await settle();
        finish();
        co_return interrupted_exit("waiting for lock");
    }
    if (ec) {
        const bool busy = ec == error::not_acquired;
        const std::string waited = !o_.wait ? ""
                                   : *o_.wait == std::chrono::milliseconds(0)
                                       ? " in one attempt (--wait 0)"
                                       : " within --wait " + format_duration(*o_.wait);
        std::string text = "could not acquire lock '" + o_.key + "'" + waited + ": " + ec.message();
        if (!diag.message().empty()) text += ": " + std::string(diag.message());
        report_.error(text);
        report_.error_lines(node_lines(diag.nodes()));
        co_await settle();
        finish();
        co_return busy ? exit_code::busy : exit_code::unavailable;
    }
    report_.detail("acquired '" + o_.key + "' in " + format_ms(ms_since(lock_start)) + ", token " + held.token() +
                   (held.fencing_token() != 0 ? ", fencing token " + std::to_string(held.fencing_token()) : "") +
                   ", valid for " + std::to_string(held.validity().count()) + " ms");
    report_.detail_lines(describe_nodes(diag.nodes()));

    const int code = co_await run_command(held);
    finish();
    co_return code;
}

asio::awaitable<int> exec_session::run_command(lease& held)
{
    child_spec spec;
    spec.path = path_;
    spec.argv = o_.command;
    spec.env = child_environment(o_.key, held);
    spec.own_group = !in_terminal_foreground();
    spec.parent_death_signal = o_.kill_signal;  // if redlock dies, nobody keeps the lease: stop the command
    const auto run_start = clock::now();
    if (const int e = child_.start(spec); e != 0) {
        phase_ = phase::finishing;
        report_.error("cannot run '" + o_.command.front() + "': " + std::strerror(e));
        co_await held.async_release(use_tuple);
        co_await settle();
        co_return e == ENOENT ? exit_code::not_found : exit_code::cannot_run;
    }
    phase_ = phase::running;  // before any co_await: a signal handled from now on is forwarded
    report_.detail("running '" + command_line(o_.command) + "' (pid " + std::to_string(child_.pid()) +
                   (spec.own_group ? ", own process group)" : ", in redlock's process group)"));
    held.async_wait_lost([this](error_code ec) {
        if (ec == error::lost) on_lost();
    });

    while (!child_.try_reap()) co_await sigchld_.async_wait(use_tuple);
    phase_ = phase::finishing;
    // The lease counts as held to the end only if it was still valid when the command was seen to exit.
    const bool expired = lost_ || held.lost() || clock::now() >= held.valid_until();
    if (lost_) stop_leftovers();
    grace_timer_.cancel();
    report_.detail("the command " + child_.describe_exit() + " after " + format_ms(ms_since(run_start)));

    const auto release_start = clock::now();
    auto [rec] = co_await held.async_release(use_tuple);
    const auto release_time = ms_since(release_start);
    co_await settle();
    if (expired) {
        if (!lost_) {
            report_.error("the lease on '" + o_.key + "' ran out before the command finished (the command " +
                          child_.describe_exit() + "): its work was not protected to the end");
        }
        co_return exit_code::lost;
    }
    if (rec) {
        report_.error("the command finished under the lock, but releasing '" + o_.key + "' failed: " + rec.message() +
                      "; the keys expire within the TTL (" + format_duration(o_.ttl) + ")");
    } else {
        report_.detail("released '" + o_.key + "' in " + format_ms(release_time));
    }
    co_return child_.exit_code();
}

void exec_session::on_lost()
{
    if (phase_ != phase::running || lost_) return;
    lost_ = true;
    const std::string why = o_.watchdog ? "the watchdog could not extend it on a quorum of nodes in time"
                                        : "its TTL of " + format_duration(o_.ttl) + " ran out (--no-watchdog)";
    report_.error("lost the lease on '" + o_.key + "' while the command ran: " + why + "; sending " +
                  signal_name(o_.kill_signal) + " to the command");
    child_.signal(o_.kill_signal);
    // A stopped command would keep the signal pending: let it act on it.
    if (o_.kill_signal != SIGKILL && o_.kill_signal != SIGCONT) child_.signal(SIGCONT);
    grace_timer_.expires_after(o_.kill_grace);
    grace_timer_.async_wait([this](error_code ec) {
        if (ec || !child_.running()) return;
        report_.error("the command did not exit within " + format_duration(o_.kill_grace) + " of " +
                      signal_name(o_.kill_signal) + ": sending SIGKILL");
        child_.signal(SIGKILL);
    });
}

// After a loss, the command's own process group must end too: what the command started may still touch the
// resource. The command had its grace period; what it leaves behind is killed at once.
void exec_session::stop_leftovers()
{
    if (child_.signal_leftovers(SIGKILL)) report_.detail("killed what was left of the command's process group");
}

// A long wait should not be silent when it is not the lock being busy: with the nodes unreachable, say so
// every 10 s (unless -q); with -v, report every wait's progress, every 5 s.
void exec_session::schedule_progress(clock::time_point since)
{
    progress_.expires_after(report_.verbose() ? std::chrono::seconds(5) : std::chrono::seconds(10));
    progress_.async_wait([this, since](error_code ec) {
        if (ec || phase_ != phase::acquiring) return;
        const auto& nodes = lock_diag_.nodes();
        std::size_t failed = 0;
        for (const auto& n : nodes)
            if (n.what == node_outcome::result::failed) ++failed;
        const bool unreachable = !nodes.empty() && failed > nodes.size() - client_.quorum();
        const auto waited = std::chrono::duration_cast<std::chrono::seconds>(clock::now() - since).count();
        std::string text = "still waiting for lock '" + o_.key + "' after " + std::to_string(waited) + " s";
        if (!lock_diag_.message().empty()) text += "; last attempt: " + std::string(lock_diag_.message());
        if (report_.verbose()) {
            report_.detail(text);
            report_.detail_lines(node_lines(nodes));
        } else if (unreachable) {
            report_.note(text);
            report_.note_lines(node_lines(nodes));
        }
        schedule_progress(since);
    });
}

void exec_session::finish()
{
    progress_.cancel();
    phase_ = phase::finishing;
    signals_.cancel();
    sigchld_.cancel();
    grace_timer_.cancel();
    client_.close();
}

}  // namespace

int run_exec(const exec_options& o)
{
    reporter report(o.output);
    // A typo in the command must not take (and hold) the lock: look it up before any I/O.
    int error = 0;
    auto path = resolve_command(o.command.front(), error);
    if (!path) {
        report.error("cannot run '" + o.command.front() +
                     "': " + (error == ENOENT ? std::string("command not found") : std::strerror(error)));
        return error == ENOENT ? exit_code::not_found : exit_code::cannot_run;
    }

    asio::io_context ctx(1);
    int code = exit_code::lost;
    exec_session session(ctx, o, *path);
    asio::co_spawn(ctx, session.run(), [&](std::exception_ptr e, int result) {
        code = result;
        if (e) {
            code = exit_code::lost;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                report.error(std::string("internal error: ") + x.what());
            } catch (...) {
                report.error("internal error");
            }
        }
        ctx.stop();
    });
    ctx.run();
    return code;
}

}  // namespace redlock::cli
