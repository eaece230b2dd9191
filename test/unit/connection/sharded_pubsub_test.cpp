// Sharded pub/sub in the connection, against a scripted server that speaks as Redis 7 or 6 would: which command
// subscribes (SSUBSCRIBE on 7.x, SUBSCRIBE on 6.x, chosen when written, and again for the restores of a reconnect to
// a server of another version), `smessage` pushes as messages, a Cluster master's refusal (MOVED) as the caller's
// error, and a `sunsubscribe` the server sends on its own told to the lost handler, never one that answers ours.
#include <redlock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <common/fakes/scripted_server.hpp>
#include <common/run_coro.hpp>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::request;
using redlock::response;
using redlock::test::run_coro;
using redlock::test::scripted_server;
using channels = std::vector<std::string>;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

std::string bulk(std::string_view s)
{
    return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

std::string push(std::string_view kind, std::string_view channel, std::string_view last)
{
    return ">3\r\n" + bulk(kind) + bulk(channel) + std::string(last);
}

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// A Redis of `version` on one shard. It confirms each channel of (S)SUBSCRIBE and (S)UNSUBSCRIBE, refuses the
// sharded commands when it is a 6.x (unknown command), and channels of `foreign` slots with MOVED as a Cluster
// master does. ECHO scripts the rest: "smessage:<ch>" sends a message on <ch> before the reply, "drop:<ch>" a
// `sunsubscribe` of <ch> (a slot that moved away), "close" ends the connection.
class fake_shard {
public:
    fake_shard() : server_([this](std::string_view bytes) { return respond(scripted_server::arguments(bytes)); }) {}

    std::string url() const { return server_.url(); }
    void set_version(std::string v)
    {
        std::lock_guard lock(mutex_);
        version_ = std::move(v);
    }
    // What HELLO's `server` says: "redis" (the default) or "valkey".
    void set_name(std::string name)
    {
        std::lock_guard lock(mutex_);
        name_ = std::move(name);
    }
    void set_foreign(std::string channel)
    {
        std::lock_guard lock(mutex_);
        foreign_.insert(std::move(channel));
    }
    // The next SUNSUBSCRIBE is answered after a `sunsubscribe` of `channel` (the server's own, sent first).
    void drop_before_next_sunsubscribe(std::string channel)
    {
        std::lock_guard lock(mutex_);
        drop_first_ = std::move(channel);
    }
    // Every command sent, its name first: {"SSUBSCRIBE", "a"}.
    std::vector<std::vector<std::string>> commands() const
    {
        std::lock_guard lock(mutex_);
        return commands_;
    }
    std::size_t count(const std::vector<std::string>& command) const
    {
        const auto all = commands();
        return static_cast<std::size_t>(std::count(all.begin(), all.end(), command));
    }
    std::size_t connections() const { return server_.connections(); }

private:
    std::string respond(const std::vector<std::string>& cmd)
    {
        std::lock_guard lock(mutex_);
        commands_.push_back(cmd);
        if (cmd.empty()) return "-ERR empty\r\n";
        const bool redis7 = version_ >= "7";
        const std::string name = cmd[0];
        if (name == "HELLO")
            return "%3\r\n+server\r\n" + bulk(name_) + "+version\r\n" + bulk(version_) + "+proto\r\n:3\r\n";
        if (name == "PING") return "+PONG\r\n";
        if ((name == "SSUBSCRIBE" || name == "SUNSUBSCRIBE") && !redis7)
            return "-ERR unknown command '" + name + "', with args beginning with: \r\n";
        if (name == "SSUBSCRIBE" || name == "SUBSCRIBE" || name == "SUNSUBSCRIBE" || name == "UNSUBSCRIBE") {
            const bool subscribing = name == "SSUBSCRIBE" || name == "SUBSCRIBE";
            for (std::size_t i = 1; subscribing && i < cmd.size(); ++i)
                if (foreign_.count(cmd[i])) return "-MOVED 3300 127.0.0.1:7001\r\n";
            std::string out;
            if (name == "SUNSUBSCRIBE" && !drop_first_.empty())
                out += push("sunsubscribe", std::exchange(drop_first_, {}), ":0\r\n");
            for (std::size_t i = 1; i < cmd.size(); ++i) out += push(lower(name), cmd[i], ":1\r\n");
            return out;
        }
        if (name == "ECHO" && cmd.size() == 2) {
            const std::string& what = cmd[1];
            if (what == "close") return scripted_server::close_connection;
            std::string out;
            if (what.starts_with("smessage:")) out += push("smessage", what.substr(9), bulk("hello"));
            if (what.starts_with("drop:")) out += push("sunsubscribe", what.substr(5), ":0\r\n");
            return out + bulk(what);
        }
        return "-ERR unknown command '" + name + "'\r\n";
    }

    mutable std::mutex mutex_;
    std::string version_ = "7.2.4";
    std::string name_ = "redis";
    std::set<std::string> foreign_;
    std::string drop_first_;
    std::vector<std::vector<std::string>> commands_;
    scripted_server server_;  // last: its thread stops before the state it uses dies
};

redlock::node_config fast_config(const std::string& url)
{
    auto config = redlock::parse_url(url);
    config.reconnect_min_delay = 5ms;
    config.reconnect_max_delay = 20ms;
    config.connect_timeout = 2000ms;
    config.request_timeout = 2000ms;
    return config;
}

asio::awaitable<std::string> echo(redlock::connection& conn, std::string text)
{
    request req;
    req.push("ECHO", text);
    response out;
    co_await conn.async_exec(req, out, asio::use_awaitable);
    co_return out.at(0).text;
}

// Polls `pred` every 5 ms on the io_context until it holds or 5 s passed.
asio::awaitable<bool> eventually(std::function<bool()> pred)
{
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (int i = 0; i < 1000 && !pred(); ++i) {
        t.expires_after(5ms);
        co_await t.async_wait(use_tuple);
    }
    co_return pred();
}

// What a connection's owner hears: messages ("channel=payload") and lost channels.
struct listener {
    std::vector<std::string> messages;
    std::vector<channels> lost;
    void attach(redlock::connection& conn)
    {
        conn.set_message_handler([this](std::string_view channel, std::string_view payload) {
            messages.push_back(std::string(channel) + "=" + std::string(payload));
        });
        conn.set_subscription_lost_handler([this](channels c) { lost.push_back(std::move(c)); });
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(on_redis_7_the_connection_subscribes_sharded_and_receives_smessages)
{
    fake_shard shard;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), fast_config(shard.url()));
    listener heard;
    heard.attach(conn);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        BOOST_TEST(conn.server_version() == 70204u);
        BOOST_TEST(redlock::to_string(conn.server()) == "redis 7.2.4");
        const channels both{"{a}:released", "{a}:other"};
        co_await conn.async_subscribe(both, asio::use_awaitable);
        BOOST_TEST(co_await echo(conn, "smessage:{a}:released") == "smessage:{a}:released");
        BOOST_TEST((heard.messages == std::vector<std::string>{"{a}:released=hello"}));
        const channels one{"{a}:other"};
        co_await conn.async_unsubscribe(one, asio::use_awaitable);
        conn.close();
    });
    BOOST_TEST(shard.count({"SSUBSCRIBE", "{a}:released", "{a}:other"}) == 1u);
    BOOST_TEST(shard.count({"SUNSUBSCRIBE", "{a}:other"}) == 1u);
    BOOST_TEST(shard.count({"SUBSCRIBE", "{a}:released", "{a}:other"}) == 0u);
    BOOST_TEST(heard.lost.empty());
}

