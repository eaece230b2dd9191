#include "cli/common/duration.hpp"
#include "cli/common/guarded_command.hpp"
#include "cli/common/signals.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <csignal>
#include <unistd.h>

namespace redlock::cli {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

guarded_command::guarded_command(asio::io_context& ctx, const reporter& report, guard_settings settings)
    : report_(report), settings_(std::move(settings)), sigchld_(ctx, SIGCHLD), stop_timer_(ctx), grace_timer_(ctx)
{}

guarded_command::~guarded_command()
{
    if (child_.running()) {
        child_.signal(SIGKILL);
        while (!child_.try_reap()) ::usleep(1000);
    }
}

int guarded_command::start(child_spec spec)
{
    spec.parent_death_signal = settings_.kill_signal;  // if redlock dies, nobody keeps the lease: stop the command
    stopping_ = false;
    lost_ = false;
    const int e = child_.start(spec);
    running_ = e == 0;
    return e;
}

asio::awaitable<void> guarded_command::wait_exit()
{
    while (!child_.try_reap()) co_await sigchld_.async_wait(use_tuple);
    running_ = false;
    stop_timer_.cancel();
    grace_timer_.cancel();
}

// How long before the end of the validity the command gets --kill-signal: --kill-grace, but at most half the
// TTL. The watchdog extends every TTL / 3, so with a healthy quorum the validity left never drops below
// 2/3 TTL - drift: a grace up to TTL / 2 leaves the first extension and its retries time to succeed, and a
// longer one would stop a command under a healthy lease (or, with --no-watchdog, at once).
guarded_command::clock::duration guarded_command::stop_grace() const
{
    return std::min<clock::duration>(settings_.kill_grace, settings_.ttl / 2);
}

// Once the extensions keep failing, stop the command --kill-grace before the validity ends, so that it is gone
// before anyone else can hold the lock. A successful extension moves valid_until() forward: then wait again.
void guarded_command::watch_validity(std::function<clock::time_point()> valid_until)
{
    valid_until_ = std::move(valid_until);
    const auto grace = stop_grace();
    stop_timer_.expires_at(valid_until_() - grace);
    stop_timer_.async_wait([this, grace](error_code ec) {
        if (ec || !running_ || stopping_ || lost_) return;  // on_lost() takes a lost lease
        const auto now = clock::now();
        const auto until = valid_until_();
        if (until - grace > now) return watch_validity(valid_until_);  // extended meanwhile
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
        const std::string ends = "its validity ends in " + std::to_string(std::max<long long>(left, 0)) + " ms";
        const auto& s = settings_;
        stop_command(s.watchdog ? "the watchdog could not extend the lease on '" + s.key +
                                      "' on a quorum of nodes in time: " + ends
                                : "the lease on '" + s.key + "' is running out (--no-watchdog, ttl " +
                                      format_duration(s.ttl) + "): " + ends,
                     until);
    });
}

void guarded_command::on_lost(std::string why)
{
    if (!running_ || lost_) return;
    lost_ = true;
    const auto& s = settings_;
    if (why.empty())
        why = s.watchdog ? "the watchdog could not extend it on a quorum of nodes in time"
                         : "its TTL of " + format_duration(s.ttl) + " ran out (--no-watchdog)";
    if (stopping_) {
        report_.detail("lost the lease on '" + s.key + "': " + why);
        return;
    }
    // Before the stop time: another owner answered on a quorum, or the process was paused past the validity.
    stop_command("lost the lease on '" + s.key + "' while the command ran: " + why, clock::now() + s.kill_grace);
}

// Sends --kill-signal to the command (once), then SIGKILL at `kill_at` if it is still running.
void guarded_command::stop_command(const std::string& why, clock::time_point kill_at)
{
    if (!running_ || stopping_) return;
    stopping_ = true;
    const int signo = settings_.kill_signal;
    report_.error(why + "; sending " + signal_name(signo) + " to the command");
    const auto sent = clock::now();
    child_.signal(signo);
    // A stopped command would keep the signal pending: let it act on it.
    if (signo != SIGKILL && signo != SIGCONT) child_.signal(SIGCONT);
    grace_timer_.expires_at(kill_at);
    grace_timer_.async_wait([this, sent, signo](error_code ec) {
        if (ec || !child_.running()) return;
        report_.error("the command did not exit within " +
                      format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - sent)) +
                      " of " + signal_name(signo) + ": sending SIGKILL");
        child_.signal(SIGKILL);
    });
}

// After a stop, the command's own process group must end too: what the command started may still touch the
// resource. The command had its grace period; what it leaves behind is killed at once.
void guarded_command::stop_leftovers()
{
    if (child_.signal_leftovers(SIGKILL)) report_.detail("killed what was left of the command's process group");
}

asio::awaitable<void> guarded_command::kill(asio::steady_timer& pause)
{
    if (!child_.running()) co_return;
    child_.signal(SIGKILL);
    while (!child_.try_reap()) {
        pause.expires_after(std::chrono::milliseconds(1));
        co_await pause.async_wait(use_tuple);
    }
    running_ = false;
    stop_leftovers();
}

void guarded_command::cancel()
{
    sigchld_.cancel();
    stop_timer_.cancel();
    grace_timer_.cancel();
}

}  // namespace redlock::cli
