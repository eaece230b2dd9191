// A command for `redlock exec` tests that records the signals it gets, and when.
//
// Usage: helper_signal_logger LOG [LINGER_MS]
// Prints "ready <pid>" on stdout, then appends one line per INT, TERM or HUP it receives to LOG:
//   SIGINT|SIGTERM|SIGHUP <CLOCK_MONOTONIC in ns> <sender pid> <si_code>
// (CLOCK_MONOTONIC is std::chrono::steady_clock on Linux: tests compare the time with their own clock.)
// Exits 0 LINGER_MS (default 0) after the first such signal, so that a second one is seen too; exits 3 after
// 60 s without one, 2 on bad arguments.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace {

long long monotonic_ns()
{
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

const char* name_of(int signo)
{
    switch (signo) {
        case SIGINT:
            return "SIGINT";
        case SIGTERM:
            return "SIGTERM";
        default:
            return "SIGHUP";
    }
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2 || argc > 3) {
        std::fprintf(stderr, "usage: helper_signal_logger LOG [LINGER_MS]\n");
        return 2;
    }
    const long linger_ms = argc == 3 ? std::atol(argv[2]) : 0;
    const int log = ::open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log < 0) {
        std::perror(argv[1]);
        return 2;
    }
    // Taken with sigtimedwait as they arrive: no handler, nothing lost between two deliveries that are apart.
    sigset_t set;
    sigemptyset(&set);
    for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, signo);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    std::printf("ready %d\n", static_cast<int>(::getpid()));
    std::fflush(stdout);

    long long first = -1;
    const long long start = monotonic_ns();
    for (;;) {
        const long long now = monotonic_ns();
        long long until = first >= 0 ? first + linger_ms * 1'000'000LL : start + 60'000'000'000LL;
        if (now >= until) return first >= 0 ? 0 : 3;
        const long long left = until - now;
        const timespec timeout{static_cast<time_t>(left / 1'000'000'000LL), static_cast<long>(left % 1'000'000'000LL)};
        siginfo_t info{};
        const int signo = ::sigtimedwait(&set, &info, &timeout);
        if (signo < 0) continue;  // timeout or EINTR: the deadline check decides
        const long long at = monotonic_ns();
        if (first < 0) first = at;
        const std::string line = std::string(name_of(signo)) + " " + std::to_string(at) + " " +
                                 std::to_string(info.si_pid) + " " + std::to_string(info.si_code) + "\n";
        [[maybe_unused]] auto n = ::write(log, line.data(), line.size());
    }
}
