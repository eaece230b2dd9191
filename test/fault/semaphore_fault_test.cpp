// Never more than `limit` holders under faults: worker processes (test/helpers/semaphore_worker.cpp) take permits
// again and again on 1, 3 and 5 nodes, and register each grant on an observer node; the test SIGKILLs a first
// worker while it holds a permit (whose units stay on the nodes until their TTL), starts four more and, over several
// nodes, pauses one node and kills and restarts another (with its data). Every registration counts the holders whose
// validity has not ended: none ever sees more than the limit. Grants go on inside each fault exactly when the permit
// quorum tolerates a node failure. Every key the nodes hold has a TTL throughout, and none is left once the last lease
// and the key margin have passed; held + available is the limit again.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <common/processes/helper_process.hpp>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <memory>
#include <optional>
#include <quorum/tally.hpp>
#include <sstream>
#include <sys/wait.h>
#include <thread>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::test::cluster;
using redlock::test::comma_joined;
using redlock::test::helper_process;
using redlock::test::redis_node;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

const std::string name = "permits";
// The workers' permit TTL (semaphore_worker.cpp) plus the keys' margin beyond the longest permit
// (semaphore_scripts::key_margin): how long a key may outlive the last write.
constexpr auto worker_ttl = 1500ms;
constexpr auto key_margin = 1000ms;
// The workers' node_timeout: a request still on its way when a worker's last call returned (a clean-up sent as a
// try failed) lands within it.
constexpr auto worker_node_timeout = 100ms;
constexpr int worker_coroutines = 3;
#ifdef REDLOCK_TEST_SANITIZED
constexpr int slowdown = 4;  // sanitized workers start and run several times slower
#else
constexpr int slowdown = 1;
#endif

struct shape {
    int nodes;
    int limit;
    bool fair;

    std::size_t quorum() const
    {
        return redlock::detail::permit_quorum(static_cast<std::size_t>(nodes), static_cast<std::size_t>(limit));
    }
    std::size_t failures_tolerated() const { return static_cast<std::size_t>(nodes) - quorum(); }
};

std::ostream& operator<<(std::ostream& os, const shape& s)
{
    return os << s.nodes << " nodes, limit " << s.limit << (s.fair ? ", fair" : "") << " (Q = " << s.quorum() << ")";
}

// A fault, in the wall-clock ms the workers log their grants in.
struct window {
    long long from = 0, to = 0;
};

long long wall_ms()
{
    return std::stoll(redlock::test::unix_ms_in(0ms));
}

// A worker taking permits for `duration`; stopped (SIGTERM) if the test ends first.
std::unique_ptr<helper_process> start_worker(const cluster& nodes, const redis_node& observer, const shape& s,
                                             const std::string& dir, int index, std::chrono::milliseconds duration)
{
    std::vector<std::string> args{comma_joined(nodes.urls()), observer.url(), name, std::to_string(s.limit)};
    args.push_back(std::to_string(worker_coroutines));
    args.push_back(std::to_string(duration.count()));
    if (s.fair) args.emplace_back("fair");
    return std::make_unique<helper_process>("semaphore_worker", dir, "worker" + std::to_string(index), std::move(args));
}

std::vector<std::string> lines(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(line);
    return out;
}

std::string outputs(const std::vector<std::unique_ptr<helper_process>>& workers)
{
    std::string out;
    for (std::size_t i = 0; i < workers.size(); ++i)
        out += "\nworker " + std::to_string(i) + ": " + workers[i]->output();
    return out;
}

// Whether `worker` registered a grant on the observer (its grants are "<called> <pid>:...") within `limit`.
bool granted_once(const helper_process& worker, const redis_node& observer, std::chrono::milliseconds limit)
{
    const auto mine = " " + std::to_string(worker.pid()) + ":";
    return redlock::test::wait_until(
        [&] {
            return observer.cli({"ZRANGE", name + ":grants", "0", "-1"}).find(mine) != std::string::npos;
        },
        limit);
}

// Stops `worker` (SIGSTOP, waited for) while it holds a permit, and returns that permit's id. A holder is registered
// on the observer as "<pid>:<coroutine>:<n>:<permit id>" before it unregisters and then releases: registered
// while stopped means its permit is still on the nodes. Otherwise it continues and is looked at again.
std::optional<std::string> stop_while_holding(const helper_process& worker, const redis_node& observer,
                                              steady::time_point deadline)
{
    const auto prefix = std::to_string(worker.pid()) + ":";
    while (steady::now() < deadline) {
        worker.signal(SIGSTOP);
        siginfo_t info{};
        // WNOWAIT: an exit is left for the worker's own wait (it must not be reaped here).
        if (::waitid(P_PID, static_cast<id_t>(worker.pid()), &info, WSTOPPED | WEXITED | WNOWAIT) != 0 ||
            info.si_code != CLD_STOPPED)
            return std::nullopt;
        for (const auto& holder : lines(observer.cli({"ZRANGE", name + ":holders", "0", "-1"})))
            if (holder.starts_with(prefix)) return holder.substr(holder.rfind(':') + 1);
        worker.signal(SIGCONT);
        std::this_thread::sleep_for(3ms);
    }
    return std::nullopt;
}

