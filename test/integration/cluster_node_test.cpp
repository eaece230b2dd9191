// The Redis Cluster node (redis+cluster://) on a real sharded Cluster of 3 masters with a replica each: routing by
// hash slot, a client and a redis over it, a live slot migration (ASK, then MOVED), a coordinated failover, a
// killed master, a seed that is no cluster member, and one slot's issue order across a migration.
#include "common/key_slot.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_cluster.hpp>
#include <common/servers/redis_node.hpp>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::test::cluster_config;
using redlock::test::run_coro;
using redlock::test::sharded_cluster;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

asio::awaitable<error_code> exec(const redlock::redis& r, redlock::request& req, redlock::response& resp,
                                 const std::string& key)
{
    auto [ec] = co_await r.async_exec(req, resp, key, use_tuple);
    co_return ec;
}

asio::awaitable<std::string> get(const redlock::redis& r, const std::string& key)
{
    redlock::request req;
    req.push("GET", key);
    redlock::response resp;
    auto ec = co_await exec(r, req, resp, key);
    BOOST_TEST(!ec, key << ": " << ec.message() << (resp.empty() ? "" : " " + to_string(resp.front())));
    co_return resp.empty() ? std::string() : resp.front().text;
}

asio::awaitable<void> set(const redlock::redis& r, const std::string& key, const std::string& value)
{
    redlock::request req;
    req.push("SET", key, value);
    redlock::response resp;
    auto ec = co_await exec(r, req, resp, key);
    BOOST_TEST(!ec, key << ": " << ec.message() << (resp.empty() ? "" : " " + to_string(resp.front())));
}

}  // namespace

// Each request goes straight to its slot's master: no master refused one (a wrong route would be answered MOVED,
// which counts as a rejected call, and followed).
BOOST_AUTO_TEST_CASE(requests_reach_the_master_of_their_keys_shard_first_time)
{
    sharded_cluster cluster;
    asio::io_context ctx;
    redlock::redis r(ctx.get_executor(), cluster_config(cluster.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        auto [ec] = co_await r.async_connect(diag, use_tuple);
        BOOST_TEST_REQUIRE(!ec, diag.message());
        for (std::size_t shard = 0; shard < cluster.shards(); ++shard) {
            const auto key = cluster.key_on_shard(shard, "route:");
            co_await set(r, key, "v" + std::to_string(shard));
            BOOST_TEST(cluster.master_of_shard(shard).cli({"GET", key}) == "v" + std::to_string(shard));
        }
        redlock::request ping;
        ping.push("PING");
        redlock::response pong;
        BOOST_TEST(!co_await exec(r, ping, pong, ""));  // no routing key: any master
    });
    for (std::size_t shard = 0; shard < cluster.shards(); ++shard) {
        BOOST_TEST(cluster.master_of_shard(shard).command_stat("set") == 1);
        BOOST_TEST(cluster.master_of_shard(shard).command_stat("set", "rejected_calls") == 0);
    }
    BOOST_TEST(r.get_usage().connects == cluster.shards());  // one connection per master
}

BOOST_AUTO_TEST_CASE(a_client_and_a_redis_over_a_cluster_url_lock_release_and_run_commands)
{
    sharded_cluster cluster;
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), {cluster_config(cluster.url())});
    redlock::redis r(ctx.get_executor(), cluster_config(cluster.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await c.async_connect(asio::use_awaitable);
        for (std::size_t shard = 0; shard < cluster.shards(); ++shard) {
            const auto key = cluster.key_on_shard(shard, "lock:");
            redlock::mutex m(c, key, {.ttl = 5000ms});
            auto lease = co_await m.async_lock(asio::use_awaitable);
            BOOST_TEST(cluster.master_of_shard(shard).cli({"GET", key}) == lease.token());
            BOOST_TEST(co_await get(r, key) == lease.token());
            co_await lease.async_release(asio::use_awaitable);
            BOOST_TEST(cluster.master_of_shard(shard).cli({"EXISTS", key}) == "0");
        }
        // The identity is a master's, as its HELLO said (every master runs the same server here).
        const auto server = c.stats().nodes.at(0).server;
        BOOST_TEST((server == redlock::test::server_of_info(cluster.master_of_shard(0).cli({"INFO", "server"}))),
                   redlock::to_string(server));
        // Several keys in one slot, taken atomically: one hash tag.
        redlock::mutex both(c, std::vector<std::string>{"{order:7}:a", "{order:7}:b"}, {.ttl = 5000ms});
        auto lease = co_await both.async_lock(asio::use_awaitable);
        BOOST_TEST(co_await get(r, "{order:7}:b") == lease.token());
        co_await lease.async_release(asio::use_awaitable);
    });
}

