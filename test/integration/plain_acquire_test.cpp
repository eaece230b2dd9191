// The plain-command acquire (SET key token NX PX ttl GET + PTTL) against real Redis 7 (or Valkey) nodes: it is what a
// one-key lock sends first, it never overwrites a holder, its refusal carries the holder's TTL, and a node that
// rejects it does not stop the lock (the script takes over).
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_rig.hpp>
#include <map>
#include <sstream>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::redis_rig;
using redlock::test::run_coro;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

BOOST_AUTO_TEST_CASE(a_one_key_lock_on_redis_7_is_one_set_per_node)
{
    redis_rig rig(3);
    rig.run([&]() -> asio::awaitable<void> {
        auto [cec] = co_await rig.client().async_connect(use_tuple);
        BOOST_TEST_REQUIRE(!cec);
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) rig.nodes[i].cli({"CONFIG", "RESETSTAT"});
        redlock::mutex m(rig.client(), "plain", {.ttl = 5000ms});
        auto [ec, held] = co_await m.async_lock(use_tuple);
        BOOST_TEST_REQUIRE(!ec);
        std::size_t holding = 0;  // decided at a quorum: the last node's SET may still be on its way
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            if (rig.nodes[i].cli({"GET", "plain"}) != held.token()) continue;
            ++holding;
            const auto pttl = std::stol(rig.nodes[i].cli({"PTTL", "plain"}));
            BOOST_TEST((pttl > 4000 && pttl <= 5000), pttl);
        }
        BOOST_TEST(holding >= 2u);
        auto [rec] = co_await held.async_release(use_tuple);  // waits for every node, after its SET
        BOOST_TEST(!rec);
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            BOOST_TEST(rig.nodes[i].command_stat("set", "calls") == 1);      // the acquire: no script
            BOOST_TEST(rig.nodes[i].command_stat("evalsha", "calls") == 1);  // the release
            BOOST_TEST(rig.nodes[i].cli({"EXISTS", "plain"}) == "0");
        }
    });
}

// The connection records who the server is from HELLO's `server` and `version`: Redis 7.0.15 on Redis, Valkey 8.0.1
// on Valkey, whose INFO says redis_version:7.2.4 (a compatibility field) beside server_name and valkey_version.
BOOST_AUTO_TEST_CASE(the_server_identity_is_the_one_hello_reports)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::connection conn(ctx.get_executor(), configs(nodes)[0]);
    BOOST_TEST(!conn.server().known());  // no handshake yet
    BOOST_TEST(conn.server_version() == 0u);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        auto [ec] = co_await conn.async_connect(use_tuple);
        BOOST_TEST_REQUIRE(!ec);
    });
    // HELLO 3 as the command-line client prints it: one "field value" line per map entry.
    std::map<std::string, std::string> hello;
    std::istringstream lines(nodes[0].cli({"HELLO", "3"}));
    for (std::string line; std::getline(lines, line);) {
        const auto space = line.find(' ');
        if (space != std::string::npos) hello[line.substr(0, space)] = line.substr(space + 1);
    }
    const auto server = conn.server();
    BOOST_TEST(redlock::to_string(server.kind) == hello["server"]);
    BOOST_TEST(redlock::version_text(server.version) == hello["version"]);
    BOOST_TEST(conn.server_version() == server.version);
    // The same as INFO's own fields for the server's name and version, and the server the fixture started.
    const auto info = nodes[0].cli({"INFO", "server"});
    BOOST_TEST((server == redlock::test::server_of_info(info)), redlock::to_string(server) << " vs\n" << info);
    BOOST_TEST((server.kind == redlock::test::test_server()));
    BOOST_TEST(server.has_set_nx_get());  // the fixture's servers have SET NX GET
    BOOST_TEST(server.has_sharded_pubsub());
}