BOOST_AUTO_TEST_CASE(on_redis_6_the_connection_subscribes_classic)
{
    fake_shard shard;
    shard.set_version("6.2.14");
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), fast_config(shard.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        const channels one{"{a}:released"};
        co_await conn.async_subscribe(one, asio::use_awaitable);
        co_await conn.async_unsubscribe(one, asio::use_awaitable);
        conn.close();
    });
    BOOST_TEST(shard.count({"SUBSCRIBE", "{a}:released"}) == 1u);
    BOOST_TEST(shard.count({"UNSUBSCRIBE", "{a}:released"}) == 1u);
    BOOST_TEST(shard.count({"SSUBSCRIBE", "{a}:released"}) == 0u);
}

// Before its first handshake the connection knows no version; a subscribe queued meanwhile is written once the
// handshake told it, with the server's command.
BOOST_AUTO_TEST_CASE(a_subscribe_queued_while_connecting_takes_the_command_of_the_server)
{
    fake_shard shard;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), fast_config(shard.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        const channels one{"{a}:released"};
        auto [order, connected, subscribed] =
            co_await asio::experimental::make_parallel_group(conn.async_connect(), conn.async_subscribe(one))
                .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
        BOOST_TEST(!connected);
        BOOST_TEST(!subscribed);
        conn.close();
    });
    BOOST_TEST(shard.count({"SSUBSCRIBE", "{a}:released"}) == 1u);
    BOOST_TEST(shard.count({"SUBSCRIBE", "{a}:released"}) == 0u);
}

