// Every primitive on a real Sentinel deployment (a master, two replicas, three Sentinels) through a
// redis+sentinel:// node: each test checks what the primitive stored on the master the Sentinels name, so a node
// that talked to another server (a replica, the first seed itself) fails here. Then the CLI with a sentinel URL in
// --nodes and in $REDLOCK_NODES (exec with --replica-acks 1, status, throttle), and the connect errors of a wrong URL.
// One deployment serves the whole file, never failed over: the tests use keys of their own.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_sentinel.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::test::run_coro;
using redlock::test::sentinel_group;
using redlock::test::sentinel_test_config;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

sentinel_group& the_group()
{
    static sentinel_group group;
    return group;
}

asio::awaitable<bool> soon(std::function<bool()> pred, std::chrono::milliseconds limit)
{
    const auto deadline = steady::now() + limit;
    while (!pred()) {
        if (steady::now() >= deadline) co_return false;
        co_await sleep_for(5ms);
    }
    co_return true;
}

// An io_context with a client (locks, semaphores) and a redis (limiter, cache store) over the Sentinel node.
struct sentinel_rig {
    sentinel_group& group = the_group();
    asio::io_context ctx;
    redlock::client locks{ctx.get_executor(), {sentinel_test_config(group.url())}};
    redlock::redis store{ctx.get_executor(), sentinel_test_config(group.url())};

    // What the master stores, as redis-cli sees it there.
    std::string on_master(std::vector<std::string> command) { return group.master().cli(std::move(command)); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_fenced_lock_is_held_on_the_master_and_its_token_grows)
{
    sentinel_rig rig;
    const std::string key = "sentinel:fenced";
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex m(rig.locks, key, {.ttl = 5000ms, .fencing = true});
        std::uint64_t last = 0;
        for (int round = 0; round < 2; ++round) {
            auto lease = co_await m.async_lock(asio::use_awaitable);
            BOOST_TEST(rig.on_master({"GET", key}) == lease.token());
            BOOST_TEST(rig.on_master({"GET", redlock::fence_counter_key(key)}) ==
                       std::to_string(lease.fencing_token()));
            BOOST_TEST(lease.fencing_token() > last);
            last = lease.fencing_token();
            co_await lease.async_release(asio::use_awaitable);
            BOOST_TEST(rig.on_master({"EXISTS", key}) == "0");
        }
        // The resource on the same deployment: a newer token writes, an older one is refused.
        redlock::fenced_write newer("{acct:1}:guard", 9);
        newer.command("SET", "{acct:1}:balance", {"100"});
        auto [ec1, at1] = co_await redlock::async_fenced_write(rig.store, newer, use_tuple);
        BOOST_TEST(!ec1, ec1.message());
        redlock::fenced_write older("{acct:1}:guard", 8);
        older.command("SET", "{acct:1}:balance", {"1"});
        auto [ec2, at2] = co_await redlock::async_fenced_write(rig.store, older, use_tuple);
        BOOST_TEST(ec2 == error::stale_token, ec2.message());
        BOOST_TEST(at2 == 9u);
    });
    BOOST_TEST(rig.on_master({"GET", "{acct:1}:balance"}) == "100");
}

BOOST_AUTO_TEST_CASE(the_node_reports_its_masters_server)
{
    // What the feature gates read (SET NX GET, sharded pub/sub): known once connected, as the master's HELLO said.
    sentinel_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> { co_await rig.locks.async_connect(asio::use_awaitable); });
    const auto stats = rig.locks.stats();
    BOOST_TEST_REQUIRE(stats.nodes.size() == 1u);
    const auto master = redlock::test::server_of_info(rig.on_master({"INFO", "server"}));
    BOOST_TEST((stats.nodes[0].server == master), redlock::to_string(stats.nodes[0].server));
    BOOST_TEST(stats.nodes[0].server.known());
}

