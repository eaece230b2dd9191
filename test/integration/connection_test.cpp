// The connection against real redis-server processes: commands, pipelines, coalescing, cancellation,
// scripts with NOSCRIPT fallback, pub/sub pushes, unix sockets, databases, and calls from many threads.
#include <redlock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <future>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::request;
using redlock::response;
using redlock::test::redis_node;
using redlock::test::run_coro;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

BOOST_AUTO_TEST_CASE(commands_pipelines_and_server_errors)
{
    redis_node node;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), redlock::parse_url(node.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        request r;
        r.push("SET", "greeting", "hello", "PX", 60000);
        r.push("GET", "greeting");
        r.push("INCRBY", "counter", 41);
        r.push("HSET", "h", "a", 1, "b", 2);
        r.push("HGETALL", "h");
        response out;
        co_await conn.async_exec(r, out, asio::use_awaitable);
        BOOST_REQUIRE(out.size() == 5u);
        BOOST_TEST(out[0].text == "OK");
        BOOST_TEST(out[1].text == "hello");
        BOOST_TEST(out[2].as_integer().value() == 41);
        BOOST_TEST((out[4].data_type == redlock::resp::type::map));  // RESP3: HGETALL is a map
        BOOST_TEST(out[4].elements.size() == 4u);

        request wrong;
        wrong.push("INCR", "greeting");
        auto [ec] = co_await conn.async_exec(wrong, out, use_tuple);
        BOOST_TEST(ec == error::server_error);
        BOOST_TEST(out.at(0).error_text() == "ERR value is not an integer or out of range");
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(ten_thousand_concurrent_requests_are_coalesced_into_few_writes)
{
    redis_node node;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), redlock::parse_url(node.url()));
    constexpr int count = 10'000;
    std::vector<request> requests(count);
    std::vector<response> responses(count);
    int correct = 0, finished = 0;
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        const auto writes_before = conn.get_usage().writes;
        for (int i = 0; i < count; ++i) {
            requests[i].push("ECHO", i);
            conn.async_exec(requests[i], responses[i], [&, i](error_code ec) {
                ++finished;
                if (!ec && responses[i].at(0).text == std::to_string(i)) ++correct;
            });
        }
        asio::steady_timer poll(ctx);
        while (finished < count) {
            poll.expires_after(5ms);
            co_await poll.async_wait(asio::use_awaitable);
        }
        const auto writes = conn.get_usage().writes - writes_before;
        BOOST_TEST(correct == count);
        BOOST_TEST_MESSAGE(count << " requests took " << writes << " writes");
        BOOST_TEST(writes <= count / 100u);
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(cancelling_every_other_request_keeps_the_rest_in_step)
{
    redis_node node;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), redlock::parse_url(node.url()));
    constexpr int count = 1000;
    std::vector<request> requests(count);
    std::vector<response> responses(count);
    std::vector<asio::cancellation_signal> signals(count);
    std::vector<std::optional<error_code>> results(count);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        // Stall the server so the first half is written but unanswered when cancelled (abandoned); the
        // second half is cancelled before it is written (removed).
        request stall;
        stall.push("DEBUG", "SLEEP", "0.3");
        conn.async_exec(stall, [](error_code) {});
        auto issue = [&](int i) {
            requests[i].push("ECHO", i);
            conn.async_exec(
                requests[i], responses[i],
                asio::bind_cancellation_slot(signals[i].slot(), [&, i](error_code ec) { results[i] = ec; }));
        };
        for (int i = 0; i < count / 2; ++i) issue(i);
        asio::steady_timer wait(ctx, 100ms);
        co_await wait.async_wait(asio::use_awaitable);
        for (int i = count / 2; i < count; ++i) issue(i);
        for (int i = 1; i < count; i += 2) signals[i].emit(asio::cancellation_type::terminal);
        while (std::any_of(results.begin(), results.end(), [](auto& r) { return !r.has_value(); })) {
            wait.expires_after(5ms);
            co_await wait.async_wait(asio::use_awaitable);
        }
        for (int i = 0; i < count; ++i) {
            BOOST_TEST_CONTEXT("request " << i)
            {
                if (i % 2 == 1) {
                    BOOST_TEST(*results[i] == asio::error::operation_aborted);
                } else {
                    BOOST_TEST(!*results[i]);
                    BOOST_TEST(responses[i].at(0).text == std::to_string(i));
                }
            }
        }
        BOOST_TEST(conn.get_usage().abandoned >= 1u);
        // And the stream is still in step afterwards.
        request after;
        after.push("ECHO", "after");
        response out;
        co_await conn.async_exec(after, out, asio::use_awaitable);
        BOOST_TEST(out.at(0).text == "after");
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(scripts_run_by_evalsha_and_survive_script_flush)
{
    redis_node node;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), redlock::parse_url(node.url()));
    const redlock::script incr_by("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        for (int round = 1; round <= 3; ++round) {
            request r;
            r.push("PING");
            r.push_script(incr_by, {"n"}, {10});
            response out;
            co_await conn.async_exec(r, out, asio::use_awaitable);
            BOOST_REQUIRE(out.size() == 2u);
            BOOST_TEST(out[1].as_integer().value() == 10 * round);
            if (round == 2) BOOST_TEST(node.cli({"SCRIPT", "FLUSH"}) == "OK");
        }
        BOOST_TEST(node.cli({"SCRIPT", "EXISTS", incr_by.sha1()}) == "1");
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(pubsub_messages_arrive_as_pushes)
{
    redis_node node;
    asio::io_context ctx;
    redlock::connection subscriber(ctx.get_executor(), redlock::parse_url(node.url()));
    redlock::connection publisher(ctx.get_executor(), redlock::parse_url(node.url()));
    std::vector<redlock::resp::value> pushes;
    subscriber.set_push_handler([&](const redlock::resp::value& v) { pushes.push_back(v); });
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await subscriber.async_connect(asio::use_awaitable);
        co_await publisher.async_connect(asio::use_awaitable);
        request sub;
        sub.push("SUBSCRIBE", "news");
        co_await subscriber.async_exec(sub, asio::use_awaitable);
        request pub;
        pub.push("PUBLISH", "news", "extra");
        asio::steady_timer wait(ctx);
        for (int i = 0; i < 200 && pushes.size() < 2; ++i) {
            co_await publisher.async_exec(pub, asio::use_awaitable);
            wait.expires_after(5ms);
            co_await wait.async_wait(asio::use_awaitable);
        }
        BOOST_REQUIRE(pushes.size() >= 2u);
        BOOST_TEST(pushes[0].elements.at(0).text == "subscribe");
        BOOST_TEST(pushes[1].elements.at(0).text == "message");
        BOOST_TEST(pushes[1].elements.at(2).text == "extra");
        // Requests still work on the subscribed connection (RESP3 allows it).
        request ping;
        ping.push("PING");
        response out;
        co_await subscriber.async_exec(ping, out, asio::use_awaitable);
        BOOST_TEST(out.at(0).text == "PONG");
        subscriber.close();
        publisher.close();
    });
}