// A Cluster master refuses channels of a slot it does not own with MOVED: the caller gets server_error with the
// redirect in its diagnostics (a Cluster node subscribes at the owner), and the channel is not remembered.
BOOST_AUTO_TEST_CASE(a_moved_refusal_is_the_callers_server_error_with_the_redirect)
{
    fake_shard shard;
    shard.set_foreign("{b}:released");
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), fast_config(shard.url()));
    listener heard;
    heard.attach(conn);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        const channels foreign{"{b}:released"};
        redlock::diagnostics diag;
        auto [ec] = co_await conn.async_subscribe(foreign, diag, use_tuple);
        BOOST_TEST(ec == error::server_error);
        BOOST_TEST(diag.server_message() == "MOVED 3300 127.0.0.1:7001");
        request bye;
        bye.push("ECHO", "close");
        co_await conn.async_exec(bye, use_tuple);
        BOOST_TEST(co_await eventually([&] { return conn.get_usage().connects == 2u; }));
        BOOST_TEST(co_await echo(conn, "after") == "after");
        conn.close();
    });
    BOOST_TEST(shard.count({"SSUBSCRIBE", "{b}:released"}) == 1u);  // never restored
    BOOST_TEST(heard.lost.empty());                                 // never held
}

// A Cluster master whose slot moved away (failover, migration) unsubscribes its sharded channels on its own: the
// lost handler hears of each, and a reconnect no longer restores it.
BOOST_AUTO_TEST_CASE(a_sunsubscribe_the_server_sends_on_its_own_reaches_the_lost_handler)
{
    fake_shard shard;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), fast_config(shard.url()));
    listener heard;
    heard.attach(conn);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        const channels a{"{a}:released"}, b{"{b}:released"};
        co_await conn.async_subscribe(a, asio::use_awaitable);
        co_await conn.async_subscribe(b, asio::use_awaitable);
        BOOST_TEST(co_await echo(conn, "drop:{a}:released") == "drop:{a}:released");
        BOOST_TEST((heard.lost == std::vector<channels>{{"{a}:released"}}));
        BOOST_TEST(conn.get_usage().subscriptions_lost == 1u);
        BOOST_TEST(co_await echo(conn, "drop:never-subscribed") == "drop:never-subscribed");
        BOOST_TEST(heard.lost.size() == 1u);  // nothing of ours

        request bye;
        bye.push("ECHO", "close");
        auto [closed] = co_await conn.async_exec(bye, use_tuple);
        BOOST_TEST(closed == error::connection_lost);
        BOOST_TEST(co_await eventually([&] { return conn.get_usage().connects == 2u; }));
        BOOST_TEST(co_await echo(conn, "after") == "after");
        conn.close();
    });
    BOOST_TEST(shard.count({"SSUBSCRIBE", "{a}:released"}) == 1u);  // not restored
    BOOST_TEST(shard.count({"SSUBSCRIBE", "{b}:released"}) == 2u);  // restored
}

// The server's own sunsubscribe of one channel may arrive while our SUNSUBSCRIBE of another is due: it is no
// confirmation of ours (the channel tells), the lost handler hears of it, and the stream stays in step.
BOOST_AUTO_TEST_CASE(a_servers_sunsubscribe_is_told_from_the_confirmation_of_ours)
{
    fake_shard shard;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), fast_config(shard.url()));
    listener heard;
    heard.attach(conn);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        const channels a{"{a}:released"}, b{"{b}:released"};
        co_await conn.async_subscribe(a, asio::use_awaitable);
        co_await conn.async_subscribe(b, asio::use_awaitable);
        shard.drop_before_next_sunsubscribe("{b}:released");
        co_await conn.async_unsubscribe(a, asio::use_awaitable);
        BOOST_TEST((heard.lost == std::vector<channels>{{"{b}:released"}}));
        // And the server's own drop of a channel we are unsubscribing is no loss: we asked for it.
        co_await conn.async_subscribe(a, asio::use_awaitable);
        shard.drop_before_next_sunsubscribe("{a}:released");
        co_await conn.async_unsubscribe(a, asio::use_awaitable);
        BOOST_TEST(co_await echo(conn, "next") == "next");
        BOOST_TEST(heard.lost.size() == 1u);
        BOOST_TEST(conn.get_usage().connects == 1u);
        BOOST_TEST(conn.get_usage().disconnects == 0u);
        conn.close();
    });
}

