// A process that increments a counter on its own Redis node under a distributed lock, from many coroutines on
// several threads: the mutual exclusion tests run it beside their in-process workers, on the same key.
//
// Usage: helper_exclusion_worker LOCK_URLS COUNTER_URL KEY INCREMENTS COROUTINES THREADS [WINDOW_MS]
//   LOCK_URLS    comma-separated lock nodes
//   COUNTER_URL  the node that keeps the counter (not a lock node); the counter's key is KEY too
//   INCREMENTS   per coroutine; 0 = until SIGTERM or SIGINT
//   WINDOW_MS    pause between the read and the write, to widen the race window (default 1)
// Prints one line on stdout:
//   increments=N acquire_failures=F aborted=A release_failures=R overlaps=O elapsed_ms=T
// Exit status: 0 done (or stopped, with INCREMENTS 0); 1 unexpected error; 2 bad arguments; 3 overall deadline
// passed; 4 stopped before INCREMENTS were done.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

constexpr auto overall_deadline = 120s;

struct worker_state {
    worker_state(asio::any_io_executor ex, std::vector<redlock::node_config> lock_nodes,
                 redlock::node_config counter_node)
        : client(ex, std::move(lock_nodes)), counter(ex, std::move(counter_node))
    {}

    redlock::client client;
    redlock::connection counter;
    std::string key;
    redlock::lock_options lock{.ttl = 2000ms, .wait = 30'000ms, .retry_delay = 5ms, .retry_jitter = 5ms};
    long increments_per_coroutine = 0;  // 0: until stopped
    ms window{1};
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

    std::atomic<bool> stop{false};
    std::atomic<long> increments{0};
    std::atomic<long> acquire_failures{0};
    std::atomic<long> aborted{0};
    std::atomic<long> release_failures{0};
    std::atomic<long> overlaps{0};  // two coroutines of this process inside at once: a violation
    std::atomic<int> inside{0};
    std::atomic<int> running{0};

    std::mutex error_mutex;
    std::string error;  // the first unexpected error
};

long parse_count(const char* text, const char* what)
{
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || value < 0) throw std::invalid_argument(std::string("bad ") + what + ": " + text);
    return value;
}

asio::awaitable<void> sleep_for(ms d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(use_tuple);
}

// GET through the counter's connection; a missing key is 0. Throws on any error: the counter node has no faults.
asio::awaitable<long> read_counter(redlock::connection& counter, const std::string& key)
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

asio::awaitable<void> write_counter(redlock::connection& counter, const std::string& key, long value)
{
    redlock::request req;
    req.push("SET", key, value);
    co_await counter.async_exec(req, asio::use_awaitable);
}

// A non-atomic read-modify-write under the lock, until this coroutine's share is done or the process is stopped.
asio::awaitable<void> increment_loop(std::shared_ptr<worker_state> s)
{
    redlock::mutex m(s->client, s->key, s->lock);
    long done = 0;
    while (!s->stop && (s->increments_per_coroutine == 0 || done < s->increments_per_coroutine)) {
        auto [ec, held] = co_await m.async_lock(use_tuple);
        if (ec == redlock::error::invalid_argument) throw boost::system::system_error(ec, "async_lock");
        if (ec) {
            // An increment counts only if made under the lock: try again (the overall deadline bounds this).
            ++s->acquire_failures;
            continue;
        }
        if (s->inside.fetch_add(1) != 0) ++s->overlaps;
        const long value = co_await read_counter(s->counter, s->key);
        if (s->window > ms(0)) co_await sleep_for(s->window);
        // Write whenever the lease is still valid, however little is left: a holder that believes it holds the
        // lock writes, so an exclusion bug near the end of a lease shows as a lost update. (The write takes well
        // under a millisecond here, against validities of seconds.)
        const bool write = held.validity() > ms(0);
        if (write) co_await write_counter(s->counter, s->key, value + 1);
        s->inside.fetch_sub(1);
        if (write) {
            ++done;
            ++s->increments;
        } else {
            ++s->aborted;
        }
        auto [release_ec] = co_await held.async_release(use_tuple);
        if (release_ec && ++s->release_failures <= 3) {
            // The TTL frees it anyway; say why, for the test's log.
            std::fprintf(stderr, "exclusion_worker: release: %s\n", release_ec.message().c_str());
        }
    }
}

void record_error(worker_state& s, const std::string& what)
{
    std::lock_guard lock(s.error_mutex);
    if (s.error.empty()) s.error = what;
    s.stop = true;
}

std::string describe(const std::exception_ptr& e)
{
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    } catch (...) {
        return "unknown exception";
    }
}

