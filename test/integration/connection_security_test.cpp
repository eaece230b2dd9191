// TLS with certificate verification, passwords, ACL users and old servers: each failure is clear.
#include <redlock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <common/fakes/scripted_server.hpp>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/tls_files.hpp>

namespace asio = boost::asio;
using redlock::error;
using redlock::request;
using redlock::response;
using redlock::test::redis_node;
using redlock::test::run_coro;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {
// Connects once and returns the outcome with its diagnostics.
std::pair<redlock::error_code, std::string> try_connect(const redlock::node_config& config)
{
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), config);
    redlock::error_code result;
    redlock::diagnostics diag;
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        auto [ec] = co_await conn.async_connect(diag, use_tuple);
        result = ec;
        conn.close();
    });
    return {result, std::string(diag.message())};
}
}  // namespace

BOOST_AUTO_TEST_CASE(tls_with_the_right_ca_works)
{
    redlock::test::node_options options;
    options.tls = true;
    redis_node node(options);
    auto config = redlock::parse_url(node.url() + "?ca_file=" + redlock::test::tls_files::get().ca_cert);
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), config);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        request r;
        r.push("SET", "over", "tls");
        r.push("GET", "over");
        response out;
        co_await conn.async_exec(r, out, asio::use_awaitable);
        BOOST_TEST(out.at(1).text == "tls");
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(tls_with_a_wrong_ca_fails_clearly)
{
    redlock::test::node_options options;
    options.tls = true;
    redis_node node(options);
    auto [ec, message] =
        try_connect(redlock::parse_url(node.url() + "?ca_file=" + redlock::test::tls_files::get().other_ca_cert));
    BOOST_TEST(ec == error::tls_error);
    BOOST_TEST(ec == redlock::condition::connection);
    BOOST_TEST(message.find("certificate verify failed") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(tls_host_name_is_verified)
{
    redlock::test::node_options options;
    options.tls = true;
    redis_node node(options);
    const auto& files = redlock::test::tls_files::get();
    auto [ec, message] =
        try_connect(redlock::parse_url(node.url() + "?ca_file=" + files.ca_cert + "&server_name=evil"));
    BOOST_TEST(ec == error::tls_error);
    auto [ok, none] =
        try_connect(redlock::parse_url(node.url() + "?ca_file=" + files.ca_cert + "&server_name=localhost"));
    BOOST_TEST(!ok, none);
}

BOOST_AUTO_TEST_CASE(wrong_or_missing_password_is_auth_failed)
{
    redlock::test::node_options options;
    options.requirepass = "s3cret";
    redis_node node(options);
    const auto base = "127.0.0.1:" + std::to_string(node.port());

    auto [wrong, wrong_text] = try_connect(redlock::parse_url("redis://:nope@" + base));
    BOOST_TEST(wrong == error::auth_failed);
    BOOST_TEST(wrong_text.find("WRONGPASS") != std::string::npos, wrong_text);

    auto [missing, missing_text] = try_connect(redlock::parse_url("redis://" + base));
    BOOST_TEST(missing == error::auth_failed);
    BOOST_TEST(missing_text.find("NOAUTH") != std::string::npos, missing_text);

    auto [unknown, unknown_text] = try_connect(redlock::parse_url("redis://ghost:s3cret@" + base));
    BOOST_TEST(unknown == error::auth_failed);

    auto [right, right_text] = try_connect(redlock::parse_url("redis://:s3cret@" + base));
    BOOST_TEST(!right, right_text);
}

BOOST_AUTO_TEST_CASE(an_acl_user_without_key_rights_gets_noperm)
{
    redis_node node;
    BOOST_TEST(node.cli({"ACL", "SETUSER", "locker", "on", ">pw", "~lock:*", "+@all"}) == "OK");
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(),
                             redlock::parse_url("redis://locker:pw@127.0.0.1:" + std::to_string(node.port())));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await conn.async_connect(asio::use_awaitable);
        request allowed;
        allowed.push("SET", "lock:a", "1");
        co_await conn.async_exec(allowed, asio::use_awaitable);
        request denied;
        denied.push("SET", "other:a", "1");
        response out;
        auto [ec] = co_await conn.async_exec(denied, out, use_tuple);
        BOOST_TEST(ec == error::server_error);
        BOOST_TEST(out.at(0).error_text().starts_with("NOPERM"), out.at(0).error_text());
        conn.close();
    });
}

BOOST_AUTO_TEST_CASE(a_server_without_resp3_is_unsupported)
{
    redlock::test::scripted_server old_server([](std::string_view) { return "-ERR unknown command 'HELLO'\r\n"; });
    auto [ec, message] = try_connect(redlock::parse_url(old_server.url()));
    BOOST_TEST(ec == error::unsupported_server);
    BOOST_TEST(message.find("unknown command 'HELLO'") != std::string::npos, message);
}
