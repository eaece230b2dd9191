#include "cli/common/signals.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <csignal>

namespace redlock::cli {
namespace {

struct named_signal {
    std::string_view name;
    int number;
};

constexpr named_signal signal_table[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT}, {"ILL", SIGILL},   {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT}, {"BUS", SIGBUS},     {"FPE", SIGFPE},   {"KILL", SIGKILL}, {"USR1", SIGUSR1},
    {"SEGV", SIGSEGV}, {"USR2", SIGUSR2},   {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM},
    {"CHLD", SIGCHLD}, {"CONT", SIGCONT},   {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU}, {"URG", SIGURG},     {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},     {"SYS", SIGSYS},
};

}  // namespace

std::optional<int> parse_signal(std::string_view text)
{
    if (!text.empty() && text.front() >= '0' && text.front() <= '9') {
        int n = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (ec != std::errc{} || end != text.data() + text.size() || n < 1 || n > SIGRTMAX) return std::nullopt;
        return n;
    }
    std::string upper(text);
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    std::string_view name(upper);
    if (name.starts_with("SIG")) name.remove_prefix(3);
    for (const auto& s : signal_table)
        if (s.name == name) return s.number;
    return std::nullopt;
}

std::string signal_name(int signo)
{
    for (const auto& s : signal_table)
        if (s.number == signo) return "SIG" + std::string(s.name);
    return "signal " + std::to_string(signo);
}

bool signal_ignored(int signo)
{
    struct sigaction current {};
    if (::sigaction(signo, nullptr, &current) != 0) return false;
    return current.sa_handler == SIG_IGN;
}

}  // namespace redlock::cli
