// `redlock exec`: take the lock (or a semaphore's permit), run the command under it, stop the command if the lease
// is lost, release.
#include "cli/common/child.hpp"
#include "cli/common/command_env.hpp"
#include "cli/common/duration.hpp"
#include "cli/common/exit_codes.hpp"
#include "cli/common/guarded_command.hpp"
#include "cli/common/guarded_run.hpp"
#include "cli/common/run_to_exit_code.hpp"
#include "cli/common/signal_watch.hpp"
#include "cli/common/signals.hpp"
#include "cli/common/wait_progress.hpp"
#include "cli/exec/exec.hpp"
#include "cli/exec/held_grant.hpp"
#include "cli/exec/options.hpp"

#include <redlock/client.hpp>
#include <redlock/mutex.hpp>
#include <redlock/semaphore.hpp>
#include <redlock/shared_mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <unistd.h>

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

std::vector<std::string> child_environment(const exec_options& o, const held_grant& held)
{
    // An outer redlock's values must not leak through: the command sees this lock only.
    auto env = inherited_environment();
    env.push_back("REDLOCK_KEY=" + o.key);
    env.push_back("REDLOCK_TOKEN=" + held.token());
    if (held.fencing_token() != 0) env.push_back("REDLOCK_FENCING_TOKEN=" + std::to_string(held.fencing_token()));
    if (held.is_permit()) {
        env.push_back("REDLOCK_PERMIT_ID=" + held.token());  // the permit's member in the semaphore's set
        env.push_back("REDLOCK_LIMIT=" + std::to_string(o.limit));
    }
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
          signals_(ctx.get_executor()),
          guard_(ctx, report_,
                 {.key = o.key,
                  .watchdog = o.watchdog,
                  .ttl = o.ttl,
                  .kill_signal = o.kill_signal,
                  .kill_grace = o.kill_grace}),
          client_(ctx.get_executor(), o.nodes),
          pause_(ctx),
          progress_(ctx.get_executor(), report_, lock_diag_, client_.quorum(),
                    [this](const std::vector<node_outcome>& nodes) { return node_lines(nodes); })
    {
        for (int signo : {SIGINT, SIGTERM, SIGHUP}) signals_.add(signo);
    }

    asio::awaitable<int> run();
    // Every way out ends here, on the io_context (run_guarded): the command is stopped if it still runs, and
    // a lease still held is released, before the process exits. `failure`: the internal error, if any.
    asio::awaitable<void> shutdown(std::exception_ptr failure);

private:
    enum class phase { acquiring, running, finishing };

    asio::awaitable<void> watch_signals();
    void on_signal(const signal_event& e);
    asio::awaitable<void> connect();
    asio::awaitable<std::tuple<error_code, held_grant>> acquire(const lock_options& lo, diagnostics& diag);
    asio::awaitable<std::tuple<error_code, held_grant>> acquire_plain(lock_options lo, diagnostics& diag);
    bool semaphore_mode() const noexcept { return o_.limit > 1; }
    std::string what() const;
    std::string_view refusal() const noexcept
    {
        return semaphore_mode() ? "no permit free there" : "held by another owner";
    }
    void describe_quorum() const;
    asio::awaitable<int> run_command();
    asio::awaitable<error_code> release();
    asio::awaitable<void> sleep_for(asio::steady_timer& timer, std::chrono::milliseconds d);
    asio::awaitable<void> settle(asio::steady_timer& timer);
    int interrupted_exit(std::string_view while_doing) const;
    int invalid_options_exit(const diagnostics& diag) const;
    std::vector<std::string> node_lines(const std::vector<node_outcome>& nodes) const;
    void finish();

    const exec_options& o_;
    std::string path_;
    reporter report_;
    signal_watch signals_;
    guarded_command guard_;  // before the fork: an early exit of the command is not missed; its destructor kills
    client client_;
    held_grant held_;                      // owned here, not by a coroutine frame: shutdown() releases it
    asio::cancellation_signal cancel_op_;  // the connect or lock in progress, on a signal
    asio::steady_timer pause_;             // shutdown()'s
    wait_progress progress_;               // "still waiting" while the lock is busy or the nodes are down
    diagnostics lock_diag_;                // the last attempt's outcome, read by the progress report
    std::uint32_t earlier_attempts_ = 0;   // a plain exec's try, before the wait whose attempts lock_diag_ counts
    phase phase_ = phase::acquiring;
    int interrupted_ = 0;  // the signal that interrupted the acquisition
    diagnostics connect_diag_;
    std::vector<node_outcome> connect_outcomes_;
};