BOOST_AUTO_TEST_CASE(the_watchdog_extends_several_leases_in_one_request)
{
    // One master: the node takes requests whose keys span slots, so the watchdog's batched extension runs.
    sentinel_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex a(rig.locks, "sentinel:kept:a", {.ttl = 600ms, .watchdog = true});
        redlock::mutex b(rig.locks, "sentinel:kept:b", {.ttl = 600ms, .watchdog = true});
        auto la = co_await a.async_lock(asio::use_awaitable);
        auto lb = co_await b.async_lock(asio::use_awaitable);
        co_await sleep_for(1500ms);
        BOOST_TEST(!la.lost());
        BOOST_TEST(!lb.lost());
        BOOST_TEST(rig.on_master({"GET", "sentinel:kept:b"}) == lb.token());
        co_await la.async_release(asio::use_awaitable);
        co_await lb.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(a_fair_lock_serves_its_waiters_in_arrival_order_woken_by_the_release)
{
    sentinel_rig rig;
    const std::string key = "sentinel:fair";
    std::vector<int> order;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        // Long retries: a waiter that misses the release message waits seconds, which the bound below catches.
        const redlock::lock_options fair{.ttl = 10'000ms, .wait = 20'000ms, .fair = true};
        redlock::mutex m(rig.locks, key, fair);
        auto held = co_await m.async_lock(asio::use_awaitable);
        auto waiter = [&](int id) -> asio::awaitable<void> {
            auto lease = co_await m.async_lock(asio::use_awaitable);
            order.push_back(id);
            co_await sleep_for(30ms);
            co_await lease.async_release(asio::use_awaitable);
        };
        for (int id = 1; id <= 3; ++id) {
            asio::co_spawn(rig.ctx, waiter(id), asio::detached);
            co_await sleep_for(100ms);  // queued in this order
        }
        BOOST_TEST(rig.on_master({"ZCARD", redlock::aux_name(key, "queue")}) == "3");
        const auto released = steady::now();
        co_await held.async_release(asio::use_awaitable);
        BOOST_TEST(co_await soon([&] { return order.size() == 3; }, 5000ms));
        BOOST_TEST((steady::now() - released < 2000ms));
    });
    BOOST_TEST(order == (std::vector<int>{1, 2, 3}), "order");
}

BOOST_AUTO_TEST_CASE(a_reentrant_owner_holds_twice_and_frees_on_its_last_release)
{
    sentinel_rig rig;
    const std::string key = "sentinel:reentrant";
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex m = redlock::mutex(rig.locks, key, {.ttl = 5000ms, .fencing = true}).owned_by("worker-1");
        auto outer = co_await m.async_lock(asio::use_awaitable);
        auto inner = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(inner.fencing_token() == outer.fencing_token());
        co_await inner.async_release(asio::use_awaitable);
        BOOST_TEST(rig.on_master({"EXISTS", key}) == "1");
        co_await outer.async_release(asio::use_awaitable);
        BOOST_TEST(rig.on_master({"EXISTS", key}) == "0");
    });
}

BOOST_AUTO_TEST_CASE(counting_and_fair_semaphores_hand_out_their_limit_and_no_more)
{
    sentinel_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        for (const bool fair : {false, true}) {
            const std::string name = fair ? "sentinel:fair-pool" : "sentinel:pool";
            redlock::semaphore pool(rig.locks, name, 3, {.ttl = 5000ms, .wait = 300ms, .fair = fair});
            auto two = co_await pool.async_acquire(2, asio::use_awaitable);
            auto one = co_await pool.async_acquire(1, asio::use_awaitable);
            BOOST_TEST(rig.on_master({"HGET", redlock::aux_name(name, "units"), "held"}) == "3",
                       (fair ? "fair" : "counting"));
            auto [ec, none] = co_await pool.async_acquire(1, use_tuple);
            BOOST_TEST(ec == redlock::condition::not_acquired, (fair ? "fair: " : "") << ec.message());
            co_await two.async_release(asio::use_awaitable);
            auto again = co_await pool.async_acquire(2, asio::use_awaitable);
            co_await again.async_release(asio::use_awaitable);
            co_await one.async_release(asio::use_awaitable);
        }
    });
}

