// The shared machinery of the mutual exclusion property tests: in-process workers that increment a counter
// under the lock, and waiting for them (the helper processes that do the same are helper_process
// "exclusion_worker").
#pragma once

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <exception>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace redlock::test::exclusion {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
using steady = std::chrono::steady_clock;
inline constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Short retries, so handoffs under heavy contention are quick; a wait far longer than any run.
inline constexpr redlock::lock_options exclusion_lock{
    .ttl = 2000ms, .wait = 30'000ms, .retry_delay = 5ms, .retry_jitter = 5ms};

inline long elapsed_ms(steady::time_point since)
{
    return static_cast<long>(std::chrono::duration_cast<ms>(steady::now() - since).count());
}

inline long read_counter(const redis_node& node, const std::string& key)
{
    const auto text = node.cli({"GET", key});
    return text.empty() ? 0 : std::stol(text);
}

// What the in-process workers share.
struct shared_run {
    shared_run(asio::any_io_executor ex, const std::vector<std::string>& lock_urls, const redis_node& counter_node)
        : counter(ex, redlock::parse_url(counter_node.url()))
    {
        std::vector<redlock::node_config> configs;
        for (const auto& url : lock_urls) configs.push_back(redlock::parse_url(url));
        // Two clients, so the coroutines do not all share one connection per node.
        if (!configs.empty())
            for (int i = 0; i < 2; ++i) clients.emplace_back(ex, configs);
    }

    std::vector<redlock::client> clients;
    redlock::connection counter;
    std::string key;
    long per_coroutine = 0;  // 0: until `stop`
    ms window{1};            // between the read and the write, to widen the race window
    int coroutines = 0;

    std::atomic<bool> stop{false};
    std::atomic<long> increments{0};
    std::atomic<long> acquire_failures{0};
    std::atomic<long> aborted{0};
    std::atomic<long> release_failures{0};
    std::atomic<long> overlaps{0};  // two coroutines inside at once: a violation seen directly
    std::atomic<int> inside{0};
    std::atomic<long> reads{0}, writes{0};  // lockstep barriers of the control run

    std::atomic<int> running{0};
    std::promise<void> finished;
    std::mutex error_mutex;
    std::string error;           // the first unexpected error
    std::string release_errors;  // why releases failed, for the log

    void record_release_failure(redlock::error_code ec)
    {
        ++release_failures;
        std::lock_guard lock(error_mutex);
        if (release_errors.size() < 200) release_errors += " " + ec.message() + ";";
    }

    void record_error(std::exception_ptr e)
    {
        std::string what;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            what = x.what();
        } catch (...) {
            what = "unknown exception";
        }
        std::lock_guard lock(error_mutex);
        if (error.empty()) error = what;
        stop = true;
    }
};

inline asio::awaitable<void> sleep_for(ms d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(use_tuple);
}

// GET; a missing key is 0. Throws on any error: the counter node has no faults.
inline asio::awaitable<long> get_counter(redlock::connection& counter, const std::string& key)
{
    redlock::request req;
    req.push("GET", key);
    redlock::response resp;
    co_await counter.async_exec(req, resp, asio::use_awaitable);
    if (resp.at(0).is_null()) co_return 0;
    const auto value = resp[0].as_integer();
    if (!value) throw std::runtime_error("the counter is not an integer: " + redlock::resp::to_string(resp[0]));
    co_return static_cast<long>(*value);
}

inline asio::awaitable<void> set_counter(redlock::connection& counter, const std::string& key, long value)
{
    redlock::request req;
    req.push("SET", key, value);
    co_await counter.async_exec(req, asio::use_awaitable);
}

inline bool more_to_do(const shared_run& s, long done)
{
    return !s.stop && (s.per_coroutine == 0 || done < s.per_coroutine);
}

// The property under test: GET, pause, SET value + 1, all under the lock.
inline asio::awaitable<void> locked_increments(std::shared_ptr<shared_run> s, std::size_t index)
{
    redlock::mutex m(s->clients.at(index % s->clients.size()), s->key, exclusion_lock);
    for (long done = 0; more_to_do(*s, done);) {
        auto [ec, held] = co_await m.async_lock(use_tuple);
        if (ec == redlock::error::invalid_argument) throw boost::system::system_error(ec, "async_lock");
        if (ec) {
            ++s->acquire_failures;  // an increment counts only if made under the lock: try again
            continue;
        }
        if (s->inside.fetch_add(1) != 0) ++s->overlaps;
        const long value = co_await get_counter(s->counter, s->key);
        co_await sleep_for(s->window);
        // Write whenever the lease is still valid, however little is left: a holder that believes it holds the
        // lock writes, so an exclusion bug near the end of a lease shows as a lost update. (The write takes well
        // under a millisecond here, against validities of seconds.)
        const bool write = held.validity() > ms(0);
        if (write) co_await set_counter(s->counter, s->key, value + 1);
        s->inside.fetch_sub(1);
        if (write) {
            ++done;
            ++s->increments;
        } else {
            ++s->aborted;
        }
        auto [release_ec] = co_await held.async_release(use_tuple);
        if (release_ec) s->record_release_failure(release_ec);  // the TTL frees it anyway
    }
}

using worker_fn = asio::awaitable<void> (*)(std::shared_ptr<shared_run>, std::size_t);

inline asio::awaitable<void> connect_all(std::shared_ptr<shared_run> s)
{
    for (auto& c : s->clients) co_await c.async_connect(asio::use_awaitable);
    co_await s->counter.async_connect(asio::use_awaitable);
}

// Connects, then runs s->coroutines workers on ctx; s->finished is set once the last one ends.
inline void launch(asio::io_context& ctx, std::shared_ptr<shared_run> s, worker_fn worker)
{
    asio::co_spawn(ctx, connect_all(s), [&ctx, s, worker](std::exception_ptr e) {
        if (e) {
            s->record_error(e);
            s->finished.set_value();
            return;
        }
        s->running = s->coroutines;
        for (int i = 0; i < s->coroutines; ++i) {
            asio::co_spawn(ctx, worker(s, static_cast<std::size_t>(i)), [s](std::exception_ptr e) {
                if (e) s->record_error(e);
                if (--s->running == 0) s->finished.set_value();
            });
        }
    });
}

// Runs an io_context on several threads; the destructor stops it and joins them.
class context_threads {
public:
    context_threads(asio::io_context& ctx, int n) : ctx_(ctx)
    {
        for (int i = 0; i < n; ++i) threads_.emplace_back([&ctx] { ctx.run(); });
    }
    ~context_threads()
    {
        work_.reset();
        ctx_.stop();
        for (auto& t : threads_) t.join();
    }
    context_threads(const context_threads&) = delete;
    context_threads& operator=(const context_threads&) = delete;

private:
    asio::io_context& ctx_;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{ctx_.get_executor()};
    std::vector<std::thread> threads_;
};

// Waits for the workers; fails the test (after stopping them) if they are not done within `limit`.
inline void wait_finished(shared_run& s, ms limit)
{
    auto done = s.finished.get_future();
    if (done.wait_for(limit) != std::future_status::ready) {
        s.stop = true;
        BOOST_FAIL("the workers did not finish within " << limit.count() << " ms");
    }
    std::lock_guard lock(s.error_mutex);
    BOOST_REQUIRE_MESSAGE(s.error.empty(), "a worker failed: " << s.error);
}

}  // namespace redlock::test::exclusion
