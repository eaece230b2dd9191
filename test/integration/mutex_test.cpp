// The mutex on 1, 3 and 5 real nodes: acquire, extend, release, contention, ownership, multi-key, watchdog,
// with_lock, cancellation and bad input.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <common/lock_checks.hpp>
#include <common/redis_node.hpp>
#include <common/run_coro.hpp>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::nodes_holding;
using redlock::test::run_coro;
using redlock::test::sleep_for;
using redlock::test::soon_holding;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

BOOST_DATA_TEST_CASE(acquire_extend_release, data::make({1, 3, 5}), n)
{
    cluster nodes(n);
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), configs(nodes));
    redlock::mutex m(client, "job:42", {.ttl = 2000ms, .node_timeout = 500ms});
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await client.async_connect(asio::use_awaitable);
        auto l = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(l.token().size() == 32u);
        BOOST_TEST(l.keys() == std::vector<std::string>{"job:42"});
        BOOST_TEST((l.validity() > 1900ms && l.validity() <= 2000ms));
        BOOST_TEST(nodes_holding(nodes, "job:42", l.token()) >= client.quorum());
        BOOST_TEST(co_await soon_holding(nodes, "job:42", l.token(), nodes.size()));
        co_await sleep_for(300ms);
        const auto before = l.valid_until();
        co_await l.async_extend(asio::use_awaitable);
        BOOST_TEST((l.valid_until() > before + 250ms));
        co_await l.async_release(asio::use_awaitable);
        BOOST_TEST(co_await soon_holding(nodes, "job:42", l.token(), 0));
        co_await l.async_release(asio::use_awaitable);  // idempotent
        BOOST_TEST(!l.lost());
    });
}

BOOST_DATA_TEST_CASE(a_held_lock_is_not_acquired_by_another_client, data::make({1, 3, 5}), n)
{
    cluster nodes(n);
    asio::io_context ctx;
    redlock::client a(ctx.get_executor(), configs(nodes));
    redlock::client b(ctx.get_executor(), configs(nodes));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(asio::use_awaitable);
        co_await b.async_connect(asio::use_awaitable);
        redlock::mutex ma(a, "res", {.ttl = 5000ms, .node_timeout = 500ms});
        redlock::mutex mb(b, "res", {.ttl = 5000ms, .wait = 300ms, .node_timeout = 500ms});
        auto held = co_await ma.async_lock(asio::use_awaitable);
        redlock::diagnostics diag;
        const auto start = steady::now();
        auto [ec, none] = co_await mb.async_lock(diag, use_tuple);
        BOOST_TEST(ec == error::not_acquired);
        BOOST_TEST(ec == redlock::condition::not_acquired);
        BOOST_TEST(!none);
        BOOST_TEST((steady::now() - start >= 250ms));  // it waited
        BOOST_TEST(diag.nodes().size() == static_cast<std::size_t>(n));
        BOOST_TEST(!diag.client_message().empty());
        auto [try_ec, _] = co_await mb.async_try_lock(use_tuple);
        BOOST_TEST(try_ec == error::not_acquired);

        // When the holder releases, the waiter gets it.
        std::optional<error_code> waiter;
        redlock::lease got;
        redlock::mutex patient(b, "res", {.ttl = 5000ms, .wait = 5000ms, .node_timeout = 500ms});
        patient.async_lock([&](error_code e, redlock::lease l) {
            waiter = e;
            got = std::move(l);
        });
        co_await sleep_for(100ms);
        co_await held.async_release(asio::use_awaitable);
        for (int i = 0; i < 200 && !waiter; ++i) co_await sleep_for(5ms);
        BOOST_REQUIRE(waiter.has_value());
        BOOST_TEST(!*waiter);
        BOOST_TEST(co_await soon_holding(nodes, "res", got.token(), nodes.size()));
        co_await got.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(release_by_a_non_owner_fails_and_leaves_the_lock)
{
    cluster nodes(3);
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), configs(nodes));
    redlock::mutex m(client, "owned", {.ttl = 800ms});
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        auto first = co_await m.async_lock(asio::use_awaitable);
        co_await sleep_for(900ms);  // it expires (no watchdog)...
        BOOST_TEST(first.lost());
        auto second = co_await m.async_lock(asio::use_awaitable);  // ...and another owner takes it
        auto [ec] = co_await first.async_release(use_tuple);
        BOOST_TEST(ec == error::lost);
        BOOST_TEST(
            co_await soon_holding(nodes, "owned", second.token(), nodes.size()));  // the stale release changed nothing
        auto [ext] = co_await first.async_extend(use_tuple);
        BOOST_TEST((ext == error::lost || ext == error::not_owner));
        co_await second.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(several_keys_are_taken_all_or_none)
{
    cluster nodes(3);
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), configs(nodes));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex one(client, "{acct}:b", {.ttl = 5000ms, .node_timeout = 500ms});
        auto held = co_await one.async_lock(asio::use_awaitable);
        redlock::mutex both(client, std::vector<std::string>{"{acct}:a", "{acct}:b"},
                            {.ttl = 5000ms, .wait = 0ms, .node_timeout = 500ms});
        auto [ec, l] = co_await both.async_lock(use_tuple);
        BOOST_TEST(ec == error::not_acquired);
        BOOST_TEST(nodes[0].cli({"EXISTS", "{acct}:a"}) == "0");  // not even the free key
        co_await held.async_release(asio::use_awaitable);
        auto got = co_await both.async_lock(asio::use_awaitable);
        BOOST_TEST(co_await soon_holding(nodes, "{acct}:a", got.token(), nodes.size()));
        BOOST_TEST(co_await soon_holding(nodes, "{acct}:b", got.token(), nodes.size()));
        co_await got.async_release(asio::use_awaitable);
        BOOST_TEST(redlock::test::wait_until(
            [&] {
                return nodes[1].cli({"EXISTS", "{acct}:a", "{acct}:b"}) == "0";
            },
            2000ms));
    });
}