// Connects, then runs the coroutines; stops the io_context when the last one ends.
asio::awaitable<void> start(std::shared_ptr<worker_state> s, int coroutines, asio::io_context& ctx)
{
    redlock::diagnostics diag;
    auto [ec] = co_await s->client.async_connect(diag, use_tuple);
    if (ec) throw std::runtime_error("lock nodes: " + ec.message() + ": " + std::string(diag.message()));
    auto [counter_ec] = co_await s->counter.async_connect(diag, use_tuple);
    if (counter_ec)
        throw std::runtime_error("counter node: " + counter_ec.message() + ": " + std::string(diag.message()));
    s->started = std::chrono::steady_clock::now();
    s->running = coroutines;
    for (int i = 0; i < coroutines; ++i) {
        asio::co_spawn(ctx, increment_loop(s), [s, &ctx](std::exception_ptr e) {
            if (e) record_error(*s, describe(e));
            if (--s->running == 0) ctx.stop();
        });
    }
}

// Ends the process if the run is not over in time: it must never hang a test.
class deadline_guard {
public:
    explicit deadline_guard(std::chrono::seconds limit)
        : thread_([this, limit] {
              std::unique_lock lock(mutex_);
              if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
                  std::fprintf(stderr, "exclusion_worker: not done after %lld s\n",
                               static_cast<long long>(limit.count()));
                  std::fflush(nullptr);
                  std::_Exit(3);
              }
          })
    {}
    ~deadline_guard()
    {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;  // last: starts once the rest exists
};

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 7 || argc > 8) {
        std::fprintf(stderr,
                     "usage: %s LOCK_URLS COUNTER_URL KEY INCREMENTS COROUTINES THREADS [WINDOW_MS]\n"
                     "  INCREMENTS per coroutine, 0 = until SIGTERM\n",
                     argv[0]);
        return 2;
    }
    std::vector<redlock::node_config> lock_nodes;
    redlock::node_config counter_node;
    long increments = 0, coroutines = 0, threads = 0, window = 1;
    try {
        lock_nodes = redlock::parse_node_list(argv[1]);
        counter_node = redlock::parse_url(argv[2]);
        increments = parse_count(argv[4], "INCREMENTS");
        coroutines = parse_count(argv[5], "COROUTINES");
        threads = parse_count(argv[6], "THREADS");
        if (argc == 8) window = parse_count(argv[7], "WINDOW_MS");
        if (coroutines == 0 || threads == 0) throw std::invalid_argument("COROUTINES and THREADS must be positive");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "exclusion_worker: %s\n", e.what());
        return 2;
    }

    deadline_guard deadline(overall_deadline);
    asio::io_context ctx(static_cast<int>(threads));
    auto s = std::make_shared<worker_state>(ctx.get_executor(), std::move(lock_nodes), std::move(counter_node));
    s->key = argv[3];
    s->increments_per_coroutine = increments;
    s->window = ms(window);

    // SIGTERM ends the run between increments: each coroutine finishes the one it is making.
    asio::signal_set signals(ctx, SIGTERM, SIGINT);
    signals.async_wait([s](boost::system::error_code ec, int) {
        if (!ec) s->stop = true;
    });
    asio::co_spawn(ctx, start(s, static_cast<int>(coroutines), ctx), [s, &ctx](std::exception_ptr e) {
        if (!e) return;
        record_error(*s, describe(e));
        ctx.stop();
    });

    std::vector<std::thread> pool;
    auto run = [&ctx, s] {
        try {
            ctx.run();
        } catch (const std::exception& e) {
            record_error(*s, std::string("handler threw: ") + e.what());
            ctx.stop();
        }
    };
    for (long i = 1; i < threads; ++i) pool.emplace_back(run);
    run();
    for (auto& t : pool) t.join();

    const auto elapsed = std::chrono::duration_cast<ms>(std::chrono::steady_clock::now() - s->started).count();
    std::printf("increments=%ld acquire_failures=%ld aborted=%ld release_failures=%ld overlaps=%ld elapsed_ms=%lld\n",
                s->increments.load(), s->acquire_failures.load(), s->aborted.load(), s->release_failures.load(),
                s->overlaps.load(), static_cast<long long>(elapsed));
    std::fflush(stdout);
    if (!s->error.empty()) {
        std::fprintf(stderr, "exclusion_worker: %s\n", s->error.c_str());
        return 1;
    }
    if (s->overlaps > 0) return 1;
    if (increments > 0 && s->increments != increments * coroutines) return 4;
    return 0;
}
