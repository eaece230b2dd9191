// The connection under faults of real nodes: killed, paused, restarted, unreachable, blackholed, reset, and
// a peer that sends malformed bytes. Every failure is a clear error within a deadline; nothing hangs.
#include <redlock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <common/fakes/scripted_server.hpp>
#include <common/run_coro.hpp>
#include <common/servers/fault_proxy.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::request;
using redlock::response;
using redlock::test::fault_proxy;
using redlock::test::redis_node;
using redlock::test::run_coro;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

redlock::node_config quick(std::string url)
{
    auto config = redlock::parse_url(url);
    config.connect_timeout = 500ms;
    config.reconnect_min_delay = 20ms;
    config.reconnect_max_delay = 100ms;
    config.health_check_interval = 100ms;
    config.health_check_timeout = 400ms;
    return config;
}

// The scripted servers here answer HELLO and garbage to anything else: no CLIENT TRACKING in their handshake.
redlock::node_config scripted(std::string url)
{
    auto config = quick(std::move(url));
    config.track_keys = false;
    return config;
}

request echo(std::string text, std::chrono::milliseconds timeout = 0ms)
{
    request r;
    r.push("ECHO", std::move(text));
    r.set_timeout(timeout);
    return r;
}

// Retries an ECHO until it succeeds (the connection came back) or `limit` passes.
asio::awaitable<bool> eventually_answers(redlock::connection& conn, std::chrono::milliseconds limit)
{
    asio::steady_timer wait(co_await asio::this_coro::executor);
    const auto deadline = steady::now() + limit;
    while (steady::now() < deadline) {
        auto r = echo("back", 200ms);
        response out;
        auto [ec] = co_await conn.async_exec(r, out, use_tuple);
        if (!ec && out.at(0).text == "back") co_return true;
        wait.expires_after(20ms);
        co_await wait.async_wait(use_tuple);
    }
    co_return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_node_killed_mid_pipeline_fails_pending_requests_then_comes_back)
{
    redis_node node;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), quick(node.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        request stall;
        stall.push("DEBUG", "SLEEP", "2");
        std::vector<request> requests;
        for (int i = 0; i < 50; ++i) requests.push_back(echo(std::to_string(i), 5000ms));
        std::vector<std::optional<error_code>> results(requests.size());
        conn.async_exec(stall, [](error_code) {});
        for (std::size_t i = 0; i < requests.size(); ++i)
            conn.async_exec(requests[i], [&results, i](error_code ec) { results[i] = ec; });
        asio::steady_timer wait(ctx, 100ms);
        co_await wait.async_wait(asio::use_awaitable);
        const auto killed = steady::now();
        node.kill();
        while (std::any_of(results.begin(), results.end(), [](auto& r) { return !r; })) {
            wait.expires_after(5ms);
            co_await wait.async_wait(asio::use_awaitable);
        }
        BOOST_TEST((steady::now() - killed < 1s));
        for (auto& r : results) BOOST_TEST((*r == error::connection_lost), r->message());
        BOOST_TEST((*results[0] == redlock::condition::connection));

        // Down: requests fail at once, without queueing.
        co_await wait.async_wait(use_tuple);
        BOOST_TEST(redlock::test::wait_until([&] { return conn.state() != redlock::connection_state::connected; }, 1s));
        auto r = echo("x");
        const auto start = steady::now();
        auto [ec] = co_await conn.async_exec(r, use_tuple);
        BOOST_TEST((ec == error::not_connected || ec == redlock::condition::connection), ec.message());
        BOOST_TEST((steady::now() - start < 600ms));  // at most one connect attempt (500 ms), never the 5 s default

        node.restart();
        BOOST_TEST(co_await eventually_answers(conn, 5000ms));
        BOOST_TEST(conn.get_usage().connects >= 2u);
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(a_paused_node_times_requests_out_and_serves_again_after_resume)
{
    redis_node node;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), quick(node.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        node.pause();
        for (int i = 0; i < 3; ++i) {
            auto r = echo("paused", 100ms);
            const auto start = steady::now();
            auto [ec] = co_await conn.async_exec(r, use_tuple);
            const auto took = steady::now() - start;
            BOOST_TEST((ec == error::timeout || ec == error::not_connected), ec.message());
            BOOST_TEST((took < 700ms));  // its own deadline, or at most one connect attempt
        }
        node.resume();
        BOOST_TEST(co_await eventually_answers(conn, 5000ms));
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(malformed_bytes_close_that_connection_only)
{
    redis_node good_node;
    redlock::test::scripted_server bad([](std::string_view bytes) -> std::string {
        auto args = redlock::test::scripted_server::arguments(bytes);
        if (args.at(0) == "HELLO") return "%1\r\n+server\r\n+redis\r\n";
        // A bulk that lies about its length: "ab" is not followed by CRLF. Malformed on its own, whatever
        // comes next or whether anything does: the parser must say so at once, not wait for more bytes.
        return "$2\r\nabcd\r\n";
    });
    asio::io_context ctx;
    redlock::connection bad_conn(ctx.get_executor(), scripted(bad.url()));
    redlock::connection good_conn(ctx.get_executor(), quick(good_node.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await bad_conn.async_connect(asio::use_awaitable);
        co_await good_conn.async_connect(asio::use_awaitable);
        // A request in flight on the good connection while the bad one breaks.
        auto slow = std::make_shared<request>();
        slow->push("BLPOP", "nothing-here", "0.2");
        std::optional<error_code> slow_result;
        good_conn.async_exec(*slow, [&, slow](error_code ec) { slow_result = ec; });
        auto r1 = echo("one", 2000ms);
        auto r2 = echo("two", 2000ms);
        std::optional<error_code> second;
        bad_conn.async_exec(r2, [&](error_code ec) { second = ec; });
        const auto start = steady::now();
        auto [ec] = co_await bad_conn.async_exec(r1, use_tuple);
        // Not the 2 s request deadline: the bytes are wrong as soon as they arrive.
        BOOST_TEST(ec == error::protocol_error, ec.message());
        BOOST_TEST((steady::now() - start < 1000ms));
        for (int i = 0; i < 100 && !second; ++i) co_await redlock::test::sleep_for(2ms);
        BOOST_REQUIRE(second.has_value());
        BOOST_TEST(*second == error::protocol_error, second->message());
        BOOST_TEST(bad_conn.get_usage().disconnects >= 1u);

        auto r3 = echo("unaffected");
        response out;
        co_await good_conn.async_exec(r3, out, asio::use_awaitable);
        BOOST_TEST(out.at(0).text == "unaffected");
        for (int i = 0; i < 500 && !slow_result; ++i) co_await redlock::test::sleep_for(2ms);
        BOOST_REQUIRE(slow_result.has_value());
        BOOST_TEST(!*slow_result, slow_result->message());
        BOOST_TEST(good_conn.get_usage().disconnects == 0u);
        bad_conn.close();
        good_conn.close();
    });
}

BOOST_AUTO_TEST_CASE(garbage_type_byte_is_a_protocol_error)
{
    redlock::test::scripted_server bad([](std::string_view bytes) -> std::string {
        auto args = redlock::test::scripted_server::arguments(bytes);
        if (args.at(0) == "HELLO") return "%1\r\n+server\r\n+redis\r\n";
        return "\x01\x02garbage\r\n";
    });
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), scripted(bad.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        auto r = echo("x", 2000ms);
        auto [ec] = co_await conn.async_exec(r, use_tuple);
        BOOST_TEST(ec == error::protocol_error);
        BOOST_TEST(conn.get_usage().disconnects >= 1u);
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(an_unreachable_port_fails_within_the_connect_deadline)
{
    const auto port = redlock::test::pick_free_port();  // nobody listens there
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), quick("redis://127.0.0.1:" + std::to_string(port)));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        const auto start = steady::now();
        auto [ec] = co_await conn.async_connect(diag, use_tuple);
        BOOST_TEST(ec == redlock::condition::connection, ec.message());
        BOOST_TEST((steady::now() - start < 500ms));
        BOOST_TEST(diag.client_message().find("cannot connect") != std::string_view::npos, diag.client_message());
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(a_blackholed_node_times_out_the_connect)
{
    redis_node node;
    fault_proxy proxy(node.port());
    proxy.set_mode(fault_proxy::mode::blackhole);
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), quick(proxy.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        const auto start = steady::now();
        auto [ec] = co_await conn.async_connect(diag, use_tuple);
        const auto took = steady::now() - start;
        BOOST_TEST(ec == error::timeout, ec.message());
        BOOST_TEST((took >= 450ms && took < 1500ms));
        BOOST_TEST(diag.client_message().find("connect timeout") != std::string_view::npos, diag.client_message());
        proxy.set_mode(fault_proxy::mode::pass);
        BOOST_TEST(co_await eventually_answers(conn, 5000ms));
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(a_reset_connection_fails_written_requests_and_reconnects)
{
    redis_node node;
    fault_proxy proxy(node.port());
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), quick(proxy.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        proxy.set_mode(fault_proxy::mode::drop_replies);
        auto r = echo("lost", 3000ms);
        std::optional<error_code> result;
        conn.async_exec(r, [&](error_code ec) { result = ec; });
        asio::steady_timer wait(ctx, 50ms);
        co_await wait.async_wait(asio::use_awaitable);
        proxy.set_mode(fault_proxy::mode::pass);
        proxy.reset_all();
        while (!result) {
            wait.expires_after(5ms);
            co_await wait.async_wait(asio::use_awaitable);
        }
        BOOST_TEST(*result == error::connection_lost, result->message());
        BOOST_TEST(co_await eventually_answers(conn, 5000ms));
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(replies_dropped_by_the_network_are_detected_by_the_health_check)
{
    redis_node node;
    fault_proxy proxy(node.port());
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), quick(proxy.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        proxy.set_mode(fault_proxy::mode::drop_replies);
        auto r = echo("void", 10'000ms);
        const auto start = steady::now();
        auto [ec] = co_await conn.async_exec(r, use_tuple);
        BOOST_TEST(ec == error::timeout, ec.message());
        BOOST_TEST((steady::now() - start < 2s));  // health_check_timeout (400 ms), not the request's 10 s
        proxy.set_mode(fault_proxy::mode::pass);
        BOOST_TEST(co_await eventually_answers(conn, 5000ms));
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(a_restarted_node_without_scripts_still_runs_them)
{
    redis_node node;
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), quick(node.url()));
    const redlock::script get_or_default("return redis.call('GET', KEYS[1]) or ARGV[1]");
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        request r;
        r.push_script(get_or_default, {"k"}, {"none"});
        response out;
        co_await conn.async_exec(r, out, asio::use_awaitable);
        BOOST_TEST(out.at(0).text == "none");
        node.restart();  // an empty script cache
        BOOST_TEST(co_await eventually_answers(conn, 5000ms));
        co_await conn.async_exec(r, out, asio::use_awaitable);
        BOOST_TEST(out.at(0).text == "none");
        conn.close();
    });
}