BOOST_AUTO_TEST_CASE(the_watchdog_keeps_a_lease_alive_past_its_ttl)
{
    cluster nodes(3);
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), configs(nodes));
    redlock::mutex m(client, "long-job", {.ttl = 600ms, .watchdog = true});
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        auto l = co_await m.async_lock(asio::use_awaitable);
        co_await sleep_for(1800ms);  // three TTLs
        BOOST_TEST(!l.lost());
        BOOST_TEST(co_await soon_holding(nodes, "long-job", l.token(), nodes.size()));
        co_await l.async_release(asio::use_awaitable);
        co_await sleep_for(300ms);  // the watchdog stopped: nothing re-creates the key
        BOOST_TEST(co_await soon_holding(nodes, "long-job", l.token(), 0));
    });
}

BOOST_AUTO_TEST_CASE(max_hold_ends_a_watchdog_lease)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), configs(nodes));
    redlock::mutex m(client, "bounded", {.ttl = 300ms, .watchdog = true, .max_hold = 700ms});
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        auto l = co_await m.async_lock(asio::use_awaitable);
        const auto start = steady::now();
        auto [ec] = co_await l.async_wait_lost(use_tuple);
        const auto held = steady::now() - start;
        BOOST_TEST(ec == error::lost);
        BOOST_TEST((held >= 650ms && held < 1200ms));
    });
}

BOOST_AUTO_TEST_CASE(with_lock_releases_on_return_exception_and_loss)
{
    cluster nodes(3);
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), configs(nodes));
    redlock::mutex m(client, "guarded", {.ttl = 1000ms});
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        int answer = co_await redlock::with_lock(m, [&](const redlock::lease& l) -> asio::awaitable<int> {
            BOOST_TEST(co_await soon_holding(nodes, "guarded", l.token(), 3));
            co_await sleep_for(1500ms);  // longer than the TTL: the watchdog keeps it
            BOOST_TEST(nodes_holding(nodes, "guarded", l.token()) == 3u);
            BOOST_TEST(l.validity() > 0ms);
            co_return 42;
        });
        BOOST_TEST(answer == 42);
        BOOST_TEST(redlock::test::wait_until([&] { return nodes[0].cli({"EXISTS", "guarded"}) == "0"; }, 2000ms));

        try {
            co_await redlock::with_lock(m, []() -> asio::awaitable<void> {
                throw std::runtime_error("body failed");
                co_return;
            });
            BOOST_FAIL("expected the body's exception");
        } catch (const std::runtime_error& e) {
            BOOST_TEST(std::string(e.what()) == "body failed");
        }
        BOOST_TEST(redlock::test::wait_until([&] { return nodes[0].cli({"EXISTS", "guarded"}) == "0"; }, 2000ms));
    });
}

