// Async job workers: several processes, many coroutines each, take jobs from a Redis list. A semaphore caps the
// jobs running at once across every process, a rate limiter paces the calls to a slow "external API", and each
// job writes its effect under its account's lock (with_lock). A process killed mid-job loses nothing: its jobs
// sit in its own processing list until another process finds it dead (its liveness lock free) and requeues them;
// a job that runs twice writes its effect once, and a worker that stalls past its account lock cannot overwrite
// another's write (the lock's fencing token guards it).
//
// Usage: redlock_example_workers --seed N [--accounts A] [--store URL]        push N jobs and exit
//        redlock_example_workers [--nodes URLS] [--store URL] [--concurrency C] [--limit L] [--rate R]
//                                [--api-latency MS]                          work until no job is left
// --nodes: the lock nodes (comma-separated; default $REDLOCK_NODES, else redis://127.0.0.1:6379); --store: the
// node of the queue, the rate limit and the accounts (default: the first lock node).
#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the allocation of an Asio coroutine frame with the frame's own operator delete (which frees it
// correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "job_queue.hpp"
#include "worker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <unistd.h>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

std::string process_id()
{
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    std::random_device random;
    return std::string(host) + "-" + std::to_string(getpid()) + "-" + std::to_string(random() % 10000);
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

struct run_state {
    workers::tally tally;
    bool finished = false;
};

// Every second: progress, and the jobs of dead processes back into the queue.
asio::awaitable<void> supervise(workers::services s, workers::settings config, run_state& run)
{
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        co_await sleep_for(1000ms);
        if (run.finished) break;  // the clients are closing: nothing to recover, nothing to report
        try {
            run.tally.recovered += co_await workers::recover_dead(s.locks, s.data, config.process);
        } catch (const std::exception& e) {  // the store or the lock nodes away for a while: try again next time
            std::cerr << config.process << ": recovery: " << e.what() << "\n";
        }
        const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::cout << config.process << ": " << run.tally.done << " done, " << run.tally.running << " running, "
                  << std::fixed << std::setprecision(1) << run.tally.api_calls / elapsed << " API calls/s, "
                  << run.tally.recovered << " recovered" << std::endl;
    }
}

asio::awaitable<void> run_workers(workers::services s, workers::settings config, run_state& run)
{
    // Held while this process takes jobs: free means dead, and its processing list then goes back to the queue.
    redlock::mutex alive(s.locks, workers::liveness_lock(config.process), {.ttl = 3s, .watchdog = true});
    redlock::lease liveness = co_await alive.async_lock(asio::use_awaitable);
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(ex, supervise(s, config, run), asio::detached);
    int running = config.concurrency;
    asio::steady_timer all_done(ex, std::chrono::steady_clock::time_point::max());
    for (int i = 0; i < config.concurrency; ++i)
        asio::co_spawn(ex, workers::work(s, config, run.tally), [&](std::exception_ptr e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& what) {
                    std::cerr << config.process << ": a worker stopped: " << what.what() << "\n";
                }
            }
            if (--running == 0) all_done.cancel();
        });
    co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
    run.finished = true;
    co_await liveness.async_release(asio::as_tuple(asio::use_awaitable));
}

}  // namespace

int main(int argc, char** argv)
{
    std::map<std::string, std::string> flags;
    for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
    auto flag = [&](const std::string& name, std::string fallback) {
        auto it = flags.find(name);
        return it == flags.end() ? fallback : it->second;
    };
    const char* env = std::getenv("REDLOCK_NODES");
    const auto lock_nodes = redlock::parse_node_list(flag("--nodes", env && *env ? env : "redis://127.0.0.1:6379"));
    if (lock_nodes.empty()) {
        std::cerr << "no lock nodes: give --nodes URL,URL,...\n";
        return 2;
    }
    workers::settings config;
    config.process = process_id();
    config.store = flags.count("--store") ? redlock::parse_url(flags["--store"]) : lock_nodes.front();
    config.concurrency = std::stoi(flag("--concurrency", "8"));
    config.limit = std::stoll(flag("--limit", "4"));
    config.rate = std::stoll(flag("--rate", "20"));
    config.api_latency = std::chrono::milliseconds(std::stoi(flag("--api-latency", "50")));

    asio::io_context ctx;
    redlock::client locks(ctx.get_executor(), lock_nodes);
    redlock::redis data(ctx.get_executor(), config.store);
    run_state run;
    int status = 0;
    auto program = [&]() -> asio::awaitable<void> {
        co_await data.async_connect(asio::use_awaitable);
        if (flags.count("--seed")) {
            co_await workers::seed(data, std::stoi(flags["--seed"]), std::stoi(flag("--accounts", "5")));
        } else {
            co_await run_workers({locks, data}, config, run);
            std::cout << config.process << ": finished: " << run.tally.done << " jobs done here, " << run.tally.repeated
                      << " repeated (effect already written), " << run.tally.recovered
                      << " recovered from dead workers, " << run.tally.api_calls << " API calls" << std::endl;
        }
    };
    asio::co_spawn(ctx, program(), [&](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& what) {
                std::cerr << "error: " << what.what() << "\n";
                status = 1;
            }
        }
        locks.close();
        data.close();
    });
    ctx.run();
    return status;
}
