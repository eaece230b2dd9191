// Locks on a real Sentinel deployment (a master, two replicas, three Sentinels; down-after 1 s, failover-timeout 3 s)
// through its faults. `redlock exec` processes with --replica-acks 1 do a read-modify-write of a counter kept on a
// separate server while the master is SIGKILLed: the count must come out exact. A lock is granted at the new master
// soon after a failover and a waiter resumes at the release made there (its release channel subscribed again at the
// new master). A request in flight at the old master when the Sentinels switch fails within its deadline. A stale
// Sentinel that names a demoted server is refused by ROLE. A node whose URL names one Sentinel follows a failover
// through the Sentinels it learnt from it. One deployment serves the file: a test that kills the master restores it
// as a replica before it ends.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_sentinel.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace redlock::test;
using redlock::error;
using redlock::error_code;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

sentinel_group& the_group()
{
    static sentinel_group group;
    return group;
}

// The port of a redis-cli SENTINEL GET-MASTER-ADDR-BY-NAME reply ("host\nport"), or 0.
std::uint16_t named_port(const std::string& reply)
{
    const auto newline = reply.find('\n');
    return newline == std::string::npos ? 0 : static_cast<std::uint16_t>(std::stoi(reply.substr(newline + 1)));
}

long long ms_between(steady::time_point from, steady::time_point to)
{
    return std::chrono::duration_cast<ms>(to - from).count();
}

// Starts a data node that a test killed again, as a replica, when the test ends (however it ends): the next test
// finds the deployment whole.
class restore_after {
public:
    explicit restore_after(sentinel_group& group) : group_(group) {}
    ~restore_after()
    {
        if (node == nullptr) return;
        try {
            group_.restore(*node);
        } catch (const std::exception& e) {
            BOOST_TEST_MESSAGE("restoring the killed node failed: " << e.what());
        }
    }
    redis_node* node = nullptr;

private:
    sentinel_group& group_;
};

// Runs `work` on a thread of its own (fixture calls block on redis-cli) while the caller's io_context keeps its
// clients going; `done` turns true when it returned.
class side_thread {
public:
    template <class F>
    explicit side_thread(F work)
        : thread_([this, work = std::move(work)]() mutable {
              try {
                  work();
              } catch (const std::exception& e) {
                  failure_ = e.what();
              }
              done_ = true;
          })
    {}
    ~side_thread()
    {
        if (thread_.joinable()) thread_.join();
    }
    bool done() const { return done_; }
    // Joins; the work's exception text, if it threw.
    std::string join()
    {
        if (thread_.joinable()) thread_.join();
        return failure_;
    }

private:
    std::atomic<bool> done_{false};
    std::string failure_;
    std::thread thread_;
};

}  // namespace

