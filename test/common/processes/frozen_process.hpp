// A client on an io_context and thread of its own that a test can stop for good: a process whose waiters and
// holders vanish without a word (no heartbeat, no release, no leave), as a kill -9 would leave them.
#pragma once

#include <redlock/client.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <thread>
#include <vector>

namespace redlock::test {

class frozen_process {
public:
    explicit frozen_process(std::vector<node_config> nodes)
        : work_(boost::asio::make_work_guard(ctx_)),
          client_(ctx_.get_executor(), std::move(nodes)),
          thread_([this] { ctx_.run(); })
    {}
    ~frozen_process() { freeze(); }
    frozen_process(const frozen_process&) = delete;
    frozen_process& operator=(const frozen_process&) = delete;

    /// Start operations on it from the test's thread (a client may be called from any thread).
    redlock::client& client() noexcept { return client_; }
    /// Stops its io_context for good: nothing it started goes on.
    void freeze()
    {
        ctx_.stop();
        if (thread_.joinable()) thread_.join();
    }

private:
    boost::asio::io_context ctx_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    redlock::client client_;
    std::thread thread_;
};

}  // namespace redlock::test
