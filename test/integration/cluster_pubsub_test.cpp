// Sharded pub/sub on a real Redis Cluster (3 masters, 1 replica each): a release script's SPUBLISH stays in its
// slot and reaches a connection subscribed at the slot's master; a master refuses channels of slots it does not
// own (MOVED, the caller's server_error); and when a subscribed channel's slot leaves its master (a live migration,
// a CLUSTER FAILOVER of its shard) the master unsubscribes it on its own and the connection's lost handler hears
// of it, while its other channels stay subscribed.
#include "lua/mutex.hpp"

#include <redlock/connection.hpp>
#include <redlock/key_layout.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <common/run_coro.hpp>
#include <common/servers/redis_cluster.hpp>
#include <functional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::test::redis_node;
using redlock::test::run_coro;
using redlock::test::sharded_cluster;
using channels = std::vector<std::string>;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

redlock::node_config config_of(const redis_node& node)
{
    auto config = redlock::parse_url("redis://127.0.0.1:" + std::to_string(node.port()));
    config.reconnect_min_delay = 10ms;
    config.reconnect_max_delay = 100ms;
    return config;
}

// Polls `pred` every 10 ms on the io_context (the connection keeps reading) until it holds or `limit` passed.
asio::awaitable<bool> eventually(std::function<bool()> pred, std::chrono::milliseconds limit = 10'000ms)
{
    asio::steady_timer t(co_await asio::this_coro::executor);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= deadline) co_return false;
        t.expires_after(10ms);
        co_await t.async_wait(use_tuple);
    }
    co_return true;
}

// A subscriber at one master: what it receives and what it lost.
struct subscriber {
    explicit subscriber(asio::io_context& ctx, const redis_node& node) : conn(ctx.get_executor(), config_of(node))
    {
        conn.set_message_handler([this](std::string_view channel, std::string_view payload) {
            messages.push_back(std::string(channel) + "=" + std::string(payload));
        });
        conn.set_subscription_lost_handler([this](channels c) { lost.push_back(std::move(c)); });
    }
    bool received(const std::string& message) const
    {
        return std::find(messages.begin(), messages.end(), message) != messages.end();
    }
    redlock::connection conn;
    std::vector<std::string> messages;
    std::vector<channels> lost;
};

// Two keys on shard 0 of distinct slots, and their release channels.
struct two_locks {
    std::string moving, staying;
    std::uint16_t moving_slot;
};

two_locks keys_on_shard_0(sharded_cluster& cluster)
{
    two_locks out;
    out.moving = cluster.key_on_shard(0, "move:");
    out.staying = cluster.key_on_shard(0, "stay:");
    out.moving_slot = static_cast<std::uint16_t>(std::stoul(cluster.node(0).cli({"CLUSTER", "KEYSLOT", out.moving})));
    BOOST_REQUIRE(cluster.node(0).cli({"CLUSTER", "KEYSLOT", out.staying}) != std::to_string(out.moving_slot));
    return out;
}

}  // namespace

// The mutex's release script runs at the lock key's master and publishes with SPUBLISH on the key's channel, in the
// script's slot (a channel of another slot is refused inside a script on a Cluster): a connection subscribed there
// receives the release id.
BOOST_AUTO_TEST_CASE(a_release_script_publishes_to_the_subscriber_at_the_lock_keys_master)
{
    sharded_cluster cluster;
    const auto key = cluster.key_on_shard(1, "lock:");
    auto& master = cluster.master_of_shard(1);
    asio::io_context ctx;
    subscriber sub(ctx, master);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await sub.conn.async_connect(asio::use_awaitable);
        BOOST_TEST(sub.conn.server().has_sharded_pubsub());
        const channels release{redlock::release_channel(key)};
        co_await sub.conn.async_subscribe(release, asio::use_awaitable);
        BOOST_TEST(master.cli({"SET", key, "tok"}) == "OK");
        BOOST_TEST(master.cli({"EVAL", std::string(redlock::detail::lua::mutex_release), "1", key, "tok", "release-7",
                               redlock::release_channel(key)}) == "1");
        BOOST_TEST(co_await eventually([&] { return sub.received(release[0] + "=release-7"); }));
        sub.conn.close();
    });
}

