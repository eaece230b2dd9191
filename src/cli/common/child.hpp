// Starting the command under the lock, signalling it, and decoding how it ended.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace redlock::cli {

// Remembers the descriptors open when redlock started (call first thing in main): those are the user's
// (0, 1, 2, and any `3<file` the caller set up) and the command inherits them; descriptors opened since
// (sockets to the nodes, the event loop's) are closed in the command.
void remember_inherited_fds();

// Marks every descriptor redlock opened since remember_inherited_fds() close-on-exec: for a command that runs in
// redlock's place (execv), which must inherit the caller's descriptors only.
void close_own_fds_on_exec();

// Where `name` runs from: itself if it holds a '/', else the first executable match on $PATH.
// On failure nullopt, with `error` set to ENOENT (not found) or EACCES (found, not executable).
std::optional<std::string> resolve_command(const std::string& name, int& error);

// Whether redlock runs in the foreground of a terminal. Then the command stays in our process group, so the
// terminal's job control (Ctrl-C, Ctrl-Z, reads) works as usual; otherwise it gets a process group of its own
// and every signal we send reaches the whole group, grandchildren included.
bool in_terminal_foreground();

struct child_spec {
    std::string path;               // resolved executable
    std::vector<std::string> argv;  // argv[0] as the user typed it
    std::vector<std::string> env;   // complete environment, NAME=value
    bool own_group = false;
    int parent_death_signal = 0;  // sent to the command if redlock dies first (0: none)
};

class child_process {
public:
    child_process() = default;
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    // fork + execve. Returns 0, or the errno of the failed fork/exec (the child is reaped then). Once the command
    // was reaped, a start runs another.
    int start(const child_spec& spec);

    pid_t pid() const noexcept { return pid_; }
    bool running() const noexcept { return pid_ > 0 && !exited_; }
    bool own_group() const noexcept { return own_group_; }

    // Sends `signo` to the command (its whole process group when it has one). No-op once it was reaped.
    void signal(int signo) const noexcept;
    // For a command with its own group: sends `signo` to what is left of the group after the command itself
    // was reaped; returns false when nothing is left (or there is no group of its own).
    bool signal_leftovers(int signo) const noexcept;

    // Reaps the command if it exited (never blocks); true once it has.
    bool try_reap() noexcept;
    // Exit code as a shell reports it: the status, or 128 + signal number.
    int exit_code() const noexcept;
    // "exited with status 3" / "was killed by SIGKILL".
    std::string describe_exit() const;

private:
    pid_t pid_ = -1;
    bool own_group_ = false;
    bool exited_ = false;
    int status_ = 0;
};

}  // namespace redlock::cli