BOOST_AUTO_TEST_CASE(unix_socket_database_and_client_name)
{
    redlock::test::node_options options;
    options.unix_socket = true;
    redis_node node(options);
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(),
                             redlock::parse_url("unix://" + node.unix_path() + "?db=5&client_name=worker-7"));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        request r;
        r.push("CLIENT", "INFO");
        response out;
        co_await conn.async_exec(r, out, asio::use_awaitable);
        BOOST_TEST(out.at(0).text.find("db=5") != std::string::npos);
        BOOST_TEST(out.at(0).text.find("name=worker-7") != std::string::npos);
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(requests_from_many_threads)
{
    redis_node node;
    asio::thread_pool pool(4);
    redlock::connection conn(pool.get_executor(), redlock::parse_url(node.url()));
    conn.async_connect(asio::use_future).get();
    std::atomic<int> correct{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t) {
        callers.emplace_back([&, t] {
            for (int i = 0; i < 200; ++i) {
                request r;
                r.push("ECHO", t * 1000 + i);
                response out;
                conn.async_exec(r, out, asio::use_future).get();
                if (out.at(0).text == std::to_string(t * 1000 + i)) ++correct;
            }
        });
    }
    for (auto& c : callers) c.join();
    BOOST_TEST(correct.load() == 800);
    conn.close();
    pool.join();
}