asio::awaitable<void> exec_session::watch_signals()
{
    for (;;) {
        signal_event e;
        auto [ec, n] = co_await signals_.async_wait(e, use_tuple);
        if (ec) co_return;  // cancelled at the end
        on_signal(e);
    }
}

void exec_session::on_signal(const signal_event& e)
{
    switch (phase_) {
        case phase::acquiring:
            if (interrupted_ == 0) interrupted_ = e.signo;
            cancel_op_.emit(asio::cancellation_type::terminal);
            break;
        case phase::running:
            // Ctrl-C in a terminal goes to its whole foreground process group: a command in ours has it already.
            if (e.from_terminal() && !guard_.child().own_group()) {
                report_.detail(signal_name(e.signo) +
                               " from the terminal: the command got it too (it is in redlock's process group)");
                break;
            }
            report_.detail("forwarding " + signal_name(e.signo) + " to the command");
            guard_.child().signal(e.signo);
            break;
        case phase::finishing:
            break;  // the command is gone; the release is bounded by the per-node deadline
    }
}

int exec_session::interrupted_exit(std::string_view while_doing) const
{
    report_.error("interrupted by " + signal_name(interrupted_) + " while " + std::string(while_doing) + " " + what() +
                  "; the command was not run");
    return exit_code::signal_base + interrupted_;
}

// The library checks the lock options before any I/O (lock_options::max_ttl, a ttl the watchdog can keep up
// with...): what it refuses is a bad command line.
int exec_session::invalid_options_exit(const diagnostics& diag) const
{
    std::string text =
        "exec: cannot " + (semaphore_mode() ? "take " + what() : "lock '" + o_.key + "'") + " with these options";
    text += diag.message().empty() ? std::string(": invalid argument") : ": " + std::string(diag.message());
    report_.error(text);
    write_stderr("Try 'redlock exec --help'.\n");
    return exit_code::usage;
}

asio::awaitable<void> exec_session::sleep_for(asio::steady_timer& timer, std::chrono::milliseconds d)
{
    timer.expires_after(d);
    co_await timer.async_wait(use_tuple);
}

// A quorum operation completes as soon as its outcome is decided, and a failed or cancelled attempt sends its
// releases in the background: before closing the connections, let the requests still in flight reach their
// nodes (or time out: the per-node deadline is this long), rather than leave keys there until their TTL.
asio::awaitable<void> exec_session::settle(asio::steady_timer& timer)
{
    co_await sleep_for(timer, std::clamp(o_.ttl / 10, std::chrono::milliseconds(1), std::chrono::milliseconds(50)));
}