// A Cluster over TLS only (rediss+cluster://, no plain port, the bus and replication over TLS): the map gives each
// master's tls-port, and the node reaches every master there, checking its certificate against the URL's CA. A
// node that read the plain port (0 here) would reach no master.
BOOST_AUTO_TEST_CASE(a_cluster_over_tls_is_reached_at_each_masters_tls_port)
{
    sharded_cluster cluster({.replicas_per_shard = 0, .tls = true});
    BOOST_TEST_REQUIRE(cluster.url().starts_with("rediss+cluster://"));
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), {cluster_config(cluster.url())});
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await c.async_connect(asio::use_awaitable);
        for (std::size_t shard = 0; shard < cluster.shards(); ++shard) {
            const auto key = cluster.key_on_shard(shard, "tls:");
            redlock::mutex m(c, key, {.ttl = 5000ms, .fencing = true});
            auto lease = co_await m.async_lock(asio::use_awaitable);
            BOOST_TEST(cluster.master_of_shard(shard).cli({"GET", key}) == lease.token());
            co_await lease.async_release(asio::use_awaitable);
        }
    });
    BOOST_TEST(c.stats().nodes.front().connection.connects == cluster.shards());
}

// Between MIGRATING/IMPORTING and the slot's final owner, a key already moved is answered ASK (ASKING + the
// request at the importing master); after it, MOVED. Scripts go through too (SCRIPT LOAD ahead of ASKING).
BOOST_AUTO_TEST_CASE(requests_follow_a_live_slot_migration_ask_then_moved)
{
    sharded_cluster cluster;
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), {cluster_config(cluster.url())});
    redlock::redis r(ctx.get_executor(), cluster_config(cluster.url()));
    const auto moved_key = cluster.key_on_shard(0, "migrating:");
    const auto slot = redlock::detail::key_slot(moved_key);
    auto& target = cluster.master_of_shard(1);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await c.async_connect(asio::use_awaitable);
        co_await set(r, moved_key, "before");
        cluster.migrate_begin(slot, target);
        BOOST_TEST(co_await get(r, moved_key) == "before");  // still at the source
        cluster.migrate_move_keys(slot, target);
        BOOST_TEST(co_await get(r, moved_key) == "before");  // ASK: at the importing master
        const auto asked = target.command_stat("asking");
        BOOST_TEST(asked >= 1);
        // A lock on a new key of the migrating slot: created at the importing master, by script and ASK.
        const auto lock_key = "{" + moved_key + "}:lock";
        redlock::mutex m(c, lock_key, {.ttl = 5000ms});
        const auto keys_there = [&] { return target.cli({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}); };
        BOOST_TEST(keys_there() == "1");  // the moved key
        auto lease = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(keys_there() == "2");
        BOOST_TEST(co_await get(r, lock_key) == lease.token());
        co_await lease.async_release(asio::use_awaitable);
        BOOST_TEST(keys_there() == "1");
        BOOST_TEST(target.command_stat("asking") > asked);
        cluster.migrate_end(slot, target);
        co_await set(r, moved_key, "after");  // MOVED: the map learns the new owner
        BOOST_TEST(target.cli({"GET", moved_key}) == "after");
        BOOST_TEST(co_await get(r, moved_key) == "after");
    });
}

BOOST_AUTO_TEST_CASE(requests_go_to_the_new_master_after_a_coordinated_failover)
{
    sharded_cluster cluster;
    asio::io_context ctx;
    redlock::redis r(ctx.get_executor(), cluster_config(cluster.url()));
    const auto key = cluster.key_on_shard(1, "failover:");
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await r.async_connect(asio::use_awaitable);
        co_await set(r, key, "kept");
        const auto old_port = cluster.master_of_shard(1).port();
        cluster.failover(1);
        auto& promoted = cluster.master_of_shard(1);
        BOOST_TEST(promoted.port() != old_port);
        const auto gets_before = promoted.command_stat("get");
        BOOST_TEST(co_await get(r, key) == "kept");
        BOOST_TEST(promoted.command_stat("get") == gets_before + 1);
        co_await set(r, key, "written after");
        BOOST_TEST(promoted.cli({"GET", key}) == "written after");
    });
}

// Until the replica is promoted the shard has no master: a request fails within its deadline with a clear error
// (never hangs); once promoted (about twice the node timeout), requests succeed there.
BOOST_AUTO_TEST_CASE(after_a_master_is_killed_requests_fail_clearly_then_succeed_at_the_promoted_replica)
{
    sharded_cluster cluster;
    asio::io_context ctx;
    redlock::redis r(ctx.get_executor(), cluster_config(cluster.url()));
    const auto key = cluster.key_on_shard(2, "killed:");
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await r.async_connect(asio::use_awaitable);
        {
            // WAIT on the connection that wrote: the replica has the value before its master dies (a WAIT from
            // another client covers that client's writes only).
            redlock::request write;
            write.push("SET", key, "v");
            write.push("WAIT", 1, 2000);
            redlock::response written;
            BOOST_TEST_REQUIRE(!co_await exec(r, write, written, key));
            BOOST_TEST_REQUIRE(written.at(1).as_integer().value_or(-1) == 1);
        }
        cluster.master_of_shard(2).kill();
        const auto killed_at = steady::now();

        redlock::request req;
        req.push("GET", key);
        req.set_timeout(300ms);
        redlock::response resp;
        auto ec = co_await exec(r, req, resp, key);
        const auto took = steady::now() - killed_at;
        BOOST_TEST(ec, "answered before any replica was promoted");
        BOOST_TEST((ec == error::timeout || ec == error::not_connected || ec == error::server_error), ec.message());
        BOOST_TEST(took < 1000ms);

        req.set_timeout(1000ms);
        bool served = false;
        while (!served && steady::now() - killed_at < 15s) {
            ec = co_await exec(r, req, resp, key);
            served = !ec;
        }
        BOOST_TEST_REQUIRE(served, "no answer 15 s after the kill: " << ec.message());
        BOOST_TEST(resp.front().text == "v");
        BOOST_TEST_MESSAGE("first answer "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - killed_at).count()
                           << " ms after the kill");
    });
}