// The worker processes increment one counter, each `increments` times under the lock, with --replica-acks 1: a
// grant is on a replica before the command runs, so the replica promoted after the kill holds the lock and nobody
// else gets it while the holder works. Each grant's body logs when it started (ns since the epoch).
BOOST_AUTO_TEST_CASE(a_counter_stays_exact_through_a_killed_master_with_one_replica_ack)
{
    constexpr int workers = 4;
    constexpr int increments = 8;
    constexpr int kill_at = 8;  // increments done when the master is killed
    auto& group = the_group();
    restore_after restore(group);
    redis_node counters;
    const auto dir = make_temp_dir("redlock-sentinel-counter-");
    const std::unique_ptr<const std::string, void (*)(const std::string*)> remove_dir(&dir, [](const std::string* d) {
        std::error_code ignored;
        std::filesystem::remove_all(*d, ignored);
    });
    const std::string rc = cli_program() + " -p " + std::to_string(counters.port());
    counters.cli({"SET", "counter", "0"});
    const std::string body = "set -e; date +%s%N >> " + dir + "/grants; v=$(" + rc + " GET counter); sleep 0.005; " +
                             rc + " SET counter $((v + 1)) >/dev/null";
    const std::string exec = "'" + std::string(REDLOCK_CLI_PATH) + "' exec --nodes '" + group.url() +
                             "' --key sentinel:counter --ttl 5s --wait 60s --replica-acks 1 -q";
    const std::string script =
        "for i in $(seq " + std::to_string(increments) + "); do " + exec + " -- sh -c '" + body + "' || exit $?; done";
    std::vector<pid_t> pids;
    for (int w = 0; w < workers; ++w)
        pids.push_back(spawn_process({.args = {"/bin/sh", "-c", script},
                                      .env = environment_with({}),
                                      .output_file = dir + "/worker" + std::to_string(w)}));
    // Mid-run, whatever the machine's speed.
    const auto started = steady::now();
    while (std::stoi("0" + counters.cli({"GET", "counter"})) < kill_at && steady::now() - started < 30s)
        std::this_thread::sleep_for(10ms);
    auto& killed = group.master();
    killed.kill();
    restore.node = &killed;
    const auto killed_at = std::chrono::system_clock::now();
    const auto killed_steady = steady::now();
    group.await_failover(killed.port(), killed_steady);
    const auto failover = group.failover_time();
    // Settled: the master the Sentinels name has every live replica acknowledging, for good. Later than the switch
    // when the Sentinels fail over a second time (a Sentinel that took the new master for down right after the
    // switch, see sentinel_group::settle(): a second replica promoted, the first left a master without replicas
    // until the Sentinels make it one, some 10 s later); grants with acks wait for that. The moment the group got
    // ready with its last master, not when await_failover() returned (it watches the group a moment longer).
    const auto settled = group.settle_time();
    if (settled > 8s) BOOST_TEST_MESSAGE("the deployment settled late:" << group.log_tails(40));

    const auto deadline = steady::now() + 90s;
    for (int w = 0; w < workers; ++w) {
        int status = 0;
        const auto left = std::chrono::duration_cast<ms>(deadline - steady::now());
        const bool exited = wait_for_exit(pids[w], std::max(left, 1ms), &status);
        if (!exited) stop_process(pids[w], 100ms);
        BOOST_TEST((exited && exit_status(status) == 0),
                   "worker " << w << ": " << file_contents(dir + "/worker" + std::to_string(w)));
    }
    BOOST_TEST(counters.cli({"GET", "counter"}) == std::to_string(workers * increments));

    // The first grant after the kill: the failover, then the holder's TTL if the kill caught it holding (its
    // release could not reach a master; the promoted replica keeps its key until it expires).
    std::vector<long long> grants;
    std::istringstream lines(file_contents(dir + "/grants"));
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) grants.push_back(std::stoll(line));
    const auto kill_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(killed_at.time_since_epoch()).count();
    std::optional<long long> next;
    for (auto g : grants)
        if (g > kill_ns && (!next || g < *next)) next = g;
    BOOST_TEST_REQUIRE(next.has_value(), "no grant after the kill");
    const auto next_ms = (*next - kill_ns) / 1'000'000;
    BOOST_TEST_MESSAGE("killed master under load: Sentinels switched after "
                       << failover.count() << " ms, settled after " << settled.count() << " ms, next grant after "
                       << next_ms << " ms");
    // The switch, then the TTL of a lock held at the kill (its release could not reach a master), or the settling;
    // + 1 s.
    BOOST_TEST(next_ms < std::max<long long>(failover.count() + 5000, settled.count()) + 1000);
}

// After a kill, a lock is granted at the new master within a second of the Sentinels' switch; a waiter behind a
// holder (acks: the promoted replica keeps the holder's key) sleeps through the failover and resumes at the holder's
// release there, by its message: the node subscribed its channel again at the new master. A waiter that missed the
// message would sleep until the holder's TTL (30 s).
BOOST_AUTO_TEST_CASE(a_lock_is_granted_soon_after_a_failover_and_a_waiter_resumes_at_the_release_made_there)
{
    auto& group = the_group();
    asio::io_context ctx;
    redlock::client holder(ctx.get_executor(), {sentinel_test_config(group.url())});
    redlock::client waiter(ctx.get_executor(), {sentinel_test_config(group.url())});
    redlock::client prober(ctx.get_executor(), {sentinel_test_config(group.url())});
    const redlock::lock_options held_long{.ttl = 30'000ms, .wait = 40'000ms, .replica_acks = 1};
    std::optional<steady::time_point> resumed;
    restore_after restore(group);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex m(holder, "sentinel:handoff", held_long);
        auto lease = co_await m.async_lock(asio::use_awaitable);
        asio::co_spawn(
            ctx,
            [&]() -> asio::awaitable<void> {
                redlock::mutex w(waiter, "sentinel:handoff", held_long);
                auto got = co_await w.async_lock(asio::use_awaitable);
                resumed = steady::now();
                co_await got.async_release(asio::use_awaitable);
            },
            asio::detached);
        co_await sleep_for(300ms);  // the waiter is subscribed and asleep
        auto& killed = group.master();
        killed.kill();
        restore.node = &killed;
        const auto killed_at = steady::now();
        side_thread kill([&] { group.await_failover(killed.port(), killed_at); });
        // Try-locks of a free key every 20 ms: the first success is the first grant at the new master.
        redlock::mutex probe(prober, "sentinel:probe", {.ttl = 1000ms, .wait = 0ms});
        std::optional<steady::time_point> granted;
        while (!granted && steady::now() - killed_at < 20s) {
            auto [ec, l] = co_await probe.async_lock(use_tuple);
            if (!ec) {
                granted = steady::now();
                co_await l.async_release(asio::use_awaitable);
            } else {
                co_await sleep_for(20ms);
            }
        }
        BOOST_TEST_REQUIRE(granted.has_value());
        // Released once the deployment settled (the waiter's grant needs a replica's acknowledgement; see the test
        // above for a second failover that delays it).
        while (!kill.done()) co_await sleep_for(20ms);
        BOOST_TEST_REQUIRE(kill.join().empty());
        const auto settled = steady::now();
        const auto failover = group.failover_time();
        BOOST_TEST_MESSAGE("killed master: Sentinels switched after "
                           << failover.count() << " ms, settled after " << ms_between(killed_at, settled)
                           << " ms, next grant after " << ms_between(killed_at, *granted) << " ms");
        BOOST_TEST(ms_between(killed_at, *granted) < failover.count() + 1000);
        BOOST_TEST(!resumed.has_value());  // the holder's key survived at the promoted replica
        BOOST_TEST(group.master().cli({"GET", "sentinel:handoff"}) == lease.token());
        const auto released = steady::now();
        auto [release_ec] = co_await lease.async_release(use_tuple);
        BOOST_TEST(!release_ec, release_ec.message());
        while (!resumed && steady::now() - released < 10s) co_await sleep_for(5ms);
        BOOST_TEST_REQUIRE(resumed.has_value());
        BOOST_TEST_MESSAGE("the waiter resumed " << ms_between(released, *resumed) << " ms after the release");
        BOOST_TEST(ms_between(released, *resumed) < 1000);
    });
}

