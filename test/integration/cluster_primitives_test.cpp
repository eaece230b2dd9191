// Every primitive on a real Redis Cluster (3 masters, a replica each) through a redis+cluster:// node: each test
// checks what the primitive stored on the master of the key's shard, so a primitive whose keys left the slot
// (CROSSSLOT), or that worked only because a node took it elsewhere, fails here. One Cluster serves the whole
// file: the tests use keys of their own.
#include "common/key_slot.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/models/every_script.hpp>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_cluster.hpp>
#include <common/servers/redis_node.hpp>
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
using redlock::test::sharded_cluster;
using redlock::test::sleep_for;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

sharded_cluster& the_cluster()
{
    static sharded_cluster cluster;
    return cluster;
}

redlock::node_config cluster_config(const std::string& url)
{
    auto c = redlock::parse_url(url);
    c.reconnect_min_delay = 10ms;
    c.reconnect_max_delay = 200ms;
    return c;
}

asio::awaitable<bool> soon(std::function<bool()> pred, std::chrono::milliseconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= deadline) co_return false;
        co_await sleep_for(5ms);
    }
    co_return true;
}

// An io_context with a client (locks, semaphores) and a redis (limiter, cache store) over the Cluster.
struct cluster_rig {
    sharded_cluster& cluster = the_cluster();
    asio::io_context ctx;
    redlock::client locks{ctx.get_executor(), {cluster_config(cluster.url())}};
    redlock::redis store{ctx.get_executor(), cluster_config(cluster.url())};

    // What the master of `key`'s shard stores, as redis-cli sees it there.
    std::string on_master(const std::string& key, std::vector<std::string> command)
    {
        return cluster.master_of_slot(redlock::detail::key_slot(key)).cli(std::move(command));
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(fenced_locks_on_every_shard_and_a_fenced_write_beside_its_guard)
{
    cluster_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        std::uint64_t last = 0;
        for (std::size_t shard = 0; shard < rig.cluster.shards(); ++shard) {
            const auto key = rig.cluster.key_on_shard(shard, "fenced:");
            redlock::mutex m(rig.locks, key, {.ttl = 5000ms, .fencing = true});
            for (int round = 0; round < 2; ++round) {
                auto lease = co_await m.async_lock(asio::use_awaitable);
                BOOST_TEST(rig.on_master(key, {"GET", key}) == lease.token());
                // The fence counter lives beside the key, on the same master.
                BOOST_TEST(rig.on_master(key, {"GET", redlock::fence_counter_key(key)}) ==
                           std::to_string(lease.fencing_token()));
                BOOST_TEST(lease.fencing_token() > (round == 0 ? 0 : last));
                last = lease.fencing_token();
                co_await lease.async_release(asio::use_awaitable);
            }
        }
        // The resource on the Cluster: a newer token writes, an older one is refused.
        redlock::fenced_write newer("{acct:7}:guard", 9);
        newer.command("SET", "{acct:7}:balance", {"100"});
        auto [ec1, at1] = co_await redlock::async_fenced_write(rig.store, newer, use_tuple);
        BOOST_TEST(!ec1, ec1.message());
        redlock::fenced_write older("{acct:7}:guard", 8);
        older.command("SET", "{acct:7}:balance", {"1"});
        auto [ec2, at2] = co_await redlock::async_fenced_write(rig.store, older, use_tuple);
        BOOST_TEST(ec2 == error::stale_token, ec2.message());
        BOOST_TEST(at2 == 9u);
    });
    BOOST_TEST(rig.on_master("{acct:7}:balance", {"GET", "{acct:7}:balance"}) == "100");
}

