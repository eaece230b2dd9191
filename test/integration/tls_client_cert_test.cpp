// doc/operations.md, "TLS": nodes that require a client certificate (tls-auth-clients yes). A client whose URLs give
// the CA, the certificate and the key takes a lock over 3 such nodes; without the certificate it cannot connect, and
// says so.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/tls_files.hpp>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::test::run_coro;
using redlock::test::tls_files;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

redlock::test::node_options mutual_tls()
{
    redlock::test::node_options options;
    options.tls = true;
    options.extra_args = {"--tls-auth-clients", "yes"};
    return options;
}

std::vector<redlock::node_config> configs(const redlock::test::cluster& nodes, bool with_certificate)
{
    const auto& files = tls_files::get();
    std::vector<redlock::node_config> out;
    for (const auto& url : nodes.urls()) {
        std::string full = url + "?ca_file=" + files.ca_cert;
        if (with_certificate) full += "&cert_file=" + files.client_cert + "&key_file=" + files.client_key;
        out.push_back(redlock::parse_url(full));
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_client_certificate_in_the_urls_locks_over_nodes_that_require_one)
{
    redlock::test::cluster nodes(3, mutual_tls());
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), configs(nodes, true));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        auto [ec] = co_await client.async_connect(diag, use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
        redlock::mutex m(client, "tls:report", {.ttl = 5s, .fencing = true});
        auto held = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(held.fencing_token() == 1u);
        co_await held.async_release(asio::use_awaitable);
        client.close();
    });
}

BOOST_AUTO_TEST_CASE(without_the_client_certificate_the_nodes_cannot_be_reached)
{
    redlock::test::cluster nodes(1, mutual_tls());
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), configs(nodes, false).front());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        auto [ec] = co_await conn.async_connect(diag, use_tuple);
        BOOST_TEST_MESSAGE(ec.message() << ": " << diag.message());
        BOOST_TEST(ec == redlock::condition::connection, ec.message() << ": " << diag.message());
        conn.close();
    });
}
