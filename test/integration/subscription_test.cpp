// Subscriptions owned by the connection, against real redis-server processes (7.x: sharded channels, SSUBSCRIBE,
// reached by SPUBLISH): a refused subscribe gets its own error and never another request's reply, an idle
// subscriber survives the health check, and confirmed channels are restored after every reconnect (unsubscribed
// and refused ones are not; the lost handler hears of the refused).
#include <redlock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <functional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::request;
using redlock::response;
using redlock::test::redis_node;
using redlock::test::run_coro;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

struct message {
    std::string channel, payload;
};

std::string url_of(const redis_node& node, const std::string& userinfo = "")
{
    return "redis://" + userinfo + "127.0.0.1:" + std::to_string(node.port());
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d)
{
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    co_await t.async_wait(use_tuple);
}

// Polls `pred` every 5 ms on the io_context (so the connections keep running) until it holds or `limit` passed.
asio::awaitable<bool> eventually(std::function<bool()> pred, std::chrono::milliseconds limit = 5000ms)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= deadline) co_return false;
        co_await sleep_for(5ms);
    }
    co_return true;
}

// SPUBLISHes until the subscriber got `payload` on `channel` (a message may race a reconnect); returns whether it did.
asio::awaitable<bool> publish_until_received(redlock::connection& publisher, const std::vector<message>& received,
                                             const std::string& channel, const std::string& payload)
{
    request pub;
    pub.push("SPUBLISH", channel, payload);
    auto got = [&] {
        for (auto& m : received)
            if (m.channel == channel && m.payload == payload) return true;
        return false;
    };
    for (int i = 0; i < 100 && !got(); ++i) {
        co_await publisher.async_exec(pub, use_tuple);
        co_await eventually(got, 20ms);
    }
    co_return got();
}

// Channel names. Not a braced list: g++ 12 cannot keep the array behind an initializer_list of strings in a
// coroutine frame ("array used as initializer") when it appears in a co_await expression.
template <class... Names>
std::vector<std::string> names(const Names&... n)
{
    return {std::string(n)...};
}