BOOST_AUTO_TEST_CASE(several_keys_of_one_slot_lock_together_and_the_watchdog_extends_them_one_by_one)
{
    // A Cluster node takes no request spanning slots: the watchdog extends each lease alone. Two leases on two
    // shards outlive three TTLs.
    cluster_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex both(rig.locks, std::vector<std::string>{"{order:7}:a", "{order:7}:b"},
                            {.ttl = 600ms, .watchdog = true});
        redlock::mutex other(rig.locks, rig.cluster.key_on_shard(2, "kept:"), {.ttl = 600ms, .watchdog = true});
        auto a = co_await both.async_lock(asio::use_awaitable);
        auto b = co_await other.async_lock(asio::use_awaitable);
        co_await sleep_for(2000ms);
        BOOST_TEST(!a.lost());
        BOOST_TEST(!b.lost());
        BOOST_TEST(rig.on_master("{order:7}:b", {"GET", "{order:7}:b"}) == a.token());
        BOOST_TEST(rig.on_master(other.keys().front(), {"GET", other.keys().front()}) == b.token());
        co_await a.async_release(asio::use_awaitable);
        co_await b.async_release(asio::use_awaitable);
        BOOST_TEST(rig.on_master("{order:7}:a", {"EXISTS", "{order:7}:a", "{order:7}:b"}) == "0");
    });
}

BOOST_AUTO_TEST_CASE(a_fair_lock_serves_its_waiters_in_arrival_order_woken_by_the_release)
{
    cluster_rig rig;
    const auto key = rig.cluster.key_on_shard(1, "fair:");
    std::vector<int> order;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        // Long retries: a waiter that misses the release message waits seconds, which the bound below catches.
        const redlock::lock_options fair{.ttl = 10'000ms, .wait = 20'000ms, .fair = true};
        redlock::mutex m(rig.locks, key, fair);
        auto held = co_await m.async_lock(asio::use_awaitable);
        auto waiter = [&](int id) -> asio::awaitable<void> {
            auto lease = co_await m.async_lock(asio::use_awaitable);
            order.push_back(id);
            co_await sleep_for(50ms);
            co_await lease.async_release(asio::use_awaitable);
        };
        for (int id = 1; id <= 3; ++id) {
            asio::co_spawn(rig.ctx, waiter(id), asio::detached);
            co_await sleep_for(150ms);  // queued in this order
        }
        BOOST_TEST(rig.on_master(key, {"ZCARD", redlock::aux_name(key, "queue")}) == "3");
        const auto released = std::chrono::steady_clock::now();
        co_await held.async_release(asio::use_awaitable);
        BOOST_TEST(co_await soon([&] { return order.size() == 3; }, 5000ms));
        BOOST_TEST((std::chrono::steady_clock::now() - released < 3000ms));
    });
    BOOST_TEST(order == (std::vector<int>{1, 2, 3}), "order");
}

BOOST_AUTO_TEST_CASE(a_reentrant_owner_holds_twice_and_frees_on_its_last_release)
{
    cluster_rig rig;
    const auto key = rig.cluster.key_on_shard(0, "reentrant:");
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex m = redlock::mutex(rig.locks, key, {.ttl = 5000ms, .fencing = true}).owned_by("worker-1");
        auto outer = co_await m.async_lock(asio::use_awaitable);
        auto inner = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(inner.fencing_token() == outer.fencing_token());  // one hold's token, kept by the re-entry
        co_await inner.async_release(asio::use_awaitable);
        BOOST_TEST(rig.on_master(key, {"EXISTS", key}) == "1");
        co_await outer.async_release(asio::use_awaitable);
        BOOST_TEST(rig.on_master(key, {"EXISTS", key}) == "0");
    });
}

BOOST_AUTO_TEST_CASE(counting_and_fair_semaphores_hand_out_their_limit_and_no_more)
{
    cluster_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        for (const bool fair : {false, true}) {
            const auto name = rig.cluster.key_on_shard(fair ? 2 : 1, fair ? "fair-pool:" : "pool:");
            redlock::semaphore pool(rig.locks, name, 3, {.ttl = 5000ms, .wait = 300ms, .fair = fair});
            auto two = co_await pool.async_acquire(2, asio::use_awaitable);
            auto one = co_await pool.async_acquire(1, asio::use_awaitable);
            auto [ec, none] = co_await pool.async_acquire(1, use_tuple);
            BOOST_TEST(ec == redlock::condition::not_acquired, (fair ? "fair: " : "") << ec.message());
            co_await two.async_release(asio::use_awaitable);
            auto again = co_await pool.async_acquire(2, asio::use_awaitable);
            co_await again.async_release(asio::use_awaitable);
            co_await one.async_release(asio::use_awaitable);
        }
    });
}

