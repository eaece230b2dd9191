// An io_context running on its own thread, for test servers that live beside the code under test.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <future>
#include <optional>
#include <thread>

namespace redlock::test {

class io_thread {
public:
    io_thread()
        : thread_([this, finished = std::move(finished_promise_)]() mutable {
              run();
              finished.set_value();
          })
    {}

    ~io_thread() { join(); }

    io_thread(const io_thread&) = delete;
    io_thread& operator=(const io_thread&) = delete;

    boost::asio::io_context& context() { return ctx_; }

    // Runs f() on the thread and waits for it; rethrows what f throws. Never call it from the thread.
    template <class F>
    void call(F f)
    {
        std::promise<void> done;
        boost::asio::post(ctx_, [&] {
            try {
                f();
                done.set_value();
            } catch (...) {
                done.set_exception(std::current_exception());
            }
        });
        done.get_future().get();
    }

    // Lets the thread finish the work it has (the owner cancels everything first); after `grace`
    // stops it hard. Idempotent.
    void join(std::chrono::milliseconds grace = std::chrono::seconds(2)) noexcept
    {
        if (!thread_.joinable()) return;
        work_.reset();
        if (finished_.wait_for(grace) != std::future_status::ready) {
            std::fprintf(stderr, "io_thread: work left after %lld ms, stopping\n",
                         static_cast<long long>(grace.count()));
            ctx_.stop();
        }
        thread_.join();
    }

private:
    void run() noexcept
    {
        for (;;) {
            try {
                ctx_.run();
                return;
            } catch (const std::exception& e) {
                std::fprintf(stderr, "io_thread: handler threw: %s\n", e.what());
            } catch (...) {
                std::fprintf(stderr, "io_thread: handler threw\n");
            }
        }
    }

    boost::asio::io_context ctx_{1};
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{ctx_.get_executor()};
    std::promise<void> finished_promise_;
    std::future<void> finished_ = finished_promise_.get_future();
    std::thread thread_;  // last: starts after everything it uses exists
};

}  // namespace redlock::test
