// A command that runs while a lease holds (`redlock exec`'s lock or permit, `redlock elect`'s leadership): started,
// watched until it exits, and stopped before the lease can end. When the watchdog cannot extend the lease, the command
// gets --kill-signal --kill-grace before the validity ends; when the lease is lost, at once; SIGKILL after the grace.
// If redlock itself dies (SIGKILL), the command gets --kill-signal from the kernel (the child's parent-death signal).
#pragma once

#include "cli/common/child.hpp"
#include "cli/common/output.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <string>

namespace redlock::cli {

struct guard_settings {
    std::string key;  // the lock's name, for the messages
    bool watchdog = true;
    std::chrono::milliseconds ttl{10'000};
    int kill_signal = 0;
    std::chrono::milliseconds kill_grace{5'000};
};

class guarded_command {
public:
    using clock = std::chrono::steady_clock;

    // Catches SIGCHLD from now on: make it before the command starts, so an early exit is not missed.
    guarded_command(boost::asio::io_context& ctx, const reporter& report, guard_settings settings);
    // Only if the owner could not stop the command: never leave it running without its lease.
    ~guarded_command();
    guarded_command(const guarded_command&) = delete;
    guarded_command& operator=(const guarded_command&) = delete;

    // fork + execve with the parent-death signal set to --kill-signal: 0, or the errno of the failed start. Each
    // start begins a new run (a campaign again after a lost leadership runs the command again).
    int start(child_spec spec);
    child_process& child() noexcept { return child_; }
    const child_process& child() const noexcept { return child_; }
    bool running() const noexcept { return running_; }

    // While the command runs: stops it --kill-grace before `valid_until()` (read again at each check: an extension
    // moves it) unless the lease was extended meanwhile.
    void watch_validity(std::function<clock::time_point()> valid_until);
    // The lease was lost (its async_wait_lost said so, `why`: its diagnostics' text) while the command ran: stop it
    // now.
    void on_lost(std::string why);
    // Completes once the command exited and was reaped; the validity watch ends then.
    boost::asio::awaitable<void> wait_exit();

    // The kill signal was sent: the command's protection ended early.
    bool stopping() const noexcept { return stopping_; }
    bool lost() const noexcept { return lost_; }
    // How long before the end of the validity the command gets the kill signal: --kill-grace, at most half the TTL.
    clock::duration stop_grace() const;
    // After a stop, what is left of the command's own process group is killed at once.
    void stop_leftovers();
    // On the way out: SIGKILL to a command still running, reaped (polling every millisecond on `pause`).
    boost::asio::awaitable<void> kill(boost::asio::steady_timer& pause);
    // Stops the timers and the SIGCHLD wait.
    void cancel();

private:
    void stop_command(const std::string& why, clock::time_point kill_at);

    const reporter& report_;
    guard_settings settings_;
    boost::asio::signal_set sigchld_;
    boost::asio::steady_timer stop_timer_;   // --kill-grace before the validity ends: stop the command?
    boost::asio::steady_timer grace_timer_;  // SIGKILL, when the command outlives its grace
    std::function<clock::time_point()> valid_until_;
    child_process child_;
    bool running_ = false;
    bool stopping_ = false;
    bool lost_ = false;
};

}  // namespace redlock::cli
