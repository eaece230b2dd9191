// Never more than `limit` holders under faults: worker processes (test/helpers/semaphore_worker.cpp) take permits
// again and again on 1, 3 and 5 nodes, and register each grant on an observer node; the test kills a worker
// with SIGKILL mid-run (its permits are reclaimed after their TTL) and, over several nodes, pauses one node and
// kills and restarts another (with its data). Every registration counts the holders whose validity has not
// ended: none ever sees more than the limit. Afterwards no permit is left on any node, and held + available is
// the limit.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <common/lock_checks.hpp>
#include <common/redis_node.hpp>
#include <common/run_coro.hpp>
#include <common/subprocess.hpp>
#include <csignal>
#include <regex>
#include <thread>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::test::cluster;
using redlock::test::comma_joined;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

struct shape {
    int nodes;
    int limit;
    bool fair;
};

std::ostream& operator<<(std::ostream& os, const shape& s)
{
    return os << s.nodes << " nodes, limit " << s.limit << (s.fair ? ", fair" : "");
}

struct worker {
    pid_t pid;
    std::string log;
};

worker start_worker(const cluster& nodes, const redlock::test::redis_node& observer, const shape& s,
                    const std::string& dir, int index, std::chrono::milliseconds duration)
{
    worker w{0, dir + "/worker" + std::to_string(index) + ".log"};
    std::vector<std::string> args{std::string(REDLOCK_TEST_HELPER_DIR) + "/helper_semaphore_worker",
                                  comma_joined(nodes.urls()),
                                  observer.url(),
                                  "permits",
                                  std::to_string(s.limit),
                                  "3",
                                  std::to_string(duration.count())};
    if (s.fair) args.emplace_back("fair");
    w.pid = redlock::test::spawn_process({args, redlock::test::environment_with({}), w.log});
    return w;
}

long field(const std::string& log, const std::string& name)
{
    std::smatch m;
    if (!std::regex_search(log, m, std::regex(name + "=(\\d+)"))) return -1;
    return std::stol(m[1]);
}

}  // namespace

BOOST_DATA_TEST_CASE(never_more_than_limit_holders_under_killed_holders_and_node_faults,
                     data::make({shape{1, 3, false}, shape{3, 2, false}, shape{5, 2, false}, shape{3, 2, true}}), s)
{
#ifdef REDLOCK_TEST_SANITIZED
    constexpr auto duration = 5000ms;
#else
    constexpr auto duration = 6000ms;
#endif
    redlock::test::node_options persistent;
    persistent.persistence = true;  // a restarted node keeps the permits it granted
    cluster nodes(static_cast<std::size_t>(s.nodes), persistent);
    redlock::test::redis_node observer;
    const auto dir = redlock::test::make_temp_dir("semaphore-fault-");
    const auto start = steady::now();
    std::vector<worker> workers;
    for (int i = 0; i < 4; ++i) workers.push_back(start_worker(nodes, observer, s, dir, i, duration));
    auto at = [&](std::chrono::milliseconds t) { std::this_thread::sleep_until(start + t); };

    at(1200ms);
    ::kill(workers[0].pid, SIGKILL);  // most likely mid-hold: its permit stays until its TTL
    redlock::test::wait_for_exit(workers[0].pid, 2s);
    workers.push_back(start_worker(nodes, observer, s, dir, 4, duration - 1200ms));
    if (s.nodes > 1) {
        const auto last = static_cast<std::size_t>(s.nodes - 1);
        at(2000ms);
        nodes[last].pause();
        at(3000ms);
        nodes[last].resume();
        at(3500ms);
        nodes[last - 1].kill();
        at(4500ms);
        nodes[last - 1].restart();
    }

    long grants = 0, overlaps = 0, most = 0;
    for (std::size_t i = 1; i < workers.size(); ++i) {
        int status = 0;
        BOOST_REQUIRE_MESSAGE(redlock::test::wait_for_exit(workers[i].pid, 30s, &status), "a worker hangs");
        const auto log = redlock::test::file_contents(workers[i].log);
        BOOST_TEST(redlock::test::exit_status(status) == 0, log);
        grants += std::max(0L, field(log, "grants"));
        overlaps += field(log, "overlaps");
        most = std::max(most, field(log, "most"));
        BOOST_TEST_MESSAGE("worker " << i << ": " << log);
    }
    BOOST_TEST(overlaps == 0);
    BOOST_TEST(most <= s.limit);
    BOOST_TEST(grants > 20);  // the run took permits, through the faults

    // The killed worker's permits expire; then nothing is left, and what is free is the limit.
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), redlock::test::configs(nodes));
    redlock::test::run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await c.async_connect(asio::use_awaitable);
        redlock::semaphore sem(c, "permits", s.limit, {.ttl = 5000ms, .wait = 10'000ms, .fair = s.fair});
        auto [ec, p] = co_await sem.async_acquire(use_tuple);  // waits out any orphan, drops expired units
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        auto [e1, seen] = co_await sem.async_inspect(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        for (const auto& v : seen.nodes) {
            BOOST_TEST(v.held() == 1);
            BOOST_TEST(v.held() + v.available().value_or(-100) == s.limit);
        }
        co_await p.async_release(asio::use_awaitable);
        co_await redlock::test::sleep_for(1600ms);                    // past every permit's TTL, orphans included
        auto [e3, last] = co_await sem.async_try_acquire(use_tuple);  // its scripts drop expired units
        BOOST_REQUIRE_MESSAGE(!e3, e3.message());
        co_await last.async_release(asio::use_awaitable);
        auto [e2, after] = co_await sem.async_inspect(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e2, e2.message());
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            BOOST_TEST(after.nodes[i].permits.empty(), after.nodes[i].node << " still has permits");
            BOOST_TEST(after.nodes[i].held() + after.nodes[i].available().value_or(-100) == s.limit);
            BOOST_TEST(nodes[i].cli({"ZCOUNT", "permits", "-inf", "+inf"}) == "0", "an orphan unit on node " << i);
        }
    });
}