// The restores of a reconnect guess the last session's version; a server upgraded (or downgraded) meanwhile gets
// its own command in a second exchange, which undoes what the guess subscribed.
BOOST_AUTO_TEST_CASE(a_reconnect_to_a_server_of_another_version_subscribes_with_its_command)
{
    fake_shard shard;
    shard.set_version("6.2.14");
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), fast_config(shard.url()));
    listener heard;
    heard.attach(conn);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        const channels a{"{a}:released"};
        co_await conn.async_subscribe(a, asio::use_awaitable);

        shard.set_version("7.2.4");  // upgraded: the restore's SUBSCRIBE is undone, then SSUBSCRIBE
        request bye;
        bye.push("ECHO", "close");
        co_await conn.async_exec(bye, use_tuple);
        BOOST_TEST(co_await eventually([&] { return conn.get_usage().connects == 2u; }));
        BOOST_TEST(co_await echo(conn, "smessage:{a}:released") == "smessage:{a}:released");
        BOOST_TEST(heard.messages.size() == 1u);
        BOOST_TEST(shard.count({"UNSUBSCRIBE", "{a}:released"}) == 1u);
        BOOST_TEST(shard.count({"SSUBSCRIBE", "{a}:released"}) == 1u);

        shard.set_version("6.2.14");  // downgraded: the restore's SSUBSCRIBE is unknown there, then SUBSCRIBE
        co_await conn.async_exec(bye, use_tuple);
        BOOST_TEST(co_await eventually([&] { return conn.get_usage().connects == 3u; }));
        BOOST_TEST(co_await echo(conn, "after") == "after");
        BOOST_TEST(shard.count({"SSUBSCRIBE", "{a}:released"}) == 2u);
        BOOST_TEST(shard.count({"SUBSCRIBE", "{a}:released"}) == 3u);
        BOOST_TEST(conn.get_usage().resubscribes == 2u);
        BOOST_TEST(conn.get_usage().subscribe_refusals == 0u);
        BOOST_TEST(heard.lost.empty());
        const channels a_again{"{a}:released"};
        co_await conn.async_unsubscribe(a_again, asio::use_awaitable);  // as the server subscribed it
        BOOST_TEST(shard.count({"UNSUBSCRIBE", "{a}:released"}) == 2u);
        conn.close();
    });
}

// A Redis 6.2 replaced by a Valkey 8 behind the same address (a migration): the restore guessed SUBSCRIBE from the
// last session; the Valkey's HELLO says it has sharded pub/sub, so the resubscription undoes it and SSUBSCRIBEs.
BOOST_AUTO_TEST_CASE(a_reconnect_from_redis_6_to_valkey_subscribes_sharded)
{
    fake_shard shard;
    shard.set_version("6.2.14");
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), fast_config(shard.url()));
    listener heard;
    heard.attach(conn);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        BOOST_TEST(redlock::to_string(conn.server()) == "redis 6.2.14");
        const channels a{"{a}:released"};
        co_await conn.async_subscribe(a, asio::use_awaitable);
        BOOST_TEST(shard.count({"SUBSCRIBE", "{a}:released"}) == 1u);

        shard.set_name("valkey");
        shard.set_version("8.0.1");
        request bye;
        bye.push("ECHO", "close");
        co_await conn.async_exec(bye, use_tuple);
        BOOST_TEST(co_await eventually([&] { return conn.get_usage().connects == 2u; }));
        BOOST_TEST((conn.server() == redlock::server_identity{redlock::server_kind::valkey, 80001}));
        BOOST_TEST(conn.server_version() == 80001u);
        BOOST_TEST(co_await echo(conn, "smessage:{a}:released") == "smessage:{a}:released");
        BOOST_TEST(heard.messages.size() == 1u);
        BOOST_TEST(shard.count({"UNSUBSCRIBE", "{a}:released"}) == 1u);
        BOOST_TEST(shard.count({"SSUBSCRIBE", "{a}:released"}) == 1u);
        BOOST_TEST(heard.lost.empty());
        conn.close();
    });
}