std::vector<std::string> exec_session::node_lines(const std::vector<node_outcome>& nodes) const
{
    auto lines = describe_nodes(nodes, refusal());
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

// "lock 'K'", "the read side of lock 'K'", or "a permit of semaphore 'K' (limit N)": what the messages say is being
// taken.
std::string exec_session::what() const
{
    if (!semaphore_mode()) return (o_.shared ? "the read side of lock '" : "lock '") + o_.key + "'";
    return "a permit of semaphore '" + o_.key + "' (limit " + std::to_string(o_.limit) + ")";
}

// The start of -v: the quorum the grant needs. A semaphore's grows with its limit (doc/semaphores.md):
// say how many node failures it tolerates, and plainly when none.
void exec_session::describe_quorum() const
{
    const std::string settings = ", ttl " + format_duration(o_.ttl) + ", wait " +
                                 (o_.wait ? format_duration(*o_.wait) : std::string("forever")) + ", watchdog " +
                                 (o_.watchdog ? "on" : "off") +
                                 (o_.replica_acks > 0 ? ", replica acks " + std::to_string(o_.replica_acks) : "");
    const std::string nodes = std::to_string(client_.size()) + " node(s)";
    if (!semaphore_mode()) {
        const std::string side = o_.shared ? " (read side)" : "";
        report_.detail("lock '" + o_.key + "'" + side + " on " + nodes + ", quorum " +
                       std::to_string(client_.quorum()) + settings);
        return;
    }
    const semaphore s(client_, o_.key, o_.limit);
    const auto tolerated = s.failures_tolerated();
    report_.detail("semaphore '" + o_.key + "' with limit " + std::to_string(o_.limit) + " on " + nodes + ", quorum " +
                   std::to_string(s.quorum()) + ", tolerates " + std::to_string(tolerated) + " node failure(s)" +
                   settings);
    if (tolerated == 0)
        report_.detail("a permit needs all " + std::to_string(client_.size()) +
                       " node(s): no node may fail (with one down no permit is granted, and a permit held is lost "
                       "when the watchdog cannot extend it on every node)");
}

// The lock (--limit 1), or with --shared its read side, or one permit of the semaphore; cancelled by a signal through
// cancel_op_. A fair lock has no sides.
asio::awaitable<std::tuple<error_code, held_grant>> exec_session::acquire(const lock_options& lo, diagnostics& diag)
{
    auto token = asio::bind_cancellation_slot(cancel_op_.slot(), use_tuple);
    if (!semaphore_mode() && (o_.fair || !o_.shared)) {
        if (!o_.fair) co_return co_await acquire_plain(lo, diag);
        mutex m(client_, o_.key, lo);
        auto [ec, held] = co_await m.async_lock(diag, token);
        co_return std::tuple{ec, held_grant(std::move(held))};
    }
    if (!semaphore_mode()) {
        shared_mutex m(client_, o_.key, lo);
        auto [ec, held] = co_await m.async_lock_shared(diag, token);
        co_return std::tuple{ec, held_grant(std::move(held))};
    }
    semaphore s(client_, o_.key, o_.limit,
                {.ttl = lo.ttl,
                 .wait = lo.wait,
                 .watchdog = lo.watchdog,
                 .fair = lo.fair,
                 .waiter_ttl = lo.waiter_ttl,
                 .replica_acks = lo.replica_acks,
                 .replica_ack_timeout = lo.replica_ack_timeout});
    auto [ec, held] = co_await s.async_acquire(1, diag, token);
    co_return std::tuple{ec, held_grant(std::move(held))};
}

// An exec without --shared is the plain lock when it gets the key at once: uncontended, it costs what it always did
// (SET NX). If it must wait, it waits as the read-write lock's writer, whose marks hold back the readers that come
// after it: readers do not wait for a plain waiter, and a stream of overlapping `--shared` execs would keep it out
// for good. Its key is the plain lock's either way.
asio::awaitable<std::tuple<error_code, held_grant>> exec_session::acquire_plain(lock_options lo, diagnostics& diag)
{
    auto token = asio::bind_cancellation_slot(cancel_op_.slot(), use_tuple);
    const auto start = clock::now();
    auto [ec, held] = co_await mutex(client_, o_.key, lo).async_try_lock(diag, token);
    if (!ec || lo.wait == std::chrono::milliseconds(0) || ec == error::invalid_argument ||
        ec == asio::error::operation_aborted)
        co_return std::tuple{ec, held_grant(std::move(held))};
    earlier_attempts_ = diag.waiting().attempts;
    if (lo.wait != lock_options::wait_forever) {
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start);
        lo.wait = std::max(std::chrono::milliseconds(0), lo.wait - waited);
    }
    auto [wec, write] = co_await shared_mutex(client_, o_.key, lo).async_lock(diag, token);
    co_return std::tuple{wec, held_grant(std::move(write))};
}