// Starts every operation at once (so they leave in one write) and waits for all; their results, in order.
template <class... Ops>
asio::awaitable<std::vector<error_code>> together(Ops... ops)
{
    auto results = std::make_shared<std::vector<error_code>>(sizeof...(Ops));
    auto left = std::make_shared<std::size_t>(sizeof...(Ops));
    auto done =
        std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
    std::size_t i = 0;
    (std::move(ops)([results, left, done, k = i++](error_code ec) {
         (*results)[k] = ec;
         if (--*left == 0) done->cancel();
     }),
     ...);
    if (*left > 0) co_await done->async_wait(use_tuple);
    co_return *results;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_refused_subscribe_gets_its_own_error_and_never_shifts_other_replies)
{
    redis_node node;
    // Redis 7.0: acl-pubsub-default is resetchannels, so this user may touch every key but no channel.
    BOOST_TEST(node.cli({"ACL", "SETUSER", "locker", "on", ">pw", "~*", "+@all", "resetchannels"}) == "OK");
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), redlock::parse_url(url_of(node, "locker:pw@")));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        for (int i = 0; i < 200; ++i) {
            const auto value = std::to_string(i);
            request before, after;
            before.push("SET", "k", value);
            after.push("GET", "k");
            after.push("INCR", "counter");
            response rb, ra;
            redlock::diagnostics diag;
            // One write: SET, SUBSCRIBE (refused), GET + INCR. Each must get its own reply.
            auto results = co_await together(conn.async_exec(before, rb),
                                             conn.async_subscribe(names("lock:" + value, "other"), diag),
                                             conn.async_exec(after, ra));
            BOOST_TEST(!results[0]);
            BOOST_TEST(results[1] == error::server_error);
            BOOST_TEST(diag.server_message().starts_with("NOPERM"), diag.server_message());
            BOOST_TEST(!results[2], results[2].message());
            BOOST_REQUIRE(ra.size() == 2u);
            BOOST_TEST(ra[0].text == value);
            BOOST_TEST(ra[1].as_integer().value_or(-1) == i + 1);
        }
        // A SUBSCRIBE sent by a plain async_exec is just as safe.
        request raw;
        raw.push("SUBSCRIBE", "x", "y");
        raw.push("GET", "k");
        response out;
        auto [ec] = co_await conn.async_exec(raw, out, use_tuple);
        BOOST_TEST(ec == error::server_error);
        BOOST_REQUIRE(out.size() == 3u);  // one value per channel (each the error), then GET's reply
        BOOST_TEST(out[0].error_text().starts_with("NOPERM"));
        BOOST_TEST(out[2].text == "199");

        const auto use = conn.get_usage();
        BOOST_TEST(use.subscribe_refusals == 400u);  // channels
        BOOST_TEST(use.connects == 1u);              // never out of step
        BOOST_TEST(use.disconnects == 0u);
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(subscribe_completes_when_confirmed_and_messages_reach_the_message_handler)
{
    redis_node node;
    asio::io_context ctx;
    redlock::connection subscriber(ctx.get_executor(), redlock::parse_url(node.url()));
    redlock::connection publisher(ctx.get_executor(), redlock::parse_url(node.url()));
    std::vector<message> received;
    std::vector<std::string> raw_kinds;
    subscriber.set_message_handler([&](std::string_view channel, std::string_view payload) {
        received.push_back({std::string(channel), std::string(payload)});
    });
    subscriber.set_push_handler([&](const redlock::resp::value& v) { raw_kinds.push_back(v.elements.at(0).text); });
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await subscriber.async_connect(asio::use_awaitable);
        co_await publisher.async_connect(asio::use_awaitable);
        co_await subscriber.async_subscribe(names("a", "b"), asio::use_awaitable);
        // Confirmed means subscribed: the very first SPUBLISH reaches us (a PUBLISH does not: sharded channels).
        BOOST_TEST(node.cli({"PUBLISH", "b", "classic"}) == "0");
        BOOST_TEST(node.cli({"SPUBLISH", "b", "first"}) == "1");
        BOOST_TEST(co_await eventually([&] { return !received.empty(); }));
        BOOST_TEST(received.at(0).channel == "b");
        BOOST_TEST(received.at(0).payload == "first");
        BOOST_TEST(raw_kinds.size() == 3u);  // the raw handler still sees every push: 2 confirmations, 1 message

        // Unsubscribing a channel never subscribed is fine (Redis confirms it anyway).
        co_await subscriber.async_unsubscribe(names("b", "never"), asio::use_awaitable);
        BOOST_TEST(node.cli({"SPUBLISH", "b", "second"}) == "0");
        BOOST_TEST(node.cli({"SPUBLISH", "a", "third"}) == "1");

        auto [empty] = co_await subscriber.async_subscribe(std::vector<std::string>{}, use_tuple);
        BOOST_TEST(empty == error::invalid_argument);
        subscriber.close();
        publisher.close();
        auto [closed] = co_await subscriber.async_subscribe(names("a"), use_tuple);
        BOOST_TEST(closed == error::closed);
    });
}

BOOST_AUTO_TEST_CASE(an_idle_subscriber_survives_the_health_check_and_a_silent_server_is_still_detected)
{
    redis_node node;
    auto config = redlock::parse_url(node.url());
    config.health_check_interval = 50ms;
    config.health_check_timeout = 300ms;
    asio::io_context ctx;
    redlock::connection subscriber(ctx.get_executor(), config);
    std::vector<message> received;
    subscriber.set_message_handler([&](std::string_view channel, std::string_view payload) {
        received.push_back({std::string(channel), std::string(payload)});
    });
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await subscriber.async_connect(asio::use_awaitable);
        // The SUBSCRIBE goes out in one write behind a GET, so it is still queued when GET's reply arrives.
        request get;
        get.push("GET", "k");
        auto results = co_await together(subscriber.async_exec(get), subscriber.async_subscribe(names("news")));
        BOOST_TEST(!results[0]);
        BOOST_TEST(!results[1]);
        co_await sleep_for(3 * config.health_check_timeout);
        BOOST_TEST(subscriber.get_usage().disconnects == 0u);
        BOOST_TEST(subscriber.get_usage().connects == 1u);
        BOOST_TEST(node.cli({"SPUBLISH", "news", "still here"}) == "1");
        BOOST_TEST(co_await eventually([&] { return !received.empty(); }));

        // A paused server answers no PING: the subscribed connection is declared dead all the same.
        node.pause();
        const bool detected = co_await eventually([&] { return subscriber.get_usage().disconnects > 0; }, 3000ms);
        node.resume();
        BOOST_TEST(detected);
        BOOST_TEST(co_await eventually([&] { return subscriber.get_usage().connects == 2u; }));
        subscriber.close();
    });
}