BOOST_AUTO_TEST_CASE(a_rate_limiter_admits_its_burst_then_limits)
{
    sentinel_rig rig;
    const std::string key = "sentinel:rate";
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        redlock::rate_limiter limiter(rig.store, key, {.rate = 1, .period = 60'000ms, .burst = 2});
        int allowed = 0;
        for (int i = 0; i < 5; ++i) {
            auto d = co_await limiter.async_try_acquire(1, asio::use_awaitable);
            allowed += d.result == redlock::rate_decision::outcome::allowed ? 1 : 0;
        }
        BOOST_TEST(allowed == 3);  // burst + 1
    });
    BOOST_TEST(rig.on_master({"EXISTS", key}) == "1");
}

BOOST_AUTO_TEST_CASE(a_cache_guard_with_a_bloom_filter_loads_once)
{
    sentinel_rig rig;
    const std::string key = "sentinel:product:1";
    const std::optional<std::string> loaded("a value");
    auto loads = std::make_shared<int>(0);
    const redlock::cache_loader loader = [loads, loaded]() -> asio::awaitable<std::optional<std::string>> {
        ++*loads;
        co_return loaded;
    };
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        redlock::bloom_filter known(rig.store, "sentinel:known", 1000, 0.01);
        std::vector<std::string> items{key};
        co_await known.async_add(items, asio::use_awaitable);
        redlock::cache_guard guard(rig.locks, rig.store, known, {.ttl = 30'000ms});
        for (int i = 0; i < 3; ++i) {
            auto value = co_await guard.async_get_or_load(key, loader, asio::use_awaitable);
            BOOST_TEST((value == loaded));
        }
        auto absent = co_await guard.async_get_or_load("sentinel:never", loader, asio::use_awaitable);
        BOOST_TEST(!absent.has_value());
    });
    BOOST_TEST(*loads == 1);
    BOOST_TEST(rig.on_master({"EXISTS", key}) == "1");
}

BOOST_AUTO_TEST_CASE(the_cli_runs_exec_with_a_sentinel_url_in_nodes_and_in_the_environment)
{
    auto& group = the_group();
    const std::string cli = REDLOCK_CLI_PATH;
    const auto& master = group.master();
    const std::string check =
        redlock::test::cli_program() + " -p " + std::to_string(master.port()) + " GET sentinel:cli";
    const auto exec = redlock::test::run_command({cli, "exec", "--nodes", group.url(), "--key", "sentinel:cli", "--ttl",
                                                  "5s", "--replica-acks", "1", "--", "sh", "-c", check},
                                                 30s);
    BOOST_TEST(exec.exit_code == 0, exec.err);
    BOOST_TEST(exec.out.size() > 20u, exec.out);  // the token, read at the master while the command ran

    // $REDLOCK_NODES, with one Sentinel only (the others are learnt from it).
    const auto env = redlock::test::run_command({"/usr/bin/env", "REDLOCK_NODES=" + group.url_of(1), cli, "exec",
                                                 "--key", "sentinel:cli", "--", "echo", "inside"},
                                                30s);
    BOOST_TEST(env.exit_code == 0, env.err);
    BOOST_TEST(env.out == "inside\n");

    // status and throttle take the same URL as one node.
    const auto status =
        redlock::test::run_command({cli, "status", "--nodes", group.url(), "--key", "sentinel:cli"}, 30s);
    BOOST_TEST(status.exit_code == 0, status.err);
    BOOST_TEST(status.out.find(group.url_of(0)) != std::string::npos, status.out);
    const auto throttle = redlock::test::run_command(
        {cli, "throttle", "--nodes", group.url(), "--key", "sentinel:cli-rate", "--rate", "100/s", "--", "true"}, 30s);
    BOOST_TEST(throttle.exit_code == 0, throttle.err);
}

