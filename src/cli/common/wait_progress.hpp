// "still waiting" notes while `exec` or `throttle` waits: a wait that may last forever must not look like a hang.
#pragma once

#include "cli/common/output.hpp"

#include <redlock/diagnostics.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace redlock::cli {

// Every 10 s (5 s with -v) from start() until stop(): with -v always, else only while too many nodes failed in
// the last attempt for it to succeed (waiting for others to let go is what was asked for, and says nothing).
// `last_attempt` is the diagnostics the waiting operation rewrites at each attempt.
class wait_progress {
public:
    using node_lines_fn = std::function<std::vector<std::string>(const std::vector<node_outcome>&)>;

    wait_progress(boost::asio::any_io_executor ex, const reporter& report, const diagnostics& last_attempt,
                  std::size_t quorum, node_lines_fn node_lines);

    void start(std::string what);  // "'job:nightly'", "room in 'api'"
    void stop();

private:
    void schedule();

    boost::asio::steady_timer timer_;
    const reporter& report_;
    const diagnostics& last_attempt_;
    std::size_t quorum_;
    node_lines_fn node_lines_;
    std::string what_;
    std::chrono::steady_clock::time_point since_;
    bool running_ = false;  // a handler already queued when stop() ran must not print
};

}  // namespace redlock::cli