BOOST_AUTO_TEST_CASE(cancelling_a_pending_acquire_is_prompt_and_cleans_up)
{
    cluster nodes(3);
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), configs(nodes));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex holder(client, "contended", {.ttl = 5000ms, .node_timeout = 500ms});
        auto held = co_await holder.async_lock(asio::use_awaitable);
        redlock::mutex waiter(client, "contended", {.ttl = 5000ms, .wait = redlock::lock_options::wait_forever});
        asio::cancellation_signal cancel;
        std::optional<error_code> result;
        waiter.async_lock(
            asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, redlock::lease) { result = ec; }));
        co_await sleep_for(200ms);
        BOOST_TEST(!result.has_value());
        const auto start = steady::now();
        cancel.emit(asio::cancellation_type::terminal);
        for (int i = 0; i < 100 && !result; ++i) co_await sleep_for(2ms);
        BOOST_REQUIRE(result.has_value());
        BOOST_TEST(*result == asio::error::operation_aborted);
        BOOST_TEST((steady::now() - start < 100ms));
        co_await held.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(bad_input_fails_before_any_io)
{
    asio::io_context ctx;
    redlock::client nowhere(ctx.get_executor(), {redlock::parse_url("redis://127.0.0.1:1")});
    redlock::client empty(ctx.get_executor(), {});
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        auto check = [&](redlock::mutex m, std::string_view expected) -> asio::awaitable<void> {
            redlock::diagnostics diag;
            const auto start = steady::now();
            auto [ec, l] = co_await m.async_lock(diag, use_tuple);
            BOOST_TEST(ec == error::invalid_argument);
            BOOST_TEST(diag.client_message().find(expected) != std::string_view::npos, diag.client_message());
            BOOST_TEST((steady::now() - start < 50ms));
        };
        co_await check(redlock::mutex(nowhere, ""), "empty");
        co_await check(redlock::mutex(nowhere, std::vector<std::string>{}), "no key");
        co_await check(redlock::mutex(nowhere, "k", {.ttl = 0ms}), "ttl");
        co_await check(redlock::mutex(nowhere, "k", {.wait = -1ms}), "wait");
        co_await check(redlock::mutex(nowhere, "k", {.ttl = 100ms, .node_timeout = 100ms}), "node_timeout");
        co_await check(redlock::mutex(empty, "k"), "no nodes");
        // Past the bounds where deadlines overflow or the watchdog could never extend in time.
        co_await check(redlock::mutex(nowhere, "k", {.ttl = std::chrono::hours(3'000'000)}), "at most 30 days");
        co_await check(redlock::mutex(nowhere, "k", {.ttl = redlock::lock_options::max_ttl + 1ms}), "at most");
        co_await check(redlock::mutex(nowhere, "k", {.ttl = 3ms, .watchdog = true}), "too short for the watchdog");
    });
}

BOOST_AUTO_TEST_CASE(a_release_wakes_a_waiting_client_at_once)
{
    cluster nodes(3);
    asio::io_context ctx;
    redlock::client a(ctx.get_executor(), configs(nodes));
    redlock::client b(ctx.get_executor(), configs(nodes));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(asio::use_awaitable);
        co_await b.async_connect(asio::use_awaitable);
        redlock::mutex holder(a, "handoff", {.ttl = 30'000ms, .node_timeout = 500ms});
        // Without the release message this waiter would sleep 5 s between attempts.
        redlock::mutex waiter(
            b, "handoff",
            {.ttl = 30'000ms, .wait = 20'000ms, .node_timeout = 500ms, .retry_delay = 5000ms, .retry_jitter = 0ms});
        auto held = co_await holder.async_lock(asio::use_awaitable);
        std::optional<steady::time_point> acquired;
        redlock::lease got;
        waiter.async_lock([&](error_code ec, redlock::lease l) {
            BOOST_TEST(!ec, ec.message());
            acquired = steady::now();
            got = std::move(l);
        });
        co_await sleep_for(300ms);  // the waiter was refused and subscribed
        const auto released = steady::now();
        co_await held.async_release(asio::use_awaitable);
        for (int i = 0; i < 1000 && !acquired; ++i) co_await sleep_for(5ms);
        BOOST_REQUIRE(acquired.has_value());
        const auto handoff = *acquired - released;
        BOOST_TEST_MESSAGE("handoff after release: "
                           << std::chrono::duration_cast<std::chrono::microseconds>(handoff).count() << " us");
        BOOST_TEST((handoff < 2000ms));
        co_await got.async_release(asio::use_awaitable);
    });
}
