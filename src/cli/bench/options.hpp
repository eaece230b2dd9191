// `redlock bench`: its command line, checked completely before any I/O, and its help text.
#pragma once

#include "cli/common/command_line.hpp"
#include "cli/common/output.hpp"
#include "cli/common/rate_spec.hpp"

#include <redlock/node_config.hpp>
#include <redlock/rate_limit.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

struct bench_options {
    enum class scenario { uncontended, contended, handoff, hold, limiter, semaphore, cache };
    std::vector<node_config> nodes;
    scenario kind = scenario::uncontended;
    // The defaults of uncontended: one client shared by 64 requests in flight, as in a service. The parser gives
    // the other scenarios theirs (contended 4 clients x 1 worker, handoff 10 x 1, semaphore 8 x 1).
    int clients = 1;
    int workers = 64;  // coroutines sharing each client
    ms duration{5'000};
    ms ttl{10'000};
    bool fencing = false;
    int replica_acks = 0;  // lock and semaphore scenarios: replicas that must acknowledge each grant (WAIT)
    ms replica_ack_timeout{0};
    bool fair = false;  // handoff: a fair lock; semaphore: a fair semaphore
    bool json = false;
    int leases = 100'000;  // hold: how many leases one client holds with the watchdog
    // limiter: each worker's own key under this limit
    rate_strategy strategy = rate_strategy::gcra;
    rate_spec rate{1000, std::chrono::seconds(1)};
    std::int64_t burst = 100;
    int limit = 0;  // semaphore: the permits the workers contend for; 0: half the workers (bench/semaphore.cpp)
    verbosity output = verbosity::normal;
};

extern const std::string_view bench_help;

// The arguments after "bench". nullopt after printing bench_help (-h, --help); throws usage_error on a bad
// command line.
std::optional<bench_options> parse_bench(const std::vector<std::string>& args);

}  // namespace redlock::cli
