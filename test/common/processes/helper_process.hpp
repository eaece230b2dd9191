// A test/helpers program run as a child process, its stdout and stderr in a file of the test's temp dir, with the
// summary line most helpers print ("name=value ...") read back field by field.
#pragma once

#include <chrono>
#include <string>
#include <sys/types.h>
#include <vector>

namespace redlock::test {

class helper_process {
public:
    /// Starts helper_<helper> (built from test/helpers/<helper>.cpp) with `args`, its output in
    /// `dir`/`name`.out. Create it from the test's thread (the child dies with the thread that forked it).
    helper_process(const std::string& helper, const std::string& dir, const std::string& name,
                   std::vector<std::string> args);
    /// Stops it (SIGCONT, SIGTERM, then SIGKILL) unless it exited.
    ~helper_process();
    helper_process(const helper_process&) = delete;
    helper_process& operator=(const helper_process&) = delete;

    pid_t pid() const { return pid_; }
    /// Sends a signal (SIGSTOP, SIGCONT, SIGKILL...) while it has not been reaped.
    void signal(int signal_number) const;
    /// Whether it has not exited yet (reaps it if it has).
    bool running();
    /// The exit status as a shell reports it (128 + signal when killed), or -1 if it still runs after `limit`.
    int wait(std::chrono::milliseconds limit);
    std::string output() const;
    /// Whether `text` appeared in its output within `limit` (polled every 2 ms).
    bool wait_for_output(const std::string& text, std::chrono::milliseconds limit) const;
    /// A number of its summary line ("values=250 ..."), or -1 when it is not there.
    long field(const std::string& name) const;
    /// A word of its summary line ("value_from=b" -> "b"), or "" when it is not there.
    std::string word(const std::string& name) const;

private:
    std::string output_;
    pid_t pid_ = -1;
    bool exited_ = false;
    int status_ = 0;
};

/// A Unix time in milliseconds, `delay` from now, as helpers take a common start time (START_AT_MS).
std::string unix_ms_in(std::chrono::milliseconds delay);

}  // namespace redlock::test