// The old master stalls a write (CLIENT PAUSE WRITE) while the Sentinels fail over to a replica: the node leaves it
// at +switch-master, so the write fails with connection_lost (it may still run there) well before its deadline,
// instead of waiting for it; the next request goes to the new master.
BOOST_AUTO_TEST_CASE(a_request_in_flight_at_the_old_master_fails_within_its_deadline_when_the_sentinels_switch)
{
    auto& group = the_group();
    asio::io_context ctx;
    auto config = sentinel_test_config(group.url());
    config.health_check_timeout = 20s;  // only the switch, or the deadline, may end the stalled request
    redlock::redis store(ctx.get_executor(), config);
    auto& old = group.master();
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await store.async_connect(asio::use_awaitable);
        old.cli({"CLIENT", "PAUSE", "8000", "WRITE"});
        redlock::request stalled;
        stalled.push("SET", "sentinel:stalled", "old");
        stalled.set_timeout(6000ms);
        redlock::response resp;
        const auto sent = steady::now();
        side_thread failover([&] { group.failover(); });
        auto [ec] = co_await store.async_exec(stalled, resp, use_tuple);
        const auto took = ms_between(sent, steady::now());
        BOOST_TEST_MESSAGE("the stalled request failed after " << took << " ms: " << ec.message());
        BOOST_TEST(ec == error::connection_lost, ec.message());  // the switch, not the 6 s deadline (timeout)
        BOOST_TEST(took < 6000);
        while (!failover.done()) co_await sleep_for(20ms);
        BOOST_TEST_REQUIRE(failover.join().empty());
        BOOST_TEST(group.master().port() != old.port());
        redlock::request next;
        next.push("SET", "sentinel:after-switch", "new");
        auto [next_ec] = co_await store.async_exec(next, resp, use_tuple);
        BOOST_TEST(!next_ec, next_ec.message());
    });
    old.cli({"CLIENT", "UNPAUSE"});  // a replica now, which a later failover may promote
    BOOST_TEST(group.master().cli({"GET", "sentinel:after-switch"}) == "new");
}

// The master is demoted behind the Sentinels' back (REPLICAOF a dead port): a write is refused with READONLY, and the
// node, rather than fail it with the refusal, leaves that server, asks the Sentinels again, refuses their answer by
// ROLE (slave) and holds the write until its deadline. Promoted again (REPLICAOF NO ONE), it is found and used.
BOOST_AUTO_TEST_CASE(a_master_that_answers_readonly_is_left_and_taken_back_once_role_says_master)
{
    auto& group = the_group();
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), sentinel_test_config(group.url()));
    auto& master = group.master();
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await store.async_connect(asio::use_awaitable);
        const auto refused_before = master.command_stat("set", "rejected_calls");
        master.cli({"REPLICAOF", "127.0.0.1", std::to_string(pick_free_port())});
        redlock::request write;
        write.push("SET", "sentinel:demoted", "x");
        write.set_timeout(800ms);
        redlock::response resp;
        const auto sent = steady::now();
        auto [ec] = co_await store.async_exec(write, resp, use_tuple);
        BOOST_TEST(ec == error::timeout, ec.message());  // not server_error: READONLY was no answer to give
        BOOST_TEST(ms_between(sent, steady::now()) < 1500);
        // Refused once (READONLY), never sent there again.
        BOOST_TEST(master.command_stat("set", "rejected_calls") - refused_before == 1);
        BOOST_TEST(master.command_stat("role") >= 1);
        master.cli({"REPLICAOF", "NO", "ONE"});
        write.set_timeout(3000ms);
        auto [again] = co_await store.async_exec(write, resp, use_tuple);
        BOOST_TEST(!again, again.message());
    });
    BOOST_TEST(master.cli({"GET", "sentinel:demoted"}) == "x");
    group.wait_ready();
}

