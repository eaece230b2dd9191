// The mutex on 5 real nodes under faults: killed, paused, restarted without persistence. Every failure ends
// in a clear error within its deadline; a lost lease is reported and cancels the work under it.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_rig.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::test::nodes_holding;
using redlock::test::redis_rig;
using redlock::test::sleep_for;
using redlock::test::soon_holding;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

BOOST_AUTO_TEST_CASE(two_of_five_nodes_down_still_grant)
{
    redis_rig rig(5);
    rig.nodes[1].kill();
    rig.nodes[3].kill();
    rig.run([&]() -> asio::awaitable<void> {
        redlock::mutex m(rig.client(), "survivor", {.ttl = 3000ms, .node_timeout = 500ms});
        redlock::diagnostics diag;
        auto [ec, l] = co_await m.async_lock(diag, use_tuple);
        BOOST_TEST(!ec, ec.message() << ": " << diag.message());
        BOOST_TEST(nodes_holding(rig.nodes, "survivor", l.token()) == 3u);
        co_await l.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(three_of_five_nodes_down_fail_with_no_quorum_within_the_wait)
{
    redis_rig rig(5);
    for (int i : {0, 2, 4}) rig.nodes[i].kill();
    rig.run([&]() -> asio::awaitable<void> {
        redlock::mutex m(rig.client(), "doomed", {.ttl = 3000ms, .wait = 500ms});
        redlock::diagnostics diag;
        const auto start = steady::now();
        auto [ec, l] = co_await m.async_lock(diag, use_tuple);
        const auto took = steady::now() - start;
        BOOST_TEST(ec == error::no_quorum, ec.message());
        BOOST_TEST(ec == redlock::condition::connection);
        BOOST_TEST((took >= 450ms && took < 1500ms));
        BOOST_REQUIRE(diag.nodes().size() == 5u);
        const auto failed = std::count_if(diag.nodes().begin(), diag.nodes().end(),
                                          [](auto& o) { return o.what == redlock::node_outcome::result::failed; });
        BOOST_TEST(failed >= 3);
    });
}

BOOST_AUTO_TEST_CASE(a_paused_node_does_not_slow_the_acquire_down_to_its_deadline)
{
    redis_rig rig(5);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        rig.nodes[2].pause();
        // A long per-node deadline makes the difference plain: waiting for the paused node would take 2 s.
        redlock::mutex m(rig.client(), "fast", {.ttl = 30'000ms, .node_timeout = 2000ms});
        std::vector<steady::duration> latencies;
        for (int i = 0; i < 10; ++i) {
            const auto start = steady::now();
            auto l = co_await m.async_lock(asio::use_awaitable);
            latencies.push_back(steady::now() - start);
            co_await l.async_release(asio::use_awaitable);
        }
        std::sort(latencies.begin(), latencies.end());
        BOOST_TEST_MESSAGE("acquire with a paused node: median "
                           << std::chrono::duration_cast<std::chrono::microseconds>(latencies[5]).count() << " us");
        BOOST_TEST((latencies[5] < 500ms));
        rig.nodes[2].resume();
    });
}

BOOST_AUTO_TEST_CASE(losing_a_quorum_under_a_watchdog_lease_cancels_the_body_within_the_validity)
{
    redis_rig rig(5);
    redlock::mutex m(rig.client(), "fragile", {.ttl = 1000ms});
    rig.run([&]() -> asio::awaitable<void> {
        steady::time_point killed{}, cancelled{};
        try {
            co_await redlock::with_lock(m, [&]() -> asio::awaitable<void> {
                co_await sleep_for(200ms);
                for (int i : {0, 1, 2}) rig.nodes[i].kill();
                killed = steady::now();
                asio::steady_timer forever(co_await asio::this_coro::executor, 30s);
                auto [ec] = co_await forever.async_wait(use_tuple);
                cancelled = steady::now();
                BOOST_TEST(ec == asio::error::operation_aborted);
            });
            BOOST_FAIL("with_lock should report the loss");
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == error::lost);
        }
        const auto delay = cancelled - killed;
        BOOST_TEST_MESSAGE("body cancelled " << std::chrono::duration_cast<std::chrono::milliseconds>(delay).count()
                                             << " ms after the nodes died");
        BOOST_TEST((cancelled != steady::time_point{}));
        BOOST_TEST((delay < 1000ms + 300ms));  // at most a TTL after the last grant, plus scheduling
    });
}

BOOST_AUTO_TEST_CASE(a_lease_is_lost_at_its_deadline_even_if_no_extension_ran)
{
    redis_rig rig(3);
    redlock::mutex m(rig.client(), "paused-holder", {.ttl = 500ms, .watchdog = true});
    rig.run([&]() -> asio::awaitable<void> {
        auto l = co_await m.async_lock(asio::use_awaitable);
        std::this_thread::sleep_for(800ms);  // the whole process stalls (as in a GC pause or SIGSTOP)
        auto [ec] = co_await l.async_wait_lost(use_tuple);
        BOOST_TEST(ec == error::lost);
        BOOST_TEST(l.lost());
    });
}

BOOST_AUTO_TEST_CASE(a_minority_restarted_without_persistence_does_not_grant_twice)
{
    redis_rig rig(5, 2);
    auto& a = rig.client(0);
    auto& b = rig.client(1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await a.async_connect(asio::use_awaitable);
        co_await b.async_connect(asio::use_awaitable);
        redlock::mutex ma(a, "precious", {.ttl = 10'000ms, .node_timeout = 500ms});
        auto held = co_await ma.async_lock(asio::use_awaitable);
        // Held by all five: losing two still leaves a majority. (Held by exactly a quorum, losing one of
        // them would not: that is the restart hazard doc/locks.md describes.)
        BOOST_REQUIRE(co_await soon_holding(rig.nodes, "precious", held.token(), 5));
        rig.nodes[0].restart();  // its copy of the key is gone
        rig.nodes[4].restart();
        redlock::mutex mb(b, "precious", {.ttl = 10'000ms, .wait = 1000ms, .node_timeout = 500ms});
        auto [ec, stolen] = co_await mb.async_lock(use_tuple);
        BOOST_TEST(ec == error::not_acquired, ec.message());
        BOOST_TEST(co_await soon_holding(rig.nodes, "precious", held.token(), 3));
        // An extension only prolongs the three keys still ours (a restarted node answers "not ours", or is
        // still reconnecting); once one reached a quorum, the lease takes the lost keys back in a separate
        // repair step.
        for (int i = 0; i < 50 && nodes_holding(rig.nodes, "precious", held.token()) != 5u; ++i) {
            co_await held.async_extend(use_tuple);
            co_await sleep_for(50ms);
        }
        BOOST_TEST(nodes_holding(rig.nodes, "precious", held.token()) == 5u);
        co_await held.async_release(asio::use_awaitable);
        BOOST_TEST(co_await soon_holding(rig.nodes, "precious", held.token(), 0));
    });
}

BOOST_AUTO_TEST_CASE(a_watchdog_lease_survives_rolling_restarts_of_every_node)
{
    // Each node restarts empty in turn while a long job holds the lock. Without the repair after a successful
    // extension, each restart would cost the lease one node for good, and the second restart would lose it.
    redis_rig rig(3);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::mutex m(rig.client(), "rolling", {.ttl = 1500ms, .node_timeout = 200ms, .watchdog = true});
        auto held = co_await m.async_lock(asio::use_awaitable);
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            rig.nodes[i].restart();
            BOOST_TEST(co_await soon_holding(rig.nodes, "rolling", held.token(), rig.nodes.size()),
                       "after restarting node " << i);
            BOOST_TEST(!held.lost());
        }
        co_await held.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(a_late_grant_on_a_paused_node_is_released)
{
    redis_rig rig(5);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        rig.nodes[4].pause();
        redlock::mutex m(rig.client(), "late", {.ttl = 10'000ms});
        auto l = co_await m.async_lock(asio::use_awaitable);  // granted by 4 live nodes
        const auto token = l.token();
        co_await l.async_release(asio::use_awaitable);
        rig.nodes[4].resume();  // it now runs the queued acquire, then the queued release
        bool clean = false;
        for (int i = 0; i < 100 && !clean; ++i) {
            clean = rig.nodes[4].cli({"GET", "late"}).empty();
            if (!clean) co_await sleep_for(20ms);
        }
        BOOST_TEST(clean);
        BOOST_TEST(co_await soon_holding(rig.nodes, "late", token, 0));
    });
}