BOOST_AUTO_TEST_CASE(a_rate_limiter_on_the_cluster_admits_its_burst_then_limits)
{
    cluster_rig rig;
    const auto key = rig.cluster.key_on_shard(2, "rate:");
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        redlock::rate_limiter limiter(rig.store, key, {.rate = 1, .period = 60'000ms, .burst = 2});
        int allowed = 0;
        for (int i = 0; i < 5; ++i) {
            auto d = co_await limiter.async_try_acquire(1, asio::use_awaitable);
            allowed += d.result == redlock::rate_decision::outcome::allowed ? 1 : 0;
        }
        BOOST_TEST(allowed == 3);  // burst + 1
    });
    BOOST_TEST(rig.on_master(key, {"EXISTS", key}) == "1");  // its state is on the key's master
}

BOOST_AUTO_TEST_CASE(a_cache_guard_with_a_bloom_filter_loads_once_on_a_cluster_store)
{
    cluster_rig rig;
    const auto key = rig.cluster.key_on_shard(0, "product:");
    const auto never = rig.cluster.key_on_shard(2, "never:");
    const std::optional<std::string> loaded("a value");
    auto loads = std::make_shared<int>(0);
    const redlock::cache_loader loader = [loads, loaded]() -> asio::awaitable<std::optional<std::string>> {
        ++*loads;
        co_return loaded;
    };
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        redlock::bloom_filter known(rig.store, rig.cluster.key_on_shard(1, "known:"), 1000, 0.01);
        std::vector<std::string> items{key};
        co_await known.async_add(items, asio::use_awaitable);
        redlock::cache_guard guard(rig.locks, rig.store, known, {.ttl = 30'000ms});
        for (int i = 0; i < 3; ++i) {
            auto value = co_await guard.async_get_or_load(key, loader, asio::use_awaitable);
            BOOST_TEST((value == loaded));
        }
        // A key the filter rules out never reaches the loader.
        auto absent = co_await guard.async_get_or_load(never, loader, asio::use_awaitable);
        BOOST_TEST(!absent.has_value());
    });
    BOOST_TEST(*loads == 1);
    BOOST_TEST(rig.on_master(key, {"EXISTS", key}) == "1");
}

// Every script the library calls, as the primitives build its request, runs on the Cluster: a script handed keys
// or a release channel of two slots fails there (CROSSSLOT), and one routed away from its keys' slot is redirected
// (MOVED, counted). Names on each shard, with and without a hash tag.
BOOST_AUTO_TEST_CASE(every_script_runs_on_the_master_of_its_keys_slot)
{
    cluster_rig rig;
    std::vector<std::string> names{"{script}:tagged", "x{y"};
    for (std::size_t shard = 0; shard < rig.cluster.shards(); ++shard)
        names.push_back(rig.cluster.key_on_shard(shard, "script:"));
    for (std::size_t shard = 0; shard < rig.cluster.shards(); ++shard)
        rig.cluster.master_of_shard(shard).cli({"CONFIG", "RESETSTAT"});
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        for (const auto& name : names) {
            const auto requests = redlock::test::every_script_request(name);
            for (std::size_t i = 0; i < requests.size(); ++i) {
                redlock::response resp;
                auto [ec] = co_await rig.store.async_exec(requests[i], resp, name, use_tuple);
                std::string replies;
                for (const auto& r : resp) replies += " " + redlock::resp::to_string(r);
                BOOST_TEST(!ec, name << ", request " << i << ": " << ec.message() << replies);
            }
        }
    });
    for (std::size_t shard = 0; shard < rig.cluster.shards(); ++shard) {
        const auto errors = rig.cluster.master_of_shard(shard).cli({"INFO", "errorstats"});
        BOOST_TEST(errors.find("MOVED") == std::string::npos, "shard " << shard << ": " << errors);
        BOOST_TEST(errors.find("ASK") == std::string::npos, "shard " << shard << ": " << errors);
    }
}

