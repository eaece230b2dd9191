#include "cli/common/child.hpp"
#include "cli/common/exit_codes.hpp"
#include "cli/common/signals.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace redlock::cli {
namespace {

std::vector<int> inherited_fds;

std::vector<int> open_fds()
{
    std::vector<int> fds;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return fds;
    const int own = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd == own) continue;
        fds.push_back(static_cast<int>(fd));
    }
    ::closedir(dir);
    return fds;
}

std::vector<char*> pointers(const std::vector<std::string>& strings)
{
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

bool executable_file(const std::string& path, int& error)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        error = errno;
        return false;
    }
    if (!S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) {
        error = EACCES;
        return false;
    }
    return true;
}

// Between fork and execve: async-signal-safe calls only, on data prepared beforehand.
[[noreturn]] void exec_in_child(pid_t parent, const child_spec& spec, char* const* argv, char* const* envp,
                                const std::vector<int>& close_fds, int report_fd)
{
    if (spec.own_group) ::setpgid(0, 0);
    if (spec.parent_death_signal != 0) {
        ::prctl(PR_SET_PDEATHSIG, spec.parent_death_signal);
        if (::getppid() != parent) _exit(127);  // redlock is gone already: do not run unprotected
    }
    // Our handlers (the event loop's) must not run here: back to the default, ignored signals stay ignored.
    for (int signo = 1; signo < NSIG; ++signo) {
        struct sigaction current {};
        if (::sigaction(signo, nullptr, &current) != 0) continue;
        if (current.sa_handler == SIG_IGN || current.sa_handler == SIG_DFL) continue;
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        ::sigaction(signo, &dfl, nullptr);
    }
    for (int fd : close_fds)
        if (fd != report_fd) ::close(fd);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(spec.path.c_str(), argv, envp);
    const int error = errno;
    [[maybe_unused]] auto n = ::write(report_fd, &error, sizeof error);
    _exit(127);
}

}  // namespace

void remember_inherited_fds()
{
    inherited_fds = open_fds();
}

void close_own_fds_on_exec()
{
    for (int fd : open_fds())
        if (std::find(inherited_fds.begin(), inherited_fds.end(), fd) == inherited_fds.end())
            ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
}

std::optional<std::string> resolve_command(const std::string& name, int& error)
{
    error = ENOENT;
    if (name.find('/') != std::string::npos) {
        if (executable_file(name, error)) return name;
        return std::nullopt;
    }
    const char* path_env = std::getenv("PATH");
    const std::string dirs = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
    bool found_unusable = false;
    std::size_t begin = 0;
    while (begin <= dirs.size()) {
        std::size_t end = dirs.find(':', begin);
        if (end == std::string::npos) end = dirs.size();
        const std::string dir = end > begin ? dirs.substr(begin, end - begin) : ".";
        const std::string candidate = dir + "/" + name;
        int e = 0;
        if (executable_file(candidate, e)) return candidate;
        if (e == EACCES) found_unusable = true;
        begin = end + 1;
    }
    error = found_unusable ? EACCES : ENOENT;
    return std::nullopt;
}

bool in_terminal_foreground()
{
    for (int fd = 0; fd <= 2; ++fd) {
        if (::isatty(fd)) return ::tcgetpgrp(fd) == ::getpgrp();
    }
    return false;
}

int child_process::start(const child_spec& spec)
{
    auto argv = pointers(spec.argv);
    auto envp = pointers(spec.env);
    std::vector<int> close_fds;
    for (int fd : open_fds())
        if (std::find(inherited_fds.begin(), inherited_fds.end(), fd) == inherited_fds.end()) close_fds.push_back(fd);

    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) return errno;

    // Blocked across fork: a signal in the child before execve would run our handler there.
    sigset_t all;
    sigset_t previous;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &previous);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) exec_in_child(parent, spec, argv.data(), envp.data(), close_fds, report[1]);
    const int fork_error = errno;
    // Also here, so that signalling the group right after start() cannot miss it.
    if (pid > 0 && spec.own_group) ::setpgid(pid, pid);
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    ::close(report[1]);
    if (pid < 0) {
        ::close(report[0]);
        return fork_error;
    }

    // execve closes the pipe (O_CLOEXEC): end of file means the command runs; an int is execve's errno.
    int exec_error = 0;
    ssize_t got = 0;
    do {
        got = ::read(report[0], &exec_error, sizeof exec_error);
    } while (got < 0 && errno == EINTR);
    ::close(report[0]);
    pid_ = pid;
    own_group_ = spec.own_group;
    exited_ = false;  // a second start (redlock elect --again) is a new command
    status_ = 0;
    if (got == static_cast<ssize_t>(sizeof exec_error)) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        exited_ = true;
        status_ = status;
        return exec_error;
    }
    return 0;
}

void child_process::signal(int signo) const noexcept
{
    if (pid_ <= 0 || exited_) return;
    ::kill(own_group_ ? -pid_ : pid_, signo);
}

bool child_process::signal_leftovers(int signo) const noexcept
{
    if (pid_ <= 0 || !own_group_) return false;
    return ::kill(-pid_, signo) == 0;
}

bool child_process::try_reap() noexcept
{
    if (pid_ <= 0) return false;
    if (exited_) return true;
    for (;;) {
        int status = 0;
        const pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            exited_ = true;
            status_ = status;
            return true;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == ECHILD) {  // someone else reaped it: the status is unknown
            exited_ = true;
            status_ = 0xff00;  // "exited with 255"
            return true;
        }
        return false;
    }
}

int child_process::exit_code() const noexcept
{
    if (WIFEXITED(status_)) return WEXITSTATUS(status_);
    if (WIFSIGNALED(status_)) return exit_code::signal_base + WTERMSIG(status_);
    return 255;
}

std::string child_process::describe_exit() const
{
    if (WIFSIGNALED(status_)) return "was killed by " + signal_name(WTERMSIG(status_));
    return "exited with status " + std::to_string(exit_code());
}

}  // namespace redlock::cli
