// One worker coroutine: takes jobs from the queue and runs each holding a permit of the process-wide job limit,
// paced by the external API's rate limit, with its effect written under the account's lock.
#pragma once

#include <redlock/redlock.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace workers {

struct settings {
    std::string process;     ///< this process's id
    int concurrency = 8;     ///< worker coroutines in this process
    std::int64_t limit = 4;  ///< jobs running at once across every process (a semaphore)
    std::int64_t rate = 20;  ///< external API calls per second across every process (a rate limiter)
    std::chrono::milliseconds api_latency{50};
    redlock::node_config store;  ///< the queue, the rate limit and the accounts
};

/// What this process did, for its progress lines and summary (one thread: plain ints).
struct tally {
    int done = 0;      ///< jobs finished here
    int repeated = 0;  ///< jobs whose effect was already written (their first run died after writing it)
    int running = 0;   ///< jobs holding a permit here now
    int api_calls = 0;
    int recovered = 0;  ///< jobs of dead processes moved back to the queue by this one
};

/// The shared parts of the process: the lock nodes (semaphore, account locks, liveness) and the store, one Redis (the
/// rate limiter, the jobs' reads and writes).
struct services {
    redlock::client& locks;
    redlock::redis& data;
};

/// Runs jobs until nothing is pending or processing anywhere.
boost::asio::awaitable<void> work(services s, const settings& config, tally& t);

}  // namespace workers
