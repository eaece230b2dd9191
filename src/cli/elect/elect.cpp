// `redlock elect`: campaign, run the command while leading (stopped before the leadership can end), resign; or with
// --listen print each leader as it changes.
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
#include "cli/elect/elect.hpp"
#include "cli/elect/options.hpp"

#include <redlock/client.hpp>
#include <redlock/election.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr auto rethrow = [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
};
// run_command's answer when the leadership was lost and --again campaigns once more.
constexpr int campaign_again = -1;

double ms_since(clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

std::vector<std::string> child_environment(const elect_options& o, const leadership& led)
{
    // An outer redlock's values must not leak through: the command sees this leadership only.
    auto env = inherited_environment();
    env.push_back("REDLOCK_KEY=" + o.key);
    env.push_back("REDLOCK_TOKEN=" + led.token());
    env.push_back("REDLOCK_TERM=" + std::to_string(led.term()));
    env.push_back("REDLOCK_FENCING_TOKEN=" + std::to_string(led.term()));
    return env;
}

// One line of --listen: "TERM<TAB>VALUE" or "none"; the value's backslashes, tabs and newlines escaped.
std::string leader_line(const std::optional<leader_info>& leader)
{
    if (!leader) return "none\n";
    std::string out = std::to_string(leader->term) + "\t";
    for (char c : leader->value) {
        switch (c) {
            case '\\':
                out += "\\\\";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                out += c;
        }
    }
    return out + "\n";
}

class elect_session {
public:
    elect_session(asio::io_context& ctx, const elect_options& o, std::string path)
        : o_(o),
          path_(std::move(path)),
          report_(o.output),
          signals_(ctx.get_executor()),
          guard_(
              ctx, report_,
              {.key = o.key, .watchdog = true, .ttl = o.ttl, .kill_signal = o.kill_signal, .kill_grace = o.kill_grace}),
          client_(ctx.get_executor(), o.nodes),
          pause_(ctx),
          progress_(ctx.get_executor(), report_, campaign_diag_, client_.quorum(),
                    [](const std::vector<node_outcome>& nodes) { return describe_nodes(nodes); })
    {
        for (int signo : {SIGINT, SIGTERM, SIGHUP}) signals_.add(signo);
    }

    asio::awaitable<int> run();
    // Every way out ends here (run_guarded): the command is stopped if it still runs, and a leadership still held is
    // resigned, before the process exits.
    asio::awaitable<void> shutdown(std::exception_ptr failure);

private:
    enum class phase { waiting, running, finishing };

    asio::awaitable<void> watch_signals();
    void on_signal(const signal_event& e);
    asio::awaitable<void> connect();
    lock_options campaign_options() const;
    asio::awaitable<int> campaign();
    asio::awaitable<int> run_command();
    asio::awaitable<int> listen();
    asio::awaitable<error_code> resign();
    void finish();

    const elect_options& o_;
    std::string path_;
    reporter report_;
    signal_watch signals_;
    guarded_command guard_;  // before the fork: an early exit of the command is not missed; its destructor kills
    client client_;
    leadership leadership_;                // owned here, not by a coroutine frame: shutdown() resigns it
    asio::cancellation_signal cancel_op_;  // the campaign or the observer's wait in progress, on a signal
    asio::steady_timer pause_;             // shutdown()'s
    diagnostics campaign_diag_;            // the last attempt's outcome, read by the progress report
    wait_progress progress_;               // "still waiting" while another candidate leads or the nodes are down
    phase phase_ = phase::waiting;
    int interrupted_ = 0;      // the signal that interrupted the campaign (or ended --listen, or came while finishing)
    int forwarded_ = 0;        // the last INT, TERM or HUP the command got from us (or from the terminal)
    std::uint64_t terms_ = 0;  // leaderships so far: a loss reported late for an earlier one is ignored
};

asio::awaitable<void> elect_session::watch_signals()
{
    for (;;) {
        signal_event e;
        auto [ec, n] = co_await signals_.async_wait(e, use_tuple);
        if (ec) co_return;  // cancelled at the end
        on_signal(e);
    }
}

void elect_session::on_signal(const signal_event& e)
{
    switch (phase_) {
        case phase::waiting:
            if (interrupted_ == 0) interrupted_ = e.signo;
            cancel_op_.emit(asio::cancellation_type::terminal);
            break;
        case phase::running:
            forwarded_ = e.signo;  // the command is told to end: --again must not campaign after it
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
            // The command has exited (or is being stopped): nothing to forward, but --again must not campaign.
            if (interrupted_ == 0) interrupted_ = e.signo;
            break;
    }
}

// As `redlock exec`: with --wait 0 the one attempt must not find nodes still connecting; otherwise the campaign's
// retries cover slow connections.
asio::awaitable<void> elect_session::connect()
{
    diagnostics diag;
    if (o_.listen || o_.wait != std::chrono::milliseconds(0)) {
        client_.async_connect([](error_code) {});
        co_return;
    }
    auto [ec] = co_await client_.async_connect(diag, asio::bind_cancellation_slot(cancel_op_.slot(), use_tuple));
    if (ec && ec != asio::error::operation_aborted) {
        report_.detail("connecting: " + std::string(diag.message()));
        report_.detail_lines(describe_nodes(diag.nodes()));
    }
}

lock_options elect_session::campaign_options() const
{
    lock_options lo;
    lo.ttl = o_.ttl;
    lo.wait = o_.wait ? *o_.wait : lock_options::wait_forever;
    return lo;
}

asio::awaitable<int> elect_session::run()
{
    asio::co_spawn(co_await asio::this_coro::executor, watch_signals(), rethrow);
    report_.detail("election '" + o_.key + "' on " + std::to_string(client_.size()) + " node(s), quorum " +
                   std::to_string(client_.quorum()) + ", ttl " + format_duration(o_.ttl));
    co_await connect();
    if (o_.listen) co_return co_await listen();
    for (;;) {
        if (interrupted_ != 0) break;
        const int code = co_await campaign();
        if (code != campaign_again) co_return code;
    }
    report_.error("interrupted by " + signal_name(interrupted_) + " while campaigning for '" + o_.key +
                  "'; the command was not run");
    co_return exit_code::signal_base + interrupted_;
}

// One campaign and, once leading, one run of the command.
asio::awaitable<int> elect_session::campaign()
{
    phase_ = phase::waiting;
    const auto start = clock::now();
    progress_.start("the leadership of '" + o_.key + "'");
    election e(client_, o_.key, campaign_options());
    auto [ec, led] = co_await e.async_campaign(o_.proposal, campaign_diag_,
                                               asio::bind_cancellation_slot(cancel_op_.slot(), use_tuple));
    leadership_ = std::move(led);  // from here on, shutdown() resigns it on every way out
    progress_.stop();
    if (interrupted_ != 0) co_return campaign_again;  // run() says so
    if (ec == error::invalid_argument) {
        report_.error("elect: cannot campaign for '" + o_.key + "' with these options: " +
                      std::string(campaign_diag_.message().empty() ? ec.message() : campaign_diag_.message()));
        co_return exit_code::usage;
    }
    if (ec) {
        const bool busy = ec == error::not_acquired;
        std::string text = "could not lead '" + o_.key + "'" +
                           (o_.wait ? " within --wait " + format_duration(*o_.wait) : std::string()) + ": " +
                           (busy ? std::string("another candidate leads") : ec.message());
        if (!campaign_diag_.message().empty()) text += ": " + std::string(campaign_diag_.message());
        report_.error(text);
        report_.error_lines(describe_nodes(campaign_diag_.nodes()));
        co_return busy ? exit_code::busy : exit_code::unavailable;
    }
    ++terms_;
    report_.detail("leading '" + o_.key + "' after " + format_ms(ms_since(start)) + ": term " +
                   std::to_string(leadership_.term()) + ", proposal '" + leadership_.value() + "', valid for " +
                   std::to_string(leadership_.validity().count()) + " ms");
    co_return co_await run_command();
}

asio::awaitable<int> elect_session::run_command()
{
    child_spec spec;
    spec.path = path_;
    spec.argv = o_.command;
    spec.env = child_environment(o_, leadership_);
    spec.own_group = !in_terminal_foreground();
    const auto run_start = clock::now();
    if (const int e = guard_.start(spec); e != 0) {
        phase_ = phase::finishing;
        report_.error("cannot run '" + o_.command.front() + "': " + std::strerror(e));
        co_await resign();
        co_return e == ENOENT ? exit_code::not_found : exit_code::cannot_run;
    }
    phase_ = phase::running;  // before any co_await: a signal handled from now on is forwarded
    const auto& child = guard_.child();
    report_.detail("running '" + o_.command.front() + "' (pid " + std::to_string(child.pid()) + ")");
    auto why = std::make_shared<diagnostics>();
    leadership_.async_wait_lost(*why, [this, why, term = terms_](error_code ec) {
        if (ec == error::lost && term == terms_) guard_.on_lost(std::string(why->client_message()));
    });
    guard_.watch_validity([this] { return leadership_.valid_until(); });

    co_await guard_.wait_exit();
    phase_ = phase::finishing;
    // Led to the end only if the leadership was still valid when the command was seen to exit, and the command was
    // not stopped because it was about to end.
    const bool stopping = guard_.stopping();
    const bool expired = stopping || guard_.lost() || leadership_.lost() || clock::now() >= leadership_.valid_until();
    if (stopping) guard_.stop_leftovers();
    report_.detail("the command " + child.describe_exit() + " after " + format_ms(ms_since(run_start)));
    const auto rec = co_await resign();
    if (expired) {
        if (!stopping)
            report_.error("the leadership of '" + o_.key + "' ended before the command finished (the command " +
                          child.describe_exit() + "): its work was not protected to the end");
        // A signal that told the command (or redlock) to end wins over --again: never a new run after it.
        if (const int signo = interrupted_ != 0 ? interrupted_ : forwarded_; o_.again && signo != 0)
            report_.note("lost the leadership of '" + o_.key + "', not campaigning again: interrupted by " +
                         signal_name(signo));
        else if (o_.again) {
            report_.note("lost the leadership of '" + o_.key + "': campaigning again");
            co_return campaign_again;
        }
        co_return exit_code::lost;
    }
    if (rec)
        report_.error("the command finished while leading, but resigning '" + o_.key + "' failed: " + rec.message() +
                      "; the key expires within the TTL (" + format_duration(o_.ttl) + ")");
    else
        report_.detail("resigned '" + o_.key + "'");
    co_return child.exit_code();
}

// Resigns; once resigned the leadership is gone from leadership_, and shutdown() has nothing left to do.
asio::awaitable<error_code> elect_session::resign()
{
    if (!leadership_) co_return error_code{};
    auto [ec] = co_await leadership_.async_resign(use_tuple);
    leadership_ = leadership{};
    co_return ec;
}

asio::awaitable<int> elect_session::listen()
{
    election e(client_, o_.key, campaign_options());
    auto observer = e.observe();
    // Before the first line, no quorum of nodes answers: said at once, then every 10 s (5 s with -v) while it lasts.
    std::optional<clock::time_point> unreachable_said;
    for (;;) {
        diagnostics diag;
        auto [ec, leader] =
            co_await observer.async_next(diag, asio::bind_cancellation_slot(cancel_op_.slot(), use_tuple));
        if (interrupted_ != 0) co_return exit_code::ok;
        if (ec == error::invalid_argument) {
            report_.error("elect: cannot listen to '" + o_.key + "': " + std::string(diag.message()));
            co_return exit_code::usage;
        }
        if (ec == error::no_quorum) {
            const auto every = report_.verbose() ? std::chrono::seconds(5) : std::chrono::seconds(10);
            if (!unreachable_said || clock::now() - *unreachable_said >= every) {
                unreachable_said = clock::now();
                report_.note("listening to '" + o_.key + "': cannot read who leads (" +
                             (diag.message().empty() ? ec.message() : std::string(diag.message())) + "); still trying");
                report_.note_lines(describe_nodes(diag.nodes()));
            }
            continue;
        }
        if (ec) {
            report_.error("listening to '" + o_.key + "': " + ec.message());
            co_return exit_code::unavailable;
        }
        if (unreachable_said) report_.note("listening to '" + o_.key + "': a quorum of nodes answers again");
        unreachable_said.reset();
        if (leader) report_.detail("leader of '" + o_.key + "': token " + leader->token);
        write_stdout(leader_line(leader));
    }
}

asio::awaitable<void> elect_session::shutdown(std::exception_ptr failure)
{
    phase_ = phase::finishing;
    if (failure) report_.error("internal error: " + describe_exception(failure));
    if (guard_.child().running()) {
        report_.error("stopping the command (pid " + std::to_string(guard_.child().pid()) +
                      "): it must not run on without the leadership");
        co_await guard_.kill(pause_);
    }
    if (leadership_) {
        auto [ec] = co_await leadership_.async_resign(use_tuple);
        leadership_ = leadership{};
        if (ec)
            report_.error("resigning '" + o_.key + "' failed: " + ec.message() + "; the key expires within the TTL (" +
                          format_duration(o_.ttl) + ")");
    }
    // A failed or cancelled attempt's releases, or the resignation, still in flight: let them reach the nodes.
    pause_.expires_after(std::clamp(o_.ttl / 10, std::chrono::milliseconds(1), std::chrono::milliseconds(50)));
    co_await pause_.async_wait(use_tuple);
    finish();
}

void elect_session::finish()
{
    progress_.stop();
    phase_ = phase::finishing;
    signals_.cancel();
    guard_.cancel();
    client_.close();
}

int run_elect(const elect_options& o)
{
    std::string path;
    if (!o.listen) {
        // A typo in the command must not campaign (and lead): look it up before any I/O.
        reporter report(o.output);
        int error = 0;
        auto resolved = resolve_command(o.command.front(), error);
        if (!resolved) {
            report.error("cannot run '" + o.command.front() +
                         "': " + (error == ENOENT ? std::string("command not found") : std::strerror(error)));
            return error == ENOENT ? exit_code::not_found : exit_code::cannot_run;
        }
        path = *resolved;
    }
    asio::io_context ctx(1);
    elect_session session(ctx, o, path);
    auto outcome = run_guarded<int>(ctx, session.run(),
                                    [&session](std::exception_ptr failure) { return session.shutdown(failure); });
    if (outcome.failure || !outcome.value) return exit_code::lost;  // shutdown() said what failed
    return *outcome.value;
}

}  // namespace

subcommand elect_command()
{
    return {"elect", elect_help, &parse_and_run<parse_elect, run_elect>};
}

}  // namespace redlock::cli