BOOST_AUTO_TEST_CASE(a_seed_that_is_no_sentinel_or_an_unknown_master_fails_the_connect_with_a_clear_error)
{
    auto& group = the_group();
    asio::io_context ctx;
    const auto data_port = std::to_string(group.master().port());
    // A data node where a Sentinel should be; a Sentinel that monitors no master of that name.
    redlock::redis not_sentinel(ctx.get_executor(), sentinel_test_config("redis+sentinel://127.0.0.1:" + data_port +
                                                                         "/" + group.master_name()));
    redlock::redis right(ctx.get_executor(), sentinel_test_config(group.url() + "&db=0"));
    redlock::redis unknown_name(
        ctx.get_executor(), sentinel_test_config("redis+sentinel://" + group.sentinel(0).address() + "/nosuchmaster"));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        const auto started = steady::now();
        auto [ec] = co_await not_sentinel.async_connect(diag, use_tuple);
        BOOST_TEST(ec == error::invalid_argument, ec.message());
        BOOST_TEST(diag.message().find("127.0.0.1:" + data_port + " is not a Redis Sentinel") != std::string::npos,
                   diag.message());
        // A request waiting for the first master fails the same way, at once.
        redlock::request req;
        req.push("PING");
        redlock::response resp;
        auto [exec_ec] = co_await not_sentinel.async_exec(req, resp, use_tuple);
        BOOST_TEST(exec_ec == error::invalid_argument, exec_ec.message());
        auto [again_ec] = co_await not_sentinel.async_exec(req, resp, use_tuple);
        BOOST_TEST(again_ec == error::invalid_argument, again_ec.message());

        auto [ec2] = co_await unknown_name.async_connect(diag, use_tuple);
        BOOST_TEST(ec2 == error::invalid_argument, ec2.message());
        BOOST_TEST(diag.message().find("knows no master named 'nosuchmaster'") != std::string::npos, diag.message());
        BOOST_TEST((steady::now() - started < 2000ms));

        auto [ec3] = co_await right.async_connect(diag, use_tuple);  // the right URL: fine
        BOOST_TEST(!ec3, diag.message());
    });
}

BOOST_AUTO_TEST_CASE(a_node_reaches_the_master_through_a_later_seed_when_the_first_sentinel_is_down)
{
    auto& group = the_group();
    const auto dead = redlock::test::pick_free_port();
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(),
                         sentinel_test_config("redis+sentinel://127.0.0.1:" + std::to_string(dead) + "/" +
                                              group.master_name() + "?seed=" + group.sentinel(2).address()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        auto [ec] = co_await store.async_connect(diag, use_tuple);
        BOOST_TEST(!ec, diag.message());
        redlock::request req;
        req.push("SET", "sentinel:seeded", "yes");
        redlock::response resp;
        auto [exec_ec] = co_await store.async_exec(req, resp, use_tuple);
        BOOST_TEST(!exec_ec, exec_ec.message());
    });
    BOOST_TEST(group.master().cli({"GET", "sentinel:seeded"}) == "yes");
}

// Client tracking through the Sentinel node: the key deleted on the master of its slot loses the lease at once (its
// first extension is 10 s away), and news from every master reaches the leases.
BOOST_AUTO_TEST_CASE(a_lease_whose_key_is_deleted_is_lost_at_once)
{
    sentinel_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        for (const std::string key : {"sentinel:tracked:a", "sentinel:tracked:b", "sentinel:tracked:c"}) {
            redlock::mutex m(rig.locks, key, {.ttl = 30'000ms, .watchdog = true});
            auto lease = co_await m.async_lock(asio::use_awaitable);
            const auto deleted = std::chrono::steady_clock::now();
            rig.on_master({"DEL", key});
            auto [ec] = co_await lease.async_wait_lost(use_tuple);
            BOOST_TEST(ec == redlock::error::lost);
            BOOST_TEST((std::chrono::steady_clock::now() - deleted < 3000ms), key);
        }
    });
}