BOOST_AUTO_TEST_CASE(redlock_over_independent_deployments_counts_a_cluster_as_one_member)
{
    // A quorum of three members: this Cluster, another Cluster (masters only) and a standalone server.
    sharded_cluster second({.shards = 3, .replicas_per_shard = 0});
    redlock::test::redis_node standalone;
    cluster_rig rig;
    redlock::client three(rig.ctx.get_executor(), {cluster_config(rig.cluster.url()), cluster_config(second.url()),
                                                   redlock::parse_url(standalone.url())});
    const auto key = rig.cluster.key_on_shard(1, "redlock:");
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        // A node timeout long enough for the member still reading its new Cluster's map (50 ms by default: under
        // load the third SET timed out before it was sent, 2 runs in 11).
        redlock::mutex m(three, key, {.ttl = 5000ms, .node_timeout = 2000ms});
        auto lease = co_await m.async_lock(asio::use_awaitable);
        // Granted at a quorum of two: the third member's SET may still be on its way. Every member holds the
        // token once it lands.
        auto holders = [&] {
            return int{rig.on_master(key, {"GET", key}) == lease.token()} +
                   int{second.master_of_slot(redlock::detail::key_slot(key)).cli({"GET", key}) == lease.token()} +
                   int{standalone.cli({"GET", key}) == lease.token()};
        };
        BOOST_TEST(holders() >= 2);
        for (int i = 0; i < 300 && holders() < 3; ++i) co_await sleep_for(10ms);
        BOOST_TEST(holders() == 3,
                   "cluster: " << rig.on_master(key, {"GET", key}) << ", second: "
                               << second.master_of_slot(redlock::detail::key_slot(key)).cli({"GET", key})
                               << ", standalone: " << standalone.cli({"GET", key}) << ", token " << lease.token());
        co_await lease.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(the_cli_runs_exec_status_and_throttle_against_a_cluster_url)
{
    auto& cluster = the_cluster();
    const std::string cli = REDLOCK_CLI_PATH;
    const auto key = cluster.key_on_shard(2, "cli:");
    const auto exec = redlock::test::run_command(
        {cli, "exec", "--nodes", cluster.url(), "--key", key, "--ttl", "5s", "--", "sh", "-c", "echo inside"}, 30s);
    BOOST_TEST(exec.exit_code == 0, exec.err);
    BOOST_TEST(exec.out == "inside\n");

    const auto status = redlock::test::run_command({cli, "status", "--nodes", cluster.url(), "--key", key}, 30s);
    BOOST_TEST(status.exit_code == 0, status.err);
    const auto slot = std::to_string(redlock::detail::key_slot(key));
    BOOST_TEST(status.out.find("slot " + slot) != std::string::npos, status.out);
    const auto& master = cluster.master_of_slot(redlock::detail::key_slot(key));
    BOOST_TEST(status.out.find(std::to_string(master.port())) != std::string::npos, status.out);

    const auto throttle =
        redlock::test::run_command({cli, "throttle", "--nodes", cluster.url(), "--key",
                                    cluster.key_on_shard(0, "cli-rate:"), "--rate", "100/s", "--", "true"},
                                   30s);
    BOOST_TEST(throttle.exit_code == 0, throttle.err);
}

// Client tracking through the Cluster node: the key deleted on the master of its slot loses the lease at once (its
// first extension is 10 s away), and news from every master reaches the leases.
BOOST_AUTO_TEST_CASE(a_lease_whose_key_is_deleted_is_lost_at_once)
{
    cluster_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        for (const std::string key : {"cluster:tracked:a", "cluster:tracked:b", "cluster:tracked:c"}) {
            redlock::mutex m(rig.locks, key, {.ttl = 30'000ms, .watchdog = true});
            auto lease = co_await m.async_lock(asio::use_awaitable);
            const auto deleted = std::chrono::steady_clock::now();
            rig.on_master(key, {"DEL", key});
            auto [ec] = co_await lease.async_wait_lost(use_tuple);
            BOOST_TEST(ec == redlock::error::lost);
            BOOST_TEST((std::chrono::steady_clock::now() - deleted < 3000ms), key);
        }
    });
}
