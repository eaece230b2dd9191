// A network service under test, run as a child process that prints "listening on HOST:PORT" once it accepts
// (with --listen HOST:0 it picks a free port itself, so two services never race for one).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace redlock::test {

class service_process {
public:
    /// Starts args[0] with args, stdout and stderr to `output_file`, and waits up to `ready_within` for the
    /// listening line; throws with the output if it does not come. Create it from the test's thread (the child
    /// dies with the thread that forked it).
    service_process(std::vector<std::string> args, std::string output_file,
                    std::chrono::milliseconds ready_within = std::chrono::seconds(15));
    /// SIGTERM, then SIGKILL after 2 s if still running.
    ~service_process();
    service_process(const service_process&) = delete;
    service_process& operator=(const service_process&) = delete;

    std::uint16_t port() const { return port_; }
    pid_t pid() const { return pid_; }
    void signal(int signal_number) const;
    /// The exit status as a shell reports it (128 + signal when killed), once it exited within `limit`.
    std::optional<int> wait_exit(std::chrono::milliseconds limit);
    std::string output() const;

private:
    std::string output_file_;
    std::atomic<pid_t> pid_{-1};  // signal() may come from another thread (a load generator's) than wait_exit()
    std::uint16_t port_ = 0;
};

}  // namespace redlock::test