// SET NX never overwrites a holder: the refusal leaves its token and TTL alone, reports a refusal (not a
// failure), and a waiter gets the lock once the holder releases.
BOOST_AUTO_TEST_CASE(a_refused_set_leaves_the_holder_alone_and_the_waiter_gets_it_after_the_release)
{
    redis_rig rig(3, 2);
    auto& a = rig.client(0);
    auto& b = rig.client(1);
    rig.run([&]() -> asio::awaitable<void> {
        // A node deadline a loaded machine meets: a third SET abandoned unsent would never land on its node.
        redlock::mutex ma(a, "held", {.ttl = 10'000ms, .node_timeout = 1000ms});
        auto [ec, held] = co_await ma.async_lock(use_tuple);
        BOOST_TEST_REQUIRE(!ec);
        // The lock returned at a quorum: let the last node's SET land before looking at every node.
        const std::string token = held.token();  // a structured binding: clang 14 cannot capture it
        auto everywhere = [&] {
            for (std::size_t i = 0; i < rig.nodes.size(); ++i)
                if (rig.nodes[i].cli({"GET", "held"}) != token) return false;
            return true;
        };
        for (int i = 0; i < 100 && !everywhere(); ++i) co_await redlock::test::sleep_for(10ms);
        BOOST_TEST_REQUIRE(everywhere());
        redlock::diagnostics diag;
        redlock::mutex mb(b, "held", {.ttl = 10'000ms});
        auto [tec, none] = co_await mb.async_try_lock(diag, use_tuple);
        BOOST_TEST((tec == error::not_acquired), tec.message());
        BOOST_TEST(diag.nodes().size() == rig.nodes.size());
        std::size_t refused = 0;  // the outcome is decided at a quorum: the last node may not have answered yet
        for (const auto& n : diag.nodes()) {
            BOOST_TEST((n.what != redlock::node_outcome::result::granted));
            refused += n.what == redlock::node_outcome::result::refused;
        }
        BOOST_TEST(refused >= 2u);
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            BOOST_TEST(rig.nodes[i].cli({"GET", "held"}) == held.token());
            BOOST_TEST(std::stol(rig.nodes[i].cli({"PTTL", "held"})) > 9000);
        }

        redlock::mutex waiting(b, "held", {.ttl = 10'000ms, .wait = 10'000ms, .retry_delay = 5000ms});
        const auto start = steady::now();
        asio::steady_timer later(rig.ctx, 100ms);
        auto& holder = held;  // a structured binding: clang 14 cannot capture it
        later.async_wait([&holder](redlock::error_code) { holder.async_release(asio::detached); });
        auto [wec, got] = co_await waiting.async_lock(use_tuple);
        BOOST_TEST_REQUIRE(!wec);
        BOOST_TEST((steady::now() - start < 4000ms));  // woken by the release, not the 5 s retry delay
        BOOST_TEST(rig.nodes[0].cli({"GET", "held"}) == got.token());
    });
}

// An ACL user the server refuses PTTL (the script calls it only when another owner holds the key): the first
// lock's plain acquire is rejected, the same attempt goes on by script and succeeds, and the client sends no
// plain acquire again.
BOOST_AUTO_TEST_CASE(a_rejected_plain_acquire_goes_on_by_script)
{
    cluster nodes(3);
    std::vector<redlock::node_config> as_locker;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        BOOST_REQUIRE(nodes[i].cli({"ACL", "SETUSER", "locker", "on", ">pw", "~*", "&*", "+@all", "-pttl"}) == "OK");
    for (auto c : configs(nodes)) {
        c.username = "locker";
        c.password = "pw";
        as_locker.push_back(c);
    }
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), as_locker);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        for (int round = 0; round < 3; ++round) {
            redlock::mutex m(c, "scripted", {.ttl = 5000ms});
            redlock::diagnostics diag;
            auto [ec, held] = co_await m.async_try_lock(diag, use_tuple);
            BOOST_TEST_REQUIRE(!ec, ec.message() << ": " << diag.message());
            // Decided at the quorum: the third node may apply it a moment later.
            BOOST_TEST(co_await redlock::test::soon_holding(nodes, "scripted", held.token(), nodes.size()));
            auto [rec] = co_await held.async_release(use_tuple);
            BOOST_TEST(!rec);
        }
    });
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(nodes[i].command_stat("pttl", "rejected_calls") == 1);  // the first lock only
        BOOST_TEST(nodes[i].command_stat("evalsha", "calls") >= 6);        // 3 acquires and 3 releases
    }
}
