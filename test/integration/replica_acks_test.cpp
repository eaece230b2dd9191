// Replica acknowledgement (lock_options::replica_acks, WAIT) on a real master with a replica: a grant, a fencing
// token, a fair lock's grant and a permit are on the replica when they are returned, and survive the replica's
// promotion; a replica that does not acknowledge (paused, or fewer replicas than asked) fails the acquire with
// error::replica_acks within its bound and leaves nothing on the master; an unacknowledged extension does not extend.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/replicated_node.hpp>
#include <thread>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::test::replicated_node;
using redlock::test::run_coro;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
constexpr auto use = asio::as_tuple(asio::use_awaitable);

// `replicas` must acknowledge within `wait`: long enough for a loaded test machine where it should succeed, short
// where a failure is expected.
redlock::lock_options acked(int replicas = 1, ms wait = 1000ms)
{
    return {.ttl = 5000ms, .wait = 0ms, .node_timeout = 200ms, .replica_acks = replicas, .replica_ack_timeout = wait};
}

ms since(steady::time_point start)
{
    return std::chrono::duration_cast<ms>(steady::now() - start);
}

// Polls `pred` (blocking: redis-cli calls) until it holds or `limit` passed.
template <class F>
bool eventually(F pred, ms limit = 2000ms)
{
    const auto until = steady::now() + limit;
    while (!pred()) {
        if (steady::now() >= until) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

// A client of the master alone: one Redis deployment with a replica.
struct replicated_rig {
    explicit replicated_rig(std::size_t replicas = 1) : nodes(replicas) {}
    replicated_node nodes;
    asio::io_context ctx;
    redlock::client client{ctx.get_executor(), {redlock::test::fast_reconnecting(nodes.master.url())}};
};

}  // namespace

BOOST_AUTO_TEST_CASE(an_acknowledged_grant_is_on_the_replica_when_it_returns)
{
    replicated_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        co_await rig.client.async_connect(asio::use_awaitable);
        redlock::mutex m(rig.client, "job", acked());
        auto [ec, held] = co_await m.async_try_lock(use);
        BOOST_REQUIRE(!ec);
        BOOST_TEST(rig.nodes.replica().cli({"GET", "job"}) == held.token());
        co_await held.async_release(use);
    });
}

// The acquire waits for the replica: paused for 300 ms, it acknowledges once resumed, and the grant comes back then.
BOOST_AUTO_TEST_CASE(the_grant_waits_for_a_slow_replica_within_the_ack_timeout)
{
    replicated_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        co_await rig.client.async_connect(asio::use_awaitable);
        auto options = acked();
        options.replica_ack_timeout = 2000ms;
        redlock::mutex m(rig.client, "job", options);
        rig.nodes.replica().pause();
        std::thread resume([&] {
            std::this_thread::sleep_for(300ms);
            rig.nodes.replica().resume();
        });
        const auto start = steady::now();
        auto [ec, held] = co_await m.async_try_lock(use);
        const auto took = since(start);
        resume.join();
        BOOST_REQUIRE(!ec);
        BOOST_TEST(took >= 250ms);
        BOOST_TEST(took < 2000ms);
        BOOST_TEST(rig.nodes.replica().cli({"GET", "job"}) == held.token());
        co_await held.async_release(use);
    });
}

BOOST_AUTO_TEST_CASE(a_paused_replica_fails_the_acquire_within_its_bound_and_leaves_no_key)
{
    replicated_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        co_await rig.client.async_connect(asio::use_awaitable);
        rig.nodes.replica().pause();
        redlock::mutex m(rig.client, "job", acked(1, 100ms));
        redlock::diagnostics diag;
        const auto start = steady::now();
        auto [ec, held] = co_await m.async_try_lock(diag, use);
        const auto took = since(start);
        BOOST_TEST(ec == error::replica_acks);
        BOOST_TEST(!held);
        BOOST_TEST(took < 1000ms);  // the WAIT's 100 ms, and slack for a busy machine
        BOOST_TEST(took >= 90ms);   // it did wait for the replica
        BOOST_TEST(std::string(diag.message()).find("not acknowledged by 1 replica(s) within 100 ms") !=
                   std::string::npos);
        BOOST_REQUIRE(diag.nodes().size() == 1u);
        BOOST_TEST(diag.nodes()[0].message == "not acknowledged by 1 replica(s) within 100 ms (0 did)");
        // The grant was released on the master.
        BOOST_TEST(eventually([&] { return rig.nodes.master.cli({"EXISTS", "job"}) == "0"; }));
        rig.nodes.replica().resume();
    });
}