// A Sentinel whose view is stale names a server that is no master now (here one that monitors a replica of its own,
// which no other Sentinel knows, so it never learns better). With another Sentinel in the URL the node refuses that
// answer by ROLE and reaches the master through the other; with the stale one alone it does not connect, and sends
// the replica nothing but ROLE.
BOOST_AUTO_TEST_CASE(a_stale_sentinel_naming_a_demoted_server_is_refused_by_role)
{
    auto& group = the_group();
    node_options demoted_options;
    demoted_options.extra_args = {"--replicaof", "127.0.0.1", std::to_string(pick_free_port())};
    redis_node demoted(demoted_options);
    sentinel_process stale(pick_free_port(), {"sentinel monitor " + group.master_name() + " 127.0.0.1 " +
                                              std::to_string(demoted.port()) + " 2"});
    stale.wait_ready();
    BOOST_TEST_REQUIRE(named_port(stale.cli({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", group.master_name()})) ==
                       demoted.port());
    asio::io_context ctx;
    const std::string stale_url = "redis+sentinel://" + stale.address() + "/" + group.master_name();
    redlock::redis both(ctx.get_executor(), sentinel_test_config(stale_url + "?seed=" + group.sentinel(1).address()));
    redlock::redis alone(ctx.get_executor(), sentinel_test_config(stale_url));
    const auto master_port = std::to_string(group.master().port());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        auto [ec] = co_await both.async_connect(diag, use_tuple);
        BOOST_TEST(!ec, diag.message());
        redlock::request where;
        where.push("INFO", "server");
        redlock::response resp;
        auto [info_ec] = co_await both.async_exec(where, resp, use_tuple);
        BOOST_TEST_REQUIRE(!info_ec, info_ec.message());
        BOOST_TEST(resp.front().text.find("tcp_port:" + master_port + "\r\n") != std::string::npos);

        const auto started = steady::now();
        auto [alone_ec] = co_await alone.async_connect(diag, use_tuple);
        BOOST_TEST(alone_ec == error::not_connected, alone_ec.message());
        BOOST_TEST(diag.message().find("is no master now (ROLE: slave)") != std::string::npos, diag.message());
        BOOST_TEST(ms_between(started, steady::now()) < 1500);  // within the connect timeout (1 s)
        redlock::request get;
        get.push("GET", "sentinel:anything");
        get.set_timeout(300ms);
        auto [get_ec] = co_await alone.async_exec(get, resp, use_tuple);
        BOOST_TEST(get_ec == error::timeout, get_ec.message());
    });
    BOOST_TEST(demoted.command_stat("role") >= 2);  // each node asked it, and was refused
    BOOST_TEST(demoted.command_stat("get") == 0);   // a replica serves reads: a node without ROLE would read there
}

// The URL names one Sentinel; the node learns the others from it (SENTINEL SENTINELS). That Sentinel dies, then the
// others fail the master over: the node hears of it through a learnt Sentinel and writes to the new master.
BOOST_AUTO_TEST_CASE(a_node_follows_a_failover_through_the_sentinels_learnt_from_its_only_seed)
{
    auto& group = the_group();
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), sentinel_test_config(group.url_of(0)));
    auto& old = group.master();
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await store.async_connect(asio::use_awaitable);
        group.sentinel(0).kill();
        side_thread failover([&] { group.failover(); });
        while (!failover.done()) co_await sleep_for(20ms);
        BOOST_TEST_REQUIRE(failover.join().empty());
        BOOST_TEST_REQUIRE(group.master().port() != old.port());
        redlock::request set;
        set.push("SET", "sentinel:learnt", "yes");
        set.set_timeout(2000ms);
        redlock::response resp;
        auto [ec] = co_await store.async_exec(set, resp, use_tuple);
        BOOST_TEST(!ec, ec.message());
    });
    BOOST_TEST(group.master().cli({"GET", "sentinel:learnt"}) == "yes");
    group.sentinel(0).restart();
    group.wait_ready();
}