BOOST_AUTO_TEST_CASE(subscriptions_are_restored_after_a_kill_and_a_restart)
{
    redis_node node;
    asio::io_context ctx;
    auto config = redlock::parse_url(node.url());
    config.reconnect_min_delay = 10ms;
    config.reconnect_max_delay = 100ms;
    redlock::connection subscriber(ctx.get_executor(), config);
    redlock::connection publisher(ctx.get_executor(), config);
    std::vector<message> received;
    subscriber.set_message_handler([&](std::string_view channel, std::string_view payload) {
        received.push_back({std::string(channel), std::string(payload)});
    });
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await subscriber.async_connect(asio::use_awaitable);
        co_await publisher.async_connect(asio::use_awaitable);
        co_await subscriber.async_subscribe(names("news", "gone"), asio::use_awaitable);
        co_await subscriber.async_unsubscribe(names("gone"), asio::use_awaitable);
        BOOST_TEST(co_await publish_until_received(publisher, received, "news", "0"));

        BOOST_TEST(node.cli({"CLIENT", "KILL", "TYPE", "pubsub"}) == "1");
        BOOST_TEST(co_await eventually([&] { return subscriber.get_usage().connects == 2u; }));
        // Restored in the handshake, before the connection serves requests: SPUBLISH reaches it at once.
        BOOST_TEST(node.cli({"PUBSUB", "SHARDNUMSUB", "news", "gone"}) == "news\n1\ngone\n0");
        BOOST_TEST(co_await publish_until_received(publisher, received, "news", "1"));
        BOOST_TEST(subscriber.get_usage().resubscribes == 1u);

        node.restart();
        BOOST_TEST(co_await eventually([&] { return subscriber.get_usage().connects == 3u; }));
        BOOST_TEST(co_await publish_until_received(publisher, received, "news", "2"));
        BOOST_TEST(node.cli({"PUBSUB", "SHARDCHANNELS"}) == "news");
        BOOST_TEST(subscriber.get_usage().resubscribes == 2u);
        BOOST_TEST(subscriber.get_usage().subscribe_refusals == 0u);
        for (auto& m : received) BOOST_TEST(m.channel == "news");  // never "gone"
        subscriber.close();
        publisher.close();
    });
}

BOOST_AUTO_TEST_CASE(a_refused_restore_drops_the_channel)
{
    redis_node node;
    BOOST_TEST(node.cli({"ACL", "SETUSER", "waiter", "on", ">pw", "~*", "+@all", "resetchannels", "&a", "&b"}) == "OK");
    asio::io_context ctx;
    auto config = redlock::parse_url(url_of(node, "waiter:pw@"));
    config.reconnect_min_delay = 10ms;
    config.reconnect_max_delay = 100ms;
    redlock::connection subscriber(ctx.get_executor(), config);
    std::vector<std::vector<std::string>> lost;
    subscriber.set_subscription_lost_handler([&](std::vector<std::string> channels) { lost.push_back(channels); });
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await subscriber.async_connect(asio::use_awaitable);
        co_await subscriber.async_subscribe(names("a"), asio::use_awaitable);
        co_await subscriber.async_subscribe(names("b"), asio::use_awaitable);
        // Take the right to `b` away: Redis disconnects clients subscribed to a channel they lost.
        BOOST_TEST(node.cli({"ACL", "SETUSER", "waiter", "resetchannels", "&a"}) == "OK");
        BOOST_TEST(co_await eventually([&] { return subscriber.get_usage().connects == 2u; }));
        BOOST_TEST(subscriber.get_usage().resubscribes == 1u);
        BOOST_TEST(subscriber.get_usage().subscribe_refusals == 1u);
        BOOST_TEST(node.cli({"PUBSUB", "SHARDCHANNELS"}) == "a");
        BOOST_TEST((lost == std::vector<std::vector<std::string>>{{"b"}}));  // its owner hears of it
        request ping;
        ping.push("PING");
        co_await subscriber.async_exec(ping, asio::use_awaitable);  // the connection serves requests

        // `b` was dropped: given the right back, a later reconnect does not restore it.
        BOOST_TEST(node.cli({"ACL", "SETUSER", "waiter", "&b"}) == "OK");
        BOOST_TEST(node.cli({"CLIENT", "KILL", "TYPE", "pubsub"}) == "1");
        BOOST_TEST(co_await eventually([&] { return subscriber.get_usage().connects == 3u; }));
        BOOST_TEST(node.cli({"PUBSUB", "SHARDCHANNELS"}) == "a");
        BOOST_TEST(subscriber.get_usage().resubscribes == 2u);
        BOOST_TEST(lost.size() == 1u);
        subscriber.close();
    });
}