asio::awaitable<int> exec_session::run()
{
    asio::co_spawn(co_await asio::this_coro::executor, watch_signals(), rethrow);
    const auto started = clock::now();
    const auto deadline = o_.wait ? started + *o_.wait : clock::time_point::max();
    describe_quorum();

    co_await connect();
    if (interrupted_ != 0) co_return interrupted_exit("connecting for");

    lock_options lo;
    lo.ttl = o_.ttl;
    lo.watchdog = o_.watchdog;
    lo.fencing = o_.fencing;
    lo.fair = o_.fair;
    lo.waiter_ttl = o_.waiter_ttl;
    lo.replica_acks = o_.replica_acks;
    lo.replica_ack_timeout = o_.replica_ack_timeout;
    if (!o_.wait) {
        lo.wait = lock_options::wait_forever;
    } else {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
        lo.wait = std::max(std::chrono::milliseconds(0), left);  // 0: the one attempt --wait still grants
    }
    auto& diag = lock_diag_;
    const auto lock_start = clock::now();
    progress_.start(what());
    auto [ec, held] = co_await acquire(lo, diag);
    held_ = std::move(held);  // from here on, shutdown() releases it on every way out
    progress_.stop();
    if (interrupted_ != 0) co_return interrupted_exit("waiting for");
    if (ec == error::invalid_argument) co_return invalid_options_exit(diag);
    if (ec) {
        const bool busy = ec == error::not_acquired;
        const std::string waited = !o_.wait ? ""
                                   : *o_.wait == std::chrono::milliseconds(0)
                                       ? " in one attempt (--wait 0)"
                                       : " within --wait " + format_duration(*o_.wait);
        // error::not_acquired's own text speaks of a lock held by another owner.
        const std::string why = busy && semaphore_mode() ? "not acquired: every permit is taken" : ec.message();
        std::string text = "could not acquire " + what() + waited + ": " + why;
        if (!diag.message().empty()) text += ": " + std::string(diag.message());
        report_.error(text);
        report_.error_lines(node_lines(diag.nodes()));
        co_return busy ? exit_code::busy : exit_code::unavailable;
    }
    const std::string taken = semaphore_mode() ? "a permit of '" + o_.key + "'"
                              : o_.shared      ? "the read side of '" + o_.key + "'"
                                               : "'" + o_.key + "'";
    // How it waited: a test or a log tells a wake-up by a release message from a timed retry.
    const auto& waiting = diag.waiting();
    const auto attempts = earlier_attempts_ + waiting.attempts;
    const std::string how = attempts <= 1 ? ""
                                          : " (" + std::to_string(attempts) + " attempts, " +
                                                std::to_string(waiting.woken_by_release) + " woken by a release, " +
                                                std::to_string(waiting.timed_retries) + " timed)";
    report_.detail("acquired " + taken + " in " + format_ms(ms_since(lock_start)) + how +
                   (semaphore_mode() ? ", permit id " : ", token ") + held_.token() +
                   (held_.fencing_token() != 0 ? ", fencing token " + std::to_string(held_.fencing_token()) : "") +
                   ", valid for " + std::to_string(held_.validity().count()) + " ms");
    report_.detail_lines(describe_nodes(diag.nodes(), refusal()));

    co_return co_await run_command();
}