BOOST_AUTO_TEST_CASE(a_seed_that_is_no_cluster_member_fails_connect_clearly)
{
    redlock::test::redis_node standalone;
    asio::io_context ctx;
    redlock::redis r(ctx.get_executor(), cluster_config(sharded_cluster::url_of(standalone)));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        const auto start = steady::now();
        auto [ec] = co_await r.async_connect(diag, use_tuple);
        BOOST_TEST(ec == error::invalid_argument);
        BOOST_TEST(diag.message().find("is not a Redis Cluster member") != std::string_view::npos, diag.message());
        BOOST_TEST(diag.message().find(std::to_string(standalone.port())) != std::string_view::npos);
        redlock::request req;
        req.push("GET", "k");
        redlock::response resp;
        BOOST_TEST(co_await exec(r, req, resp, "k") == error::invalid_argument);
        BOOST_TEST((steady::now() - start < 2s));
    });
}

// Requests of one slot issued in bursts while the slot migrates (ASK for the moved list, then MOVED) run
// in their issue order: the list ends 0, 1, ..., n-1 and the completions came in that order. At most `window`
// are outstanding: a caller that issues without bound outruns a slow (sanitized, loaded) build, and its requests
// then end at their deadlines, which says nothing about order.
BOOST_AUTO_TEST_CASE(requests_of_one_slot_keep_their_issue_order_across_a_migration)
{
    sharded_cluster cluster;
    asio::io_context ctx;
    redlock::redis r(ctx.get_executor(), cluster_config(cluster.url()));
    const auto key = cluster.key_on_shard(0, "ordered:");
    const auto slot = redlock::detail::key_slot(key);
    auto& target = cluster.master_of_shard(2);
    // At least n, and more until the migration ended: Valkey 8 replicates CLUSTER SETSLOT to the shard's replicas
    // and waits for them (0.85 s measured here), while n requests take 0.2 s; the migration must happen during them.
    constexpr int n = 10000;
    constexpr int burst = 50;  // issued back to back: several of the slot's requests are in flight at any time
    constexpr int window = 500;
    int issued = 0;
    std::vector<int> completed;
    std::vector<error_code> failures;
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await r.async_connect(asio::use_awaitable);
        std::atomic<bool> migrated = false;
        std::thread migration([&] {
            std::this_thread::sleep_for(20ms);
            cluster.migrate_slot(slot, target);
            migrated = true;
        });
        std::vector<std::unique_ptr<redlock::request>> requests;
        std::vector<std::unique_ptr<redlock::response>> responses;
        int outstanding = 0;
        for (int& i = issued; i < n || outstanding > 0 || !migrated;) {
            for (int b = 0; b < burst && (i < n || !migrated) && outstanding < window; ++b) {
                requests.push_back(std::make_unique<redlock::request>());
                requests.back()->push("RPUSH", key, i);
                responses.push_back(std::make_unique<redlock::response>());
                ++outstanding;
                r.async_exec(*requests.back(), *responses.back(), key, [&, i](error_code ec) {
                    --outstanding;
                    completed.push_back(i);
                    if (ec) failures.push_back(ec);
                });
                ++i;
            }
            co_await sleep_for(i < n || !migrated ? 1ms : 20ms);
        }
        migration.join();
        redlock::request range;
        range.push("LRANGE", key, 0, -1);
        redlock::response values;
        BOOST_TEST(!co_await exec(r, range, values, key));
        BOOST_TEST_REQUIRE(values.size() == 1u);
        std::vector<std::string> expected;
        for (int i = 0; i < issued; ++i) expected.push_back(std::to_string(i));
        std::vector<std::string> got;
        for (auto& v : values.front().elements) got.push_back(v.text);
        BOOST_TEST(got == expected);
    });
    BOOST_TEST(failures.empty());
    std::vector<int> in_order(static_cast<std::size_t>(issued));
    for (int i = 0; i < issued; ++i) in_order[static_cast<std::size_t>(i)] = i;
    BOOST_TEST(completed == in_order);
    BOOST_TEST(target.cli({"LLEN", key}) == std::to_string(issued));
    BOOST_TEST(target.command_stat("rpush") > 0);  // some ran at the new owner: the migration happened during
}