// A master refuses to subscribe channels of a slot it does not own: MOVED, with the owner, for the caller to follow.
BOOST_AUTO_TEST_CASE(a_master_refuses_a_channel_of_another_shard_with_moved)
{
    sharded_cluster cluster;
    const auto elsewhere = redlock::release_channel(cluster.key_on_shard(2, "lock:"));
    auto& owner = cluster.master_of_shard(2);
    asio::io_context ctx;
    subscriber sub(ctx, cluster.master_of_shard(0));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await sub.conn.async_connect(asio::use_awaitable);
        redlock::diagnostics diag;
        const channels foreign{elsewhere};
        auto [ec] = co_await sub.conn.async_subscribe(foreign, diag, use_tuple);
        BOOST_TEST(ec == error::server_error);
        BOOST_TEST(diag.server_message().starts_with("MOVED "), diag.server_message());
        BOOST_TEST(diag.server_message().ends_with(":" + std::to_string(owner.port())), diag.server_message());
        BOOST_TEST(sub.conn.get_usage().connects == 1u);  // the stream stays in step
        sub.conn.close();
    });
}

// A live migration of a subscribed channel's slot to another master: the old master sends `sunsubscribe` for it,
// the lost handler hears of that channel alone, the connection's other channel keeps its messages, and the channel
// is no longer the old master's to subscribe (MOVED to the new owner).
BOOST_AUTO_TEST_CASE(migrating_a_subscribed_channels_slot_calls_the_lost_handler)
{
    sharded_cluster cluster;
    const auto locks = keys_on_shard_0(cluster);
    auto& old_master = cluster.master_of_shard(0);
    auto& new_master = cluster.master_of_shard(1);
    const auto moving = redlock::release_channel(locks.moving), staying = redlock::release_channel(locks.staying);
    asio::io_context ctx;
    subscriber sub(ctx, old_master);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await sub.conn.async_connect(asio::use_awaitable);
        const channels one{moving}, other{staying};
        co_await sub.conn.async_subscribe(one, asio::use_awaitable);
        co_await sub.conn.async_subscribe(other, asio::use_awaitable);
        cluster.migrate_slot(locks.moving_slot, new_master);
        BOOST_TEST(co_await eventually([&] { return !sub.lost.empty(); }));
        BOOST_TEST((sub.lost == std::vector<channels>{{moving}}));
        BOOST_TEST(sub.conn.get_usage().subscriptions_lost == 1u);
        BOOST_TEST(sub.conn.get_usage().connects == 1u);
        BOOST_TEST(old_master.cli({"PUBSUB", "SHARDCHANNELS"}) == staying);

        BOOST_TEST(old_master.cli({"SPUBLISH", staying, "still"}) == "1");
        BOOST_TEST(co_await eventually([&] { return sub.received(staying + "=still"); }));
        redlock::diagnostics diag;
        auto [ec] = co_await sub.conn.async_subscribe(one, diag, use_tuple);
        BOOST_TEST(ec == error::server_error);
        BOOST_TEST(diag.server_message().ends_with(":" + std::to_string(new_master.port())), diag.server_message());
        sub.conn.close();
    });
}

// A CLUSTER FAILOVER of the shard: its master becomes a replica and gives up every slot. The channels it held are
// unsubscribed and the lost handler hears of each (a Cluster node subscribes them at the new master).
BOOST_AUTO_TEST_CASE(a_failover_of_the_shard_calls_the_lost_handler_for_its_channels)
{
    sharded_cluster cluster;
    const auto locks = keys_on_shard_0(cluster);
    auto& old_master = cluster.master_of_shard(0);
    const auto moving = redlock::release_channel(locks.moving), staying = redlock::release_channel(locks.staying);
    asio::io_context ctx;
    subscriber sub(ctx, old_master);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await sub.conn.async_connect(asio::use_awaitable);
        const channels one{moving}, other{staying};
        co_await sub.conn.async_subscribe(one, asio::use_awaitable);
        co_await sub.conn.async_subscribe(other, asio::use_awaitable);
        cluster.failover(0);
        BOOST_TEST(co_await eventually([&] {
            std::size_t n = 0;
            for (const auto& c : sub.lost) n += c.size();
            return n >= 2;
        }));
        std::vector<std::string> all;
        for (const auto& c : sub.lost) all.insert(all.end(), c.begin(), c.end());
        std::sort(all.begin(), all.end());
        channels expected{moving, staying};
        std::sort(expected.begin(), expected.end());
        BOOST_TEST(all == expected);
        BOOST_TEST(sub.conn.get_usage().subscriptions_lost == 2u);
        sub.conn.close();
    });
}