BOOST_AUTO_TEST_CASE(more_replicas_than_the_master_has_fail_the_acquire_and_leave_no_key)
{
    replicated_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        co_await rig.client.async_connect(asio::use_awaitable);
        redlock::mutex m(rig.client, "job", acked(2, 100ms));
        redlock::diagnostics diag;
        const auto start = steady::now();
        auto [ec, held] = co_await m.async_try_lock(diag, use);
        BOOST_TEST(ec == error::replica_acks);
        BOOST_TEST(since(start) < 1000ms);
        BOOST_REQUIRE(diag.nodes().size() == 1u);
        BOOST_TEST(diag.nodes()[0].message == "not acknowledged by 2 replica(s) within 100 ms (1 did)");
        BOOST_TEST(eventually([&] { return rig.nodes.master.cli({"EXISTS", "job"}) == "0"; }));
    });
}

// What it buys: the master dies, its replica is promoted, and the lock and its fencing token are still there.
BOOST_AUTO_TEST_CASE(a_promoted_replica_keeps_an_acknowledged_lock_and_its_fencing_token)
{
    replicated_rig rig;
    std::uint64_t token = 0;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        co_await rig.client.async_connect(asio::use_awaitable);
        auto options = acked();
        options.fencing = true;
        options.ttl = 1500ms;
        redlock::mutex m(rig.client, "job", options);
        redlock::lease kept;           // never released: its master dies holding it
        for (int i = 0; i < 3; ++i) {  // tokens 1, 2, 3
            redlock::diagnostics diag;
            auto [ec, held] = co_await m.async_try_lock(diag, use);
            BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
            token = held.fencing_token();
            if (i < 2)
                co_await held.async_release(use);
            else
                kept = std::move(held);
        }
        BOOST_TEST(token == 3u);
        // The token is on the replica the moment it is returned (one node: the acquire incremented it).
        BOOST_TEST(rig.nodes.replica().cli({"GET", "{job}:fence"}) == "3");
        rig.nodes.master.kill();
    });
    BOOST_TEST(rig.nodes.replica().cli({"REPLICAOF", "NO", "ONE"}) == "OK");
    asio::io_context ctx;
    redlock::client promoted(ctx.get_executor(), {redlock::test::fast_reconnecting(rig.nodes.replica().url())});
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await promoted.async_connect(asio::use_awaitable);
        redlock::mutex m(promoted, "job", {.ttl = 1500ms, .wait = 0ms, .fencing = true});
        auto [busy, none] = co_await m.async_try_lock(use);
        BOOST_TEST(busy == error::not_acquired);  // the lock survived the failover
        redlock::mutex waiting(promoted, "job", {.ttl = 1500ms, .wait = 3000ms, .fencing = true});
        auto [ec, next] = co_await waiting.async_lock(use);  // once the old holder's TTL ran out
        BOOST_REQUIRE(!ec);
        BOOST_TEST(next.fencing_token() == token + 1);  // the token never goes back
        co_await next.async_release(use);
    });
}

BOOST_AUTO_TEST_CASE(an_extension_the_replica_does_not_acknowledge_does_not_extend)
{
    replicated_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        co_await rig.client.async_connect(asio::use_awaitable);
        redlock::mutex m(rig.client, "job", acked());
        redlock::diagnostics first;
        auto [ec, held] = co_await m.async_try_lock(first, use);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << first.message());
        const auto granted_until = held.valid_until();
        co_await sleep_for(50ms);
        rig.nodes.replica().pause();
        redlock::diagnostics diag;
        auto [xec] = co_await held.async_extend(diag, use);  // waits the WAIT's 1 s
        rig.nodes.replica().resume();
        BOOST_TEST(xec == error::replica_acks);
        BOOST_TEST((held.valid_until() == granted_until));
        BOOST_TEST(!held.lost());
        auto [again] = co_await held.async_extend(use);  // the replica is back: extended
        BOOST_TEST(!again);
        BOOST_TEST((held.valid_until() > granted_until));
        co_await held.async_release(use);
    });
}

BOOST_AUTO_TEST_CASE(a_fair_lock_and_a_permit_are_on_the_replica_when_they_return)
{
    replicated_rig rig;
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        co_await rig.client.async_connect(asio::use_awaitable);
        auto fair_options = acked();
        fair_options.fair = true;
        fair_options.waiter_ttl = 5000ms;  // above 3 request deadlines (node timeout + the WAIT's)
        redlock::mutex fair(rig.client, "fair-job", fair_options);
        redlock::diagnostics diag;
        auto [ec, held] = co_await fair.async_try_lock(diag, use);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
        BOOST_TEST(rig.nodes.replica().cli({"GET", "fair-job"}) == held.token());
        co_await held.async_release(use);

        redlock::semaphore pool(rig.client, "pool", 3,
                                {.wait = 0ms, .node_timeout = 200ms, .replica_acks = 1, .replica_ack_timeout = 1000ms});
        auto [pec, permit] = co_await pool.async_acquire(1, use);
        BOOST_REQUIRE(!pec);
        BOOST_TEST(rig.nodes.replica().cli({"ZSCORE", "pool", permit.id()}) != "");
        rig.nodes.replica().pause();
        auto [refused, none] = co_await pool.async_acquire(1, use);  // waits the WAIT's 1 s
        rig.nodes.replica().resume();
        BOOST_TEST(refused == error::replica_acks);
        co_await permit.async_release(use);
    });
}
