#include "cli/common/signal_watch.hpp"
#include "cli/common/signals.hpp"

#include <boost/system/system_error.hpp>

#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace redlock::cli {
namespace {

std::atomic<int> write_end{-1};

void on_signal(int signo, siginfo_t* info, void*)
{
    const int saved = errno;
    signal_event e;
    e.signo = signo;
    if (info != nullptr) {
        e.code = info->si_code;
        e.from = info->si_pid;
    }
    // At most PIPE_BUF bytes: written whole or not at all; a full pipe (never in practice) drops the signal.
    if (const int fd = write_end.load(); fd >= 0) {
        [[maybe_unused]] auto n = ::write(fd, &e, sizeof e);
    }
    errno = saved;
}

}  // namespace

signal_watch::signal_watch(const boost::asio::any_io_executor& ex) : pipe_(ex)
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
        throw boost::system::system_error(errno, boost::system::system_category(), "pipe2");
    pipe_.assign(fds[0]);
    write_end.store(fds[1]);
}

signal_watch::~signal_watch()
{
    for (auto& [signo, action] : previous_) ::sigaction(signo, &action, nullptr);
    ::close(write_end.exchange(-1));
}

bool signal_watch::add(int signo)
{
    if (signal_ignored(signo)) return false;
    struct sigaction action {};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    struct sigaction previous {};
    if (::sigaction(signo, &action, &previous) != 0) return false;
    previous_.emplace_back(signo, previous);
    return true;
}

}  // namespace redlock::cli
