// Peer benchmark: redis-plus-plus's Redlock (RedLockMutexVessel, synchronous, on hiredis) doing what
// `redlock bench --scenario uncontended` does, printing one JSON object with the keys of `redlock bench --json`.
//
//     bench --nodes redis://127.0.0.1:7101[,...] --duration 5s [--threads K] [--ttl 10000]
//
// Each of K threads (default 1: one caller in sequence) loops on its own key bench:<runid>:<thread>:
// vessel.lock(key, token, ttl, 1 attempt), then vessel.unlock(). The threads share one Redis object per node,
// whose connection pool holds K connections, so no thread waits for another's connection; each thread PINGs every
// node before the clock starts, so that connecting is not measured. The vessel asks the nodes one after the other
// (SET NX PX each), and unlocks with EVAL of a compare-and-delete script. As `redlock bench`, the acquire latency
// counts granted acquires only, and a failed one pauses 10 ms before the next.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <sw/redis++/patterns/redlock.h>
#include <sw/redis++/redis++.h>
#include <sys/resource.h>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
    std::vector<std::pair<std::string, int>> nodes;  // host, port
    std::chrono::milliseconds duration{5000};
    std::chrono::milliseconds ttl{10000};
    int threads = 1;
};

[[noreturn]] void usage(const std::string& why)
{
    std::cerr << "bench: " << why
              << "\nusage: bench --nodes redis://HOST:PORT[,...] --duration D (250ms, 5s, 2m) [--threads K] "
                 "[--ttl MS]\n";
    std::exit(64);
}

std::chrono::milliseconds parse_duration(const std::string& text)
{
    std::smatch m;
    if (!std::regex_match(text, m, std::regex(R"(([0-9]+)(ms|s|m)?)"))) usage("'" + text + "' is not a duration");
    const long n = std::stol(m[1]);
    return std::chrono::milliseconds(m[2] == "s" ? n * 1000 : m[2] == "m" ? n * 60000 : n);
}

long number(const std::string& flag, const std::string& text)
{
    try {
        std::size_t end = 0;
        const long n = std::stol(text, &end);
        if (end == text.size()) return n;
    } catch (const std::exception&) {
    }
    usage(flag + " takes a number, not '" + text + "'");
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (i + 1 >= argc) usage(flag + " needs a value");
        const std::string value = argv[i + 1];
        if (flag == "--nodes") {
            std::stringstream list(value);
            std::string url;
            std::smatch m;
            while (std::getline(list, url, ','))
                if (std::regex_match(url, m, std::regex(R"(redis://([^:/]+):([0-9]+)/?)")))
                    o.nodes.emplace_back(m[1], std::stoi(m[2]));
                else
                    usage("'" + url + "' is not redis://HOST:PORT");
        } else if (flag == "--duration") {
            o.duration = parse_duration(value);
        } else if (flag == "--ttl") {
            o.ttl = std::chrono::milliseconds(number(flag, value));
        } else if (flag == "--threads") {
            o.threads = static_cast<int>(number(flag, value));
        } else {
            usage("unknown option " + flag);
        }
    }
    if (o.nodes.empty()) usage("--nodes is required");
    if (o.threads < 1 || o.threads > 4096) usage("--threads must be 1 to 4096");
    if (o.ttl.count() < 1) usage("--ttl must be positive");
    return o;
}

// Nearest-rank percentile of sorted samples, as `redlock bench` computes it; null without samples.
std::string percentile(const std::vector<long>& sorted, double p)
{
    if (sorted.empty()) return "null";
    const auto n = static_cast<double>(sorted.size());
    const auto rank = std::clamp(static_cast<std::size_t>(std::ceil(p / 100 * n)), std::size_t{1}, sorted.size());
    return std::to_string(sorted[rank - 1]);
}

double cpu_us(long sec, long usec)
{
    return static_cast<double>(sec) * 1e6 + static_cast<double>(usec);
}

std::string per_op(double total, long ops)
{
    if (ops == 0) return "null";
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", total / static_cast<double>(ops));
    return text;
}

}  // namespace