asio::awaitable<int> exec_session::run_command()
{
    child_spec spec;
    spec.path = path_;
    spec.argv = o_.command;
    spec.env = child_environment(o_, held_);
    spec.own_group = !in_terminal_foreground();
    const auto run_start = clock::now();
    if (const int e = guard_.start(spec); e != 0) {
        phase_ = phase::finishing;
        report_.error("cannot run '" + o_.command.front() + "': " + std::strerror(e));
        co_await release();
        co_return e == ENOENT ? exit_code::not_found : exit_code::cannot_run;
    }
    phase_ = phase::running;  // before any co_await: a signal handled from now on is forwarded
    const auto& child = guard_.child();
    report_.detail("running '" + command_line(o_.command) + "' (pid " + std::to_string(child.pid()) +
                   (spec.own_group ? ", own process group)" : ", in redlock's process group)"));
    auto why = std::make_shared<diagnostics>();
    held_.async_wait_lost(*why, [this, why](error_code ec) {
        if (ec == error::lost) guard_.on_lost(std::string(why->client_message()));
    });
    guard_.watch_validity([this] { return held_.valid_until(); });

    co_await guard_.wait_exit();
    phase_ = phase::finishing;
    // The lease counts as held to the end only if it was still valid when the command was seen to exit, and the
    // command was not stopped because the lease was about to end.
    const bool stopping = guard_.stopping();
    const bool expired = stopping || guard_.lost() || held_.lost() || clock::now() >= held_.valid_until();
    if (stopping) guard_.stop_leftovers();
    report_.detail("the command " + child.describe_exit() + " after " + format_ms(ms_since(run_start)));

    const auto release_start = clock::now();
    const auto rec = co_await release();
    const auto release_time = ms_since(release_start);
    if (expired) {
        if (!stopping) {
            report_.error("the lease on '" + o_.key + "' ran out before the command finished (the command " +
                          child.describe_exit() + "): its work was not protected to the end");
        }
        co_return exit_code::lost;
    }
    if (rec) {
        report_.error("the command finished under the lock, but releasing '" + o_.key + "' failed: " + rec.message() +
                      "; the keys expire within the TTL (" + format_duration(o_.ttl) + ")");
    } else {
        report_.detail("released '" + o_.key + "' in " + format_ms(release_time));
    }
    co_return child.exit_code();
}

// Releases the lease; once released it is gone from held_, and shutdown() has nothing left to release.
asio::awaitable<error_code> exec_session::release()
{
    if (!held_) co_return error_code{};
    auto [ec] = co_await held_.async_release(use_tuple);
    held_ = held_grant{};
    co_return ec;
}

asio::awaitable<void> exec_session::shutdown(std::exception_ptr failure)
{
    phase_ = phase::finishing;
    if (failure) report_.error("internal error: " + describe_exception(failure));
    if (guard_.child().running()) {
        report_.error("stopping the command (pid " + std::to_string(guard_.child().pid()) +
                      "): it must not run on without the lock");
        co_await guard_.kill(pause_);
    }
    if (held_) {
        auto [ec] = co_await held_.async_release(use_tuple);
        held_ = held_grant{};
        if (ec)
            report_.error("releasing '" + o_.key + "' failed: " + ec.message() + "; the keys expire within the TTL (" +
                          format_duration(o_.ttl) + ")");
        else
            report_.detail("released '" + o_.key + "'");
    }
    // A failed or cancelled attempt's releases, or the one above, still in flight: let them reach the nodes.
    co_await settle(pause_);
    finish();
}

void exec_session::finish()
{
    progress_.stop();
    phase_ = phase::finishing;
    signals_.cancel();
    guard_.cancel();
    client_.close();
}

}  // namespace

namespace {

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
    exec_session session(ctx, o, *path);
    auto outcome = run_guarded<int>(ctx, session.run(),
                                    [&session](std::exception_ptr failure) { return session.shutdown(failure); });
    if (outcome.failure || !outcome.value) return exit_code::lost;  // shutdown() said what failed
    return *outcome.value;
}

}  // namespace

subcommand exec_command()
{
    return {"exec", exec_help, &parse_and_run<parse_exec, run_exec>};
}

}  // namespace redlock::cli
