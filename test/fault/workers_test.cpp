// example/workers run as it would be: three processes work a queue of 150 jobs over 3 lock nodes and a store,
// and one is killed with SIGKILL mid-run. No job is lost (the others requeue the dead one's jobs), every job's
// effect is written exactly once (the balances add up), the semaphore's cap held across the processes, and the
// rate limit paced the API calls.
#ifdef REDLOCK_EXAMPLE_WORKERS

#include <boost/test/unit_test.hpp>

#include <common/processes/subprocess.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <regex>
#include <thread>

using namespace std::chrono_literals;
using redlock::test::cluster;
using redlock::test::redis_node;
using steady = std::chrono::steady_clock;

namespace {

struct worker_process {
    pid_t pid;
    std::string log;
};

long count(const redis_node& node, std::vector<std::string> command)
{
    const auto text = node.cli(std::move(command));
    return text.empty() ? 0 : std::stol(text);
}

long total_from_logs(const std::vector<worker_process>& processes, const std::string& what)
{
    long total = 0;
    for (const auto& p : processes) {
        std::smatch m;
        const auto log = redlock::test::file_contents(p.log);
        if (std::regex_search(log, m, std::regex("(\\d+) " + what))) total += std::stol(m[1]);
    }
    return total;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_worker_killed_mid_job_loses_no_job_and_no_effect_is_written_twice)
{
    constexpr int jobs = 150, accounts = 5, limit = 3, rate = 60;
    cluster locks(3);
    redis_node store;
    std::string lock_urls;
    for (const auto& url : locks.urls()) lock_urls += (lock_urls.empty() ? "" : ",") + url;
    const std::vector<std::string> common{"--nodes", lock_urls, "--store", store.url()};
    auto args = [&](std::vector<std::string> extra) {
        std::vector<std::string> all{REDLOCK_EXAMPLE_WORKERS};
        all.insert(all.end(), common.begin(), common.end());
        all.insert(all.end(), extra.begin(), extra.end());
        return all;
    };
    auto seeded = redlock::test::run_command(args({"--seed", std::to_string(jobs), "--accounts", "5"}), 10s);
    BOOST_REQUIRE_MESSAGE(seeded.exit_code == 0, seeded.err);
    BOOST_REQUIRE(count(store, {"LLEN", "jobs:pending"}) == jobs);

    const auto dir = redlock::test::make_temp_dir("workers-");
    std::vector<worker_process> processes;
    const auto start = steady::now();
    for (int i = 0; i < 3; ++i) {
        worker_process p{0, dir + "/worker" + std::to_string(i) + ".log"};
        p.pid = redlock::test::spawn_process(
            {args({"--concurrency", "4", "--limit", std::to_string(limit), "--rate", std::to_string(rate)}),
             redlock::test::environment_with({}), p.log});
        processes.push_back(p);
    }
    // Mid-run: jobs done, and jobs taken (a process takes up to 4: one per coroutine).
    while (count(store, {"SCARD", "jobs:done"}) < 30 && steady::now() - start < 30s) std::this_thread::sleep_for(20ms);
    BOOST_REQUIRE(!store.cli({"KEYS", "jobs:processing:*"}).empty());
    ::kill(processes[0].pid, SIGKILL);
    redlock::test::wait_for_exit(processes[0].pid, 5s);

    for (std::size_t i = 1; i < processes.size(); ++i) {
        int status = 0;
        BOOST_REQUIRE_MESSAGE(redlock::test::wait_for_exit(processes[i].pid, 90s, &status), "a worker hangs");
        BOOST_TEST(redlock::test::exit_status(status) == 0, redlock::test::file_contents(processes[i].log));
    }
    const auto took = std::chrono::duration<double>(steady::now() - start).count();
    for (const auto& p : processes) BOOST_TEST_MESSAGE(redlock::test::file_contents(p.log));

    // Every job done once: its mark, and its effect in the balances.
    BOOST_TEST(count(store, {"SCARD", "jobs:done"}) == jobs);
    long balances = 0;
    for (int a = 0; a < accounts; ++a) balances += count(store, {"GET", "balance:account-" + std::to_string(a)});
    BOOST_TEST(balances == jobs);
    BOOST_TEST(count(store, {"LLEN", "jobs:pending"}) == 0);
    BOOST_TEST(store.cli({"KEYS", "jobs:processing:*"}).empty());
    // The dead one's jobs came back through recovery.
    BOOST_TEST(total_from_logs({processes[1], processes[2]}, "recovered from dead workers") >= 1);
    // The semaphore capped the jobs running at once across the processes.
    BOOST_TEST(count(store, {"GET", "jobs:most_running"}) <= limit);
    BOOST_TEST(count(store, {"GET", "jobs:most_running"}) >= 1);
    // The rate limit paced the API calls of every process (GCRA without burst: at most rate x time + 1).
    const long calls = count(store, {"GET", "jobs:api_calls"});
    BOOST_TEST_MESSAGE(calls << " API calls in " << took << " s");
    BOOST_TEST(calls >= jobs);
    BOOST_TEST(calls <= static_cast<long>(rate * took) + 1);
}

#else
BOOST_AUTO_TEST_CASE(the_workers_example_is_not_built)
{
    BOOST_TEST_MESSAGE("REDLOCK_BUILD_EXAMPLES is off: nothing to run");
}
#endif