int main(int argc, char** argv)
{
    const auto o = parse(argc, argv);
    std::vector<std::shared_ptr<sw::redis::Redis>> nodes;
    for (const auto& [host, port] : o.nodes) {
        sw::redis::ConnectionOptions connection;
        connection.host = host;
        connection.port = port;
        connection.connect_timeout = std::chrono::seconds(2);  // a stalled node ends the run, not hangs it
        connection.socket_timeout = std::chrono::seconds(2);
        sw::redis::ConnectionPoolOptions pool;
        pool.size = static_cast<std::size_t>(o.threads);
        nodes.push_back(std::make_shared<sw::redis::Redis>(connection, pool));
    }
    sw::redis::RedLockMutexVessel vessel(nodes.begin(), nodes.end());

    std::mt19937_64 seed(std::random_device{}());
    const auto run_id = std::to_string(seed() % 1000000);
    const auto thread_seed = seed();  // each thread's generator starts from it and its number
    std::atomic<long> ops{0}, errors{0};
    std::vector<std::vector<long>> acquire_us(static_cast<std::size_t>(o.threads));
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    clock_type::time_point end{};
    std::vector<std::thread> threads;
    for (int t = 0; t < o.threads; ++t) {
        threads.emplace_back([&, t] {
            try {
                for (auto& node : nodes) node->ping();  // takes a pooled connection: connected before the clock
            } catch (const sw::redis::Error&) {
                ++errors;
            }
            ++ready;
            while (!go) std::this_thread::yield();
            std::mt19937_64 random(thread_seed + static_cast<unsigned>(t));
            const auto key = "bench:" + run_id + ":" + std::to_string(t);
            auto& samples = acquire_us[static_cast<std::size_t>(t)];
            char token[33];
            while (clock_type::now() < end) {
                std::snprintf(token, sizeof token, "%016llx%016llx", static_cast<unsigned long long>(random()),
                              static_cast<unsigned long long>(random()));
                try {
                    const auto t0 = clock_type::now();
                    const auto lease = vessel.lock(key, token, o.ttl, 1);
                    if (lease.locked) {
                        samples.push_back(
                            std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - t0).count());
                        vessel.unlock(lease);
                        ++ops;
                        continue;
                    }
                } catch (const sw::redis::Error&) {
                }
                ++errors;
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        });
    }
    while (ready < o.threads) std::this_thread::yield();
    rusage usage_start{};
    getrusage(RUSAGE_SELF, &usage_start);
    const auto start = clock_type::now();
    end = start + o.duration;
    go = true;  // after `end` is set: the threads read it once they see `go`
    for (auto& t : threads) t.join();
    const auto elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
    rusage usage_end{};
    getrusage(RUSAGE_SELF, &usage_end);
    const auto user = cpu_us(usage_end.ru_utime.tv_sec, usage_end.ru_utime.tv_usec) -
                      cpu_us(usage_start.ru_utime.tv_sec, usage_start.ru_utime.tv_usec);
    const auto sys = cpu_us(usage_end.ru_stime.tv_sec, usage_end.ru_stime.tv_usec) -
                     cpu_us(usage_start.ru_stime.tv_sec, usage_start.ru_stime.tv_usec);

    std::vector<long> all;
    for (const auto& samples : acquire_us) all.insert(all.end(), samples.begin(), samples.end());
    std::sort(all.begin(), all.end());
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f", static_cast<double>(ops) / elapsed);
    std::cout << R"({"scenario":"uncontended","fencing":false,"nodes":)" << nodes.size() << R"(,"clients":1,"workers":)"
              << o.threads << R"(,"ops":)" << ops << R"(,"ops_per_sec":)" << rate << R"(,"cpu_us_per_op":)"
              << per_op(user + sys, ops) << R"(,"user_us_per_op":)" << per_op(user, ops) << R"(,"sys_us_per_op":)"
              << per_op(sys, ops) << R"(,"allocs_per_op":null,"acquire_us":{"p50":)" << percentile(all, 50)
              << R"(,"p90":)" << percentile(all, 90) << R"(,"p99":)" << percentile(all, 99) << R"(,"max":)"
              << percentile(all, 100) << R"(},"handoff_us":{"p50":null,"p99":null},"errors":)" << errors << "}\n";
    return ops > 0 ? 0 : 1;  // nothing measured (the nodes refused or were unreachable): a failed run
}
