// Runs a command in the foreground of a new pseudo-terminal, as an interactive shell would, and interrupts it.
//
// Usage: helper_pty_run ctrl-c|kill-int COMMAND [ARG...]
// COMMAND runs as the leader of a new session whose controlling terminal is the pty, so its process group is
// the terminal's foreground group. Its terminal output is copied to stdout. Once "ready" appeared in it:
//   ctrl-c    types Ctrl-C on the terminal (the kernel sends SIGINT to the whole foreground process group)
//   kill-int  sends SIGINT to COMMAND's process alone (kill(pid, SIGINT))
// Exits with COMMAND's exit status (128 + N if signal N killed it); 125 on a setup error or when COMMAND is
// still running after 20 s (its process group is killed then).
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <pty.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv)
{
    if (argc < 3 || (std::strcmp(argv[1], "ctrl-c") != 0 && std::strcmp(argv[1], "kill-int") != 0)) {
        std::fprintf(stderr, "usage: helper_pty_run ctrl-c|kill-int COMMAND [ARG...]\n");
        return 125;
    }
    const bool ctrl_c = std::strcmp(argv[1], "ctrl-c") == 0;
    int master = -1;
    const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
    if (pid < 0) {
        std::perror("forkpty");
        return 125;
    }
    if (pid == 0) {
        ::execvp(argv[2], argv + 2);
        std::perror(argv[2]);
        _exit(127);
    }

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::string seen;
    bool sent = false;
    int status = 0;
    bool exited = false;
    for (;;) {
        if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) exited = true;
        pollfd p{master, POLLIN, 0};
        const int ready = ::poll(&p, 1, 20);
        if (ready > 0) {
            char buf[4096];
            const ssize_t n = ::read(master, buf, sizeof buf);
            if (n > 0) {
                [[maybe_unused]] auto w = ::write(STDOUT_FILENO, buf, static_cast<std::size_t>(n));
                seen.append(buf, static_cast<std::size_t>(n));
            } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
                if (exited) break;  // EIO: every slave descriptor is closed
            }
        } else if (exited) {
            break;  // nothing more to read
        }
        if (!sent && seen.find("ready") != std::string::npos) {
            sent = true;
            if (ctrl_c) {
                const char intr = '\x03';
                [[maybe_unused]] auto w = ::write(master, &intr, 1);
            } else {
                ::kill(pid, SIGINT);
            }
        }
        if (std::chrono::steady_clock::now() > deadline) {
            std::fprintf(stderr, "helper_pty_run: still running after 20 s\n");
            ::kill(-pid, SIGKILL);
            ::kill(pid, SIGKILL);
            if (!exited) ::waitpid(pid, &status, 0);
            return 125;
        }
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 125;
}