// How many nodes still have the permit's unit.
std::size_t nodes_with_unit(const cluster& nodes, const std::string& permit_id)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) n += !nodes[i].cli({"ZSCORE", name, permit_id}).empty();
    return n;
}

// Keys without a TTL (PTTL -1), on any node: "node i: key". A key gone between KEYS and PTTL (-2), or at 0 (expiring
// now), expires as it should.
std::vector<std::string> keys_without_ttl(const cluster& nodes)
{
    std::vector<std::string> out;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        for (const auto& key : lines(nodes[i].cli({"KEYS", "*"})))
            if (std::stoll(nodes[i].cli({"PTTL", key})) == -1) out.push_back("node " + std::to_string(i) + ": " + key);
    return out;
}

// Grants whose whole attempt fell inside `w`: called after it began, registered before it ended. A quorum that
// needs the faulted node cannot make one.
long grants_within(const redis_node& observer, const window& w)
{
    long n = 0;
    for (const auto& grant : lines(observer.cli(
             {"ZRANGEBYSCORE", name + ":grants", "(" + std::to_string(w.from), "(" + std::to_string(w.to)})))
        n += std::stoll(grant.substr(0, grant.find(' '))) > w.from;
    return n;
}

}  // namespace

// 3 nodes with limit 2 need all 3 nodes (no grant inside a fault); 5 nodes with limit 2 need 4 (grants go on).
BOOST_DATA_TEST_CASE(never_more_than_limit_holders_under_killed_holders_and_node_faults,
                     data::make({shape{1, 3, false}, shape{3, 2, false}, shape{5, 2, false}, shape{3, 2, true}}), s)
{
    constexpr auto duration = 6500ms;  // from the kill: the faults end by worker_ttl + 3.6 s
    redlock::test::node_options persistent;
    persistent.persistence = true;  // a restarted node keeps the permits it granted
    cluster nodes(static_cast<std::size_t>(s.nodes), persistent);
    redis_node observer;
    const auto dir = redlock::test::make_temp_dir("semaphore-fault-");
    std::vector<std::unique_ptr<helper_process>> workers;

    // Worker 0 is killed while it holds a permit: its units stay on a quorum of nodes until their TTL. Alone, it
    // holds most of the time once it has connected (slow under sanitizers): from its first grant on, it is
    // stopped and looked at until it is caught holding.
    workers.push_back(start_worker(nodes, observer, s, dir, 0, 60s));
    BOOST_TEST_REQUIRE(granted_once(*workers[0], observer, 10s * slowdown), "worker 0 took no permit");
    const auto orphan = stop_while_holding(*workers[0], observer, steady::now() + 5s * slowdown);
    workers[0]->signal(SIGKILL);
    BOOST_REQUIRE(workers[0]->wait(2s) >= 0);
    const auto killed = steady::now();
    BOOST_TEST_REQUIRE(orphan.has_value(), "worker 0 was never seen holding a permit");
    BOOST_TEST(nodes_with_unit(nodes, *orphan) >= s.quorum(), "the killed worker's permit is not on a quorum");
    for (int i = 1; i <= 4; ++i) workers.push_back(start_worker(nodes, observer, s, dir, i, duration));

    // The node faults follow, one node down at a time, once the orphan's TTL has passed (with limit 1 it holds
    // the only permit until then).
    auto at = [&](std::chrono::milliseconds t) { std::this_thread::sleep_until(killed + t); };
    window paused, down;
    if (s.nodes > 1) {
        const auto last = static_cast<std::size_t>(s.nodes - 1);
        at(worker_ttl + 100ms);
        nodes[last].pause();
        paused.from = wall_ms() + 5;  // SIGSTOP takes effect as the node is next scheduled: well within 5 ms
        at(worker_ttl + 2100ms);      // 2 s: grants under a silent node come in bursts (split votes wait for it)
        paused.to = wall_ms();
        nodes[last].resume();
        at(worker_ttl + 2600ms);
        nodes[last - 1].kill();  // reaped: down from here
        down.from = wall_ms();
        at(worker_ttl + 3600ms);
        down.to = wall_ms();
        nodes[last - 1].restart();
    }
    // The faults are over (the workers run on): every key has a TTL, the restarted node's included, and the
    // orphan's unit is gone, its TTL past (the workers' scripts drop expired units).
    const auto untimed = keys_without_ttl(nodes);
    BOOST_TEST(untimed.empty(), comma_joined(untimed));
    {
        std::this_thread::sleep_until(std::max(steady::now(), killed + worker_ttl));
        const auto deadline = steady::now() + 1s * slowdown;
        while (nodes_with_unit(nodes, *orphan) > 0 && steady::now() < deadline) std::this_thread::sleep_for(10ms);
        BOOST_TEST(nodes_with_unit(nodes, *orphan) == 0u, "the killed worker's unit outlived its TTL");
    }

    // Each coroutine of the workers left records on the observer when its last call returned (NAME:finished).
    // Once the longest lease and the key margin have passed since the latest (and the node timeout, for a clean-up
    // still on its way), nothing is left on any node. (The workers exit later: a closed client's timers linger.)
    const auto finishing = static_cast<std::size_t>((workers.size() - 1) * worker_coroutines);
    BOOST_REQUIRE_MESSAGE(redlock::test::wait_until(
                              [&] {
                                  return observer.cli({"ZCARD", name + ":finished"}) == std::to_string(finishing);
                              },
                              duration + 30s),
                          "the workers did not all finish: " << outputs(workers));
    const auto last_call = lines(observer.cli({"ZRANGE", name + ":finished", "-1", "-1", "WITHSCORES"})).at(1);
    const auto empty_at = std::stoll(last_call) + (worker_ttl + key_margin + worker_node_timeout).count();
    std::this_thread::sleep_for(std::chrono::milliseconds(std::max(0LL, empty_at - wall_ms())));
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto left = nodes[i].cli({"KEYS", "*"});
        BOOST_TEST(left.empty(), "node " << i << " keeps " << left);
    }

    long grants = 0, overlaps = 0, most = 0;
    for (std::size_t i = 1; i < workers.size(); ++i) {
        const auto status = workers[i]->wait(30s);
        BOOST_REQUIRE_MESSAGE(status >= 0, "worker " << i << " hangs");
        const auto log = workers[i]->output();
        BOOST_TEST(status == 0, log);
        grants += std::max(0L, workers[i]->field("grants"));
        overlaps += workers[i]->field("overlaps");
        most = std::max(most, workers[i]->field("most"));
        BOOST_TEST_MESSAGE("worker " << i << ": " << log);
    }
    BOOST_TEST(overlaps == 0);
    BOOST_TEST(most <= s.limit);
    BOOST_TEST(grants > 20);  // the run took permits, through the faults

    // Grants inside a fault exactly when the quorum does without the faulted node.
    if (s.nodes > 1) {
        const auto in_pause = grants_within(observer, paused), in_kill = grants_within(observer, down);
        BOOST_TEST_MESSAGE(s << ": " << in_pause << " grants while a node was paused, " << in_kill
                             << " while one was down");
        if (s.failures_tolerated() > 0) {
            BOOST_TEST(in_kill > 0);
            // Per second, a silent node costs at most 4 times what a dead one does. (A client's coroutines that
            // won back their own nodes after every split, in step, left a few grants in 2 s, against ~100 a second
            // with the node dead.)
            const auto pause_s = static_cast<double>(paused.to - paused.from) / 1000.0;
            const auto down_s = static_cast<double>(down.to - down.from) / 1000.0;
            BOOST_TEST(
                static_cast<double>(in_pause) / pause_s >= static_cast<double>(in_kill) / down_s / 4,
                in_pause << " grants in " << pause_s << " s paused, " << in_kill << " in " << down_s << " s down");
        } else {
            BOOST_TEST(in_pause == 0);
            BOOST_TEST(in_kill == 0);
        }
    }

    // And the semaphore works as new: what is free is the limit.
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), redlock::test::configs(nodes));
    redlock::test::run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await c.async_connect(asio::use_awaitable);
        redlock::semaphore sem(c, name, s.limit, {.ttl = 5000ms, .wait = 10'000ms, .fair = s.fair});
        auto [ec, p] = co_await sem.async_acquire(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        auto [e1, seen] = co_await sem.async_inspect(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        for (const auto& v : seen.nodes) {
            BOOST_TEST(v.held() == 1);
            BOOST_TEST(v.held() + v.available().value_or(-100) == s.limit);
        }
        co_await p.async_release(asio::use_awaitable);
    });
}
