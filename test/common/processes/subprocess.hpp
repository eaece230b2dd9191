// Child processes for the test harness: redis-server, redis-cli and openssl.
#pragma once

#include <chrono>
#include <string>
#include <sys/types.h>
#include <vector>

namespace redlock::test {

// The full path of an executable: $<env_override> when set, else the first match on $PATH.
// Throws std::runtime_error when there is none.
std::string find_executable(const std::string& name, const char* env_override = nullptr);

struct spawn_options {
    std::vector<std::string> args;  // args[0] is the path of the executable
    std::vector<std::string> env;   // the complete environment, "NAME=value"
    std::string output_file;        // stdout and stderr are appended here ("" = /dev/null)
};

// fork + execve. The child dies with SIGKILL when the forking thread exits (PR_SET_PDEATHSIG),
// so create processes from a thread that lives as long as they should (the test's thread).
// The child inherits no descriptor but 0, 1 and 2. Throws std::system_error if fork fails.
pid_t spawn_process(const spawn_options& options);

// The current environment with `set` entries ("NAME=value") replacing or adding variables.
std::vector<std::string> environment_with(const std::vector<std::string>& set);

struct command_result {
    int exit_code = -1;  // 128 + signal number when the child was killed
    std::string out;
    std::string err;
};

// Runs a command to completion, collecting its output. Throws std::runtime_error if it does not
// finish within `timeout` (the child is killed first).
command_result run_command(const std::vector<std::string>& args, std::chrono::milliseconds timeout);

// Waits until the child exits or `timeout` passes; returns true and reaps it when it exited.
bool wait_for_exit(pid_t pid, std::chrono::milliseconds timeout, int* status = nullptr);

// A new empty directory under $TMPDIR (or /tmp) named <prefix>XXXXXX; throws on failure. It is removed with
// everything in it when the test process exits normally, unless $REDLOCK_TEST_KEEP_TEMP is set (to look inside
// after a failure): a suite run hundreds of times must not fill the disk.
std::string make_temp_dir(const std::string& prefix);

// SIGCONT, SIGTERM, up to `grace` for it to exit, then SIGKILL; always reaps. Never throws.
void stop_process(pid_t pid, std::chrono::milliseconds grace) noexcept;

// The exit code a shell would report for a waitpid status: the code, or 128 + the signal.
int exit_status(int wait_status) noexcept;

// A whole file ("" if it cannot be read).
std::string file_contents(const std::string& path);

// "a,b,c": node URL lists as --nodes and $REDLOCK_NODES take them.
std::string comma_joined(const std::vector<std::string>& parts);

}  // namespace redlock::test
