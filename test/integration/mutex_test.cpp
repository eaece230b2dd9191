// The mutex on 1, 3 and 5 real nodes: acquire, extend, release, contention, ownership, multi-key, watchdog,
// with_lock, cancellation, bad input, and waiters woken by release messages (or, when a message is lost, by the
// holder's TTL).
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <common/run_coro.hpp>
#include <common/servers/fault_proxy.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_rig.hpp>
#include <sstream>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::nodes_holding;
using redlock::test::redis_rig;
using redlock::test::run_coro;
using redlock::test::sleep_for;
using redlock::test::soon_holding;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

BOOST_DATA_TEST_CASE(acquire_extend_release, data::make({1, 3, 5}), n)
{
    redis_rig rig(n);
    redlock::mutex m(rig.client(), "job:42", {.ttl = 2000ms, .node_timeout = 500ms});
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        auto l = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(l.token().size() == 32u);
        BOOST_TEST(l.keys() == std::vector<std::string>{"job:42"});
        BOOST_TEST((l.validity() > 1900ms && l.validity() <= 2000ms));
        BOOST_TEST(nodes_holding(rig.nodes, "job:42", l.token()) >= rig.client().quorum());
        BOOST_TEST(co_await soon_holding(rig.nodes, "job:42", l.token(), rig.nodes.size()));
        co_await sleep_for(300ms);
        const auto before = l.valid_until();
        co_await l.async_extend(asio::use_awaitable);
        BOOST_TEST((l.valid_until() > before + 250ms));
        co_await l.async_release(asio::use_awaitable);
        BOOST_TEST(co_await soon_holding(rig.nodes, "job:42", l.token(), 0));
        co_await l.async_release(asio::use_awaitable);  // idempotent
        BOOST_TEST(!l.lost());
    });
}

BOOST_DATA_TEST_CASE(a_held_lock_is_not_acquired_by_another_client, data::make({1, 3, 5}), n)
{
    redis_rig rig(n, 2);
    auto& a = rig.client(0);
    auto& b = rig.client(1);
    rig.run([&]() -> asio::awaitable<void> {
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
        BOOST_TEST(co_await soon_holding(rig.nodes, "res", got.token(), rig.nodes.size()));
        co_await got.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(release_by_a_non_owner_fails_and_leaves_the_lock)
{
    redis_rig rig(3);
    redlock::mutex m(rig.client(), "owned", {.ttl = 800ms});
    rig.run([&]() -> asio::awaitable<void> {
        auto first = co_await m.async_lock(asio::use_awaitable);
        co_await sleep_for(900ms);  // it expires (no watchdog)...
        BOOST_TEST(first.lost());
        auto second = co_await m.async_lock(asio::use_awaitable);  // ...and another owner takes it
        auto [ec] = co_await first.async_release(use_tuple);
        BOOST_TEST(ec == error::lost);
        BOOST_TEST(co_await soon_holding(rig.nodes, "owned", second.token(),
                                         rig.nodes.size()));  // the stale release changed nothing
        auto [ext] = co_await first.async_extend(use_tuple);
        BOOST_TEST((ext == error::lost || ext == error::not_owner));
        co_await second.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(several_keys_are_taken_all_or_none)
{
    redis_rig rig(3);
    rig.run([&]() -> asio::awaitable<void> {
        redlock::mutex one(rig.client(), "{acct}:b", {.ttl = 5000ms, .node_timeout = 500ms});
        auto held = co_await one.async_lock(asio::use_awaitable);
        redlock::mutex both(rig.client(), std::vector<std::string>{"{acct}:a", "{acct}:b"},
                            {.ttl = 5000ms, .wait = 0ms, .node_timeout = 500ms});
        auto [ec, l] = co_await both.async_lock(use_tuple);
        BOOST_TEST(ec == error::not_acquired);
        BOOST_TEST(rig.nodes[0].cli({"EXISTS", "{acct}:a"}) == "0");  // not even the free key
        co_await held.async_release(asio::use_awaitable);
        auto got = co_await both.async_lock(asio::use_awaitable);
        BOOST_TEST(co_await soon_holding(rig.nodes, "{acct}:a", got.token(), rig.nodes.size()));
        BOOST_TEST(co_await soon_holding(rig.nodes, "{acct}:b", got.token(), rig.nodes.size()));
        co_await got.async_release(asio::use_awaitable);
        BOOST_TEST(redlock::test::wait_until(
            [&] {
                return rig.nodes[1].cli({"EXISTS", "{acct}:a", "{acct}:b"}) == "0";
            },
            2000ms));
    });
}

BOOST_AUTO_TEST_CASE(the_watchdog_keeps_a_lease_alive_past_its_ttl)
{
    redis_rig rig(3);
    redlock::mutex m(rig.client(), "long-job", {.ttl = 600ms, .watchdog = true});
    rig.run([&]() -> asio::awaitable<void> {
        auto l = co_await m.async_lock(asio::use_awaitable);
        co_await sleep_for(1800ms);  // three TTLs
        BOOST_TEST(!l.lost());
        BOOST_TEST(co_await soon_holding(rig.nodes, "long-job", l.token(), rig.nodes.size()));
        co_await l.async_release(asio::use_awaitable);
        co_await sleep_for(300ms);  // the watchdog stopped: nothing re-creates the key
        BOOST_TEST(co_await soon_holding(rig.nodes, "long-job", l.token(), 0));
    });
}

BOOST_AUTO_TEST_CASE(max_hold_ends_a_watchdog_lease)
{
    redis_rig rig(1);
    redlock::mutex m(rig.client(), "bounded", {.ttl = 300ms, .watchdog = true, .max_hold = 700ms});
    rig.run([&]() -> asio::awaitable<void> {
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
    redis_rig rig(3);
    redlock::mutex m(rig.client(), "guarded", {.ttl = 1000ms});
    rig.run([&]() -> asio::awaitable<void> {
        int answer = co_await redlock::with_lock(m, [&](const redlock::lease& l) -> asio::awaitable<int> {
            BOOST_TEST(co_await soon_holding(rig.nodes, "guarded", l.token(), 3));
            co_await sleep_for(1500ms);  // longer than the TTL: the watchdog keeps it
            BOOST_TEST(nodes_holding(rig.nodes, "guarded", l.token()) == 3u);
            BOOST_TEST(l.validity() > 0ms);
            co_return 42;
        });
        BOOST_TEST(answer == 42);
        BOOST_TEST(redlock::test::wait_until([&] { return rig.nodes[0].cli({"EXISTS", "guarded"}) == "0"; }, 2000ms));

        try {
            co_await redlock::with_lock(m, []() -> asio::awaitable<void> {
                throw std::runtime_error("body failed");
                co_return;
            });
            BOOST_FAIL("expected the body's exception");
        } catch (const std::runtime_error& e) {
            BOOST_TEST(std::string(e.what()) == "body failed");
        }
        BOOST_TEST(redlock::test::wait_until([&] { return rig.nodes[0].cli({"EXISTS", "guarded"}) == "0"; }, 2000ms));
    });
}

// The lease is lost while the body runs: another owner's value replaces ours on a quorum, so the watchdog's
// next extension (every ttl / 3 = 1 s) finds other owners. The body must be cancelled at that extension, not
// when the validity runs out (2 s or more after the overwrite) nor when the body ends (20 s), with_lock must
// throw error::lost, and our token must be gone from the node that still had it (released, not left to the
// TTL) while the other owner's keys stay.
BOOST_AUTO_TEST_CASE(with_lock_cancels_the_body_and_throws_lost_when_the_lease_is_lost)
{
    redis_rig rig(3);
    redlock::mutex m(rig.client(), "guarded", {.ttl = 3000ms, .node_timeout = 500ms});
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        std::string token;
        std::optional<steady::time_point> overwritten, body_cancelled;
        bool body_finished = false;
        std::optional<error_code> thrown;
        try {
            co_await redlock::with_lock(m, [&](const redlock::lease& l) -> asio::awaitable<void> {
                token = l.token();
                const std::string key = "guarded";
                BOOST_TEST(co_await soon_holding(rig.nodes, key, l.token(), 3));
                co_await sleep_for(200ms);
                for (std::size_t i : {1u, 2u}) rig.nodes[i].cli({"SET", "guarded", "intruder", "PX", "60000"});
                overwritten = steady::now();
                asio::steady_timer long_work(co_await asio::this_coro::executor, 20s);
                try {
                    co_await long_work.async_wait(asio::use_awaitable);
                } catch (const boost::system::system_error&) {
                    body_cancelled = steady::now();
                    throw;
                }
                body_finished = true;
            });
        } catch (const boost::system::system_error& e) {
            thrown = e.code();
        }
        const auto returned = steady::now();
        BOOST_REQUIRE(overwritten.has_value());
        BOOST_REQUIRE_MESSAGE(thrown.has_value(), "with_lock returned normally after the lease was lost");
        BOOST_TEST(*thrown == error::lost, thrown->message());
        BOOST_TEST(!body_finished);
        BOOST_REQUIRE_MESSAGE(body_cancelled.has_value(), "the body was not cancelled");
        const auto detected = std::chrono::duration_cast<std::chrono::milliseconds>(*body_cancelled - *overwritten);
        BOOST_TEST_MESSAGE("body cancelled " << detected.count() << " ms after the overwrite");
        // One watchdog interval (1 s) and a round trip; a loss found only when the validity ends comes >= 2 s late.
        BOOST_TEST((detected < 1600ms), detected.count() << " ms");
        BOOST_TEST((returned - *body_cancelled < 500ms));
        // Released at once on the node that still held our token (the TTL alone would keep it ~3 s more).
        co_await sleep_for(200ms);
        BOOST_TEST(nodes_holding(rig.nodes, "guarded", token) == 0u);
        for (std::size_t i : {1u, 2u})
            BOOST_TEST(rig.nodes[i].cli({"GET", "guarded"}) == "intruder");  // not ours to delete
        // Once the other owner is gone, the lock is free.
        for (std::size_t i : {1u, 2u}) rig.nodes[i].cli({"DEL", "guarded"});
        auto [ec, again] = co_await m.async_try_lock(use_tuple);
        BOOST_TEST(!ec, ec.message());
        if (again) co_await again.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(cancelling_a_pending_acquire_is_prompt_and_cleans_up)
{
    redis_rig rig(3);
    rig.run([&]() -> asio::awaitable<void> {
        redlock::mutex holder(rig.client(), "contended", {.ttl = 5000ms, .node_timeout = 500ms});
        auto held = co_await holder.async_lock(asio::use_awaitable);
        redlock::mutex waiter(rig.client(), "contended", {.ttl = 5000ms, .wait = redlock::lock_options::wait_forever});
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

// Cancelled while its attempt is undecided: node 0 refuses (another owner), node 1 granted at once, node 2
// answers only after 2 x 800 ms (a delaying proxy). The cancelled call must release its token on every node:
// node 1 now, node 2 once its late grant lands (the release queues behind the acquire on that connection).
BOOST_AUTO_TEST_CASE(a_cancelled_acquire_that_granted_on_some_nodes_releases_them)
{
    cluster nodes(3);
    redlock::test::fault_proxy slow(nodes[2].port());
    auto cfg = configs(nodes);
    cfg[2] = redlock::test::fast_reconnecting(slow.url());
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), cfg);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await client.async_connect(asio::use_awaitable);
        nodes[0].cli({"SET", "contended", "other-owner", "PX", "60000"});
        slow.set_mode(redlock::test::fault_proxy::mode::delay, 800ms);
        redlock::mutex waiter(client, "contended",
                              {.ttl = 20'000ms, .wait = redlock::lock_options::wait_forever, .node_timeout = 5000ms});
        asio::cancellation_signal cancel;
        std::optional<error_code> result;
        waiter.async_lock(
            asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, redlock::lease) { result = ec; }));
        co_await sleep_for(300ms);
        BOOST_REQUIRE(!result.has_value());
        // The precondition: the attempt granted on node 1 and is still waiting for node 2.
        const auto token = nodes[1].cli({"GET", "contended"});
        BOOST_REQUIRE_MESSAGE(token.size() == 32u, "node 1 did not grant the pending attempt: '" << token << "'");
        BOOST_REQUIRE(nodes[2].cli({"EXISTS", "contended"}) == "0");
        const auto start = steady::now();
        cancel.emit(asio::cancellation_type::terminal);
        for (int i = 0; i < 100 && !result; ++i) co_await sleep_for(2ms);
        BOOST_REQUIRE(result.has_value());
        BOOST_TEST(*result == asio::error::operation_aborted);
        BOOST_TEST((steady::now() - start < 100ms));
        // Node 1 at once; node 2 after its delayed grant and the release behind it (~2 x 800 ms).
        const std::string key = "contended";
        BOOST_TEST(co_await soon_holding(nodes, key, token, 0));
        BOOST_TEST(nodes[1].cli({"EXISTS", "contended"}) == "0");
        BOOST_TEST(nodes[0].cli({"GET", "contended"}) == "other-owner");
        // And nothing re-creates it later (the delayed grant landed before the release).
        co_await sleep_for(1000ms);
        BOOST_TEST(nodes_holding(nodes, "contended", token) == 0u);
        slow.set_mode(redlock::test::fault_proxy::mode::pass);
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
        // A fair waiter's heartbeats could not keep its place: a waiter TTL of 3 node timeouts or less.
        co_await check(redlock::mutex(nowhere, "k", {.node_timeout = 100ms, .fair = true, .waiter_ttl = 300ms}),
                       "above 3 node timeouts");
    });
}

namespace {

// The ids of the connections subscribed to something on `node` (CLIENT LIST: sub=N or ssub=N with N > 0).
std::vector<std::string> subscribed_clients(const redlock::test::redis_node& node)
{
    std::vector<std::string> ids;
    std::istringstream lines(node.cli({"CLIENT", "LIST"}));
    for (std::string line; std::getline(lines, line);) {
        // Classic subscriptions (sub=, Redis 6) or sharded ones (ssub=, Redis 7).
        const auto sub = line.find(" sub="), ssub = line.find(" ssub=");
        const bool classic = sub != std::string::npos && line.compare(sub + 5, 2, "0 ") != 0;
        const bool sharded = ssub != std::string::npos && line.compare(ssub + 6, 2, "0 ") != 0;
        if (!classic && !sharded) continue;
        const auto id = line.find("id=");
        if (id == std::string::npos) continue;
        ids.push_back(line.substr(id + 3, line.find(' ', id) - id - 3));
    }
    return ids;
}

// A holder with a 60 s TTL and a waiter that would sleep 10 s between attempts: once the waiter was refused
// and subscribed, `meanwhile` runs (the test's disturbance), then the holder releases. Only the release
// message can explain a handoff within a round trip or so. Returns how long the handoff took.
template <class Meanwhile>
asio::awaitable<std::chrono::microseconds> handoff_after(redlock::client& a, redlock::client& b, const cluster& nodes,
                                                         const std::string& key, Meanwhile meanwhile)
{
    co_await a.async_connect(asio::use_awaitable);
    co_await b.async_connect(asio::use_awaitable);
    redlock::mutex holder(a, key, {.ttl = 60'000ms, .node_timeout = 500ms});
    redlock::mutex waiter(
        b, key,
        {.ttl = 60'000ms, .wait = 50'000ms, .node_timeout = 500ms, .retry_delay = 10'000ms, .retry_jitter = 0ms});
    auto held = co_await holder.async_lock(asio::use_awaitable);
    std::optional<steady::time_point> acquired;
    redlock::lease got;
    redlock::diagnostics diag;
    waiter.async_lock(diag, [&](error_code ec, redlock::lease l) {
        BOOST_TEST(!ec, ec.message());
        acquired = steady::now();
        got = std::move(l);
    });
    BOOST_TEST(co_await all_listening(nodes, key));  // the waiter was refused and subscribed
    const auto waiting_since = steady::now();
    co_await meanwhile();
    // The holder's own connections may be backing off after the disturbance: its release should not wait for them.
    co_await a.async_connect(asio::use_awaitable);
    BOOST_REQUIRE(!acquired.has_value());
    // Nothing has told the waiter yet: its next retry is ~10 s after its first attempt.
    BOOST_REQUIRE_MESSAGE((steady::now() - waiting_since < 7s), "the disturbance took too long for the test to tell");
    const auto released = steady::now();
    auto [release_ec] = co_await held.async_release(use_tuple);
    BOOST_TEST(!release_ec, release_ec.message());
    for (int i = 0; i < 2000 && !acquired; ++i) co_await sleep_for(5ms);
    BOOST_REQUIRE(acquired.has_value());
    const auto handoff = std::chrono::duration_cast<std::chrono::microseconds>(*acquired - released);
    BOOST_TEST_MESSAGE("handoff after release: " << handoff.count() << " us");
    // The cause, not only the time: the release message woke it, no timer did. (Its attempt may race the release
    // on the other nodes; their copies then make it retry once more, at once.)
    BOOST_TEST(diag.waiting().woken_by_release >= 1u);
    BOOST_TEST(diag.waiting().attempts <= 4u);
    BOOST_TEST(diag.waiting().timed_retries == 0u);
    BOOST_TEST(diag.waiting().notified);
    co_await got.async_release(asio::use_awaitable);
    co_return handoff;
}

std::vector<redlock::node_config> quick_health_checks(const cluster& nodes)
{
    auto out = configs(nodes);
    for (auto& c : out) {
        c.health_check_interval = 100ms;
        c.health_check_timeout = 300ms;
    }
    return out;
}

}  // namespace

// Nothing disturbs the waiter: the release message wakes it at once (handoff_after checks the cause too: no timer
// did), not its holder's 60 s TTL nor its 10 s retry delay.
BOOST_AUTO_TEST_CASE(a_release_wakes_a_waiting_client_at_once)
{
    redis_rig rig(3, 2);
    auto& a = rig.client(0);
    auto& b = rig.client(1);
    rig.run([&]() -> asio::awaitable<void> {
        const auto handoff =
            co_await handoff_after(a, b, rig.nodes, "handoff", []() -> asio::awaitable<void> { co_return; });
        BOOST_TEST((handoff < 2000ms), handoff.count() << " us");
    });
}

// The waiter's connections are cut (a proxy in front of each node resets them, and every reconnect) and the holder
// releases meanwhile: no release message reaches the waiter. It still gets the lock by the end of the holder's TTL
// (when it looks again), not at its 10 s retry delay nor at the end of its wait: it never hangs.
BOOST_DATA_TEST_CASE(a_release_during_a_subscription_outage_costs_at_most_the_holders_ttl, data::make({1, 3}), n)
{
    cluster nodes(static_cast<std::size_t>(n));
    std::vector<std::unique_ptr<redlock::test::fault_proxy>> proxies;
    std::vector<redlock::node_config> through_proxies;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        proxies.push_back(std::make_unique<redlock::test::fault_proxy>(nodes[i].port()));
        through_proxies.push_back(redlock::test::fast_reconnecting(proxies.back()->url()));
    }
    auto set_mode = [&](redlock::test::fault_proxy::mode m) {
        for (auto& p : proxies) p->set_mode(m);
    };
    constexpr auto ttl = 3000ms;
    const std::string key = "outage";
    asio::io_context ctx;
    redlock::client a(ctx.get_executor(), configs(nodes));
    redlock::client b(ctx.get_executor(), through_proxies);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(asio::use_awaitable);
        co_await b.async_connect(asio::use_awaitable);
        redlock::mutex holder(a, key, {.ttl = ttl, .node_timeout = 300ms});
        redlock::mutex waiter(
            b, key,
            {.ttl = 10'000ms, .wait = 20'000ms, .node_timeout = 300ms, .retry_delay = 10'000ms, .retry_jitter = 0ms});
        const auto locked = steady::now();  // the holder's keys expire at most `ttl` after this
        auto held = co_await holder.async_lock(asio::use_awaitable);
        std::optional<steady::time_point> acquired;
        redlock::lease got;
        redlock::diagnostics diag;
        waiter.async_lock(diag, [&](error_code ec, redlock::lease l) {
            BOOST_TEST(!ec, ec.message());
            acquired = steady::now();
            got = std::move(l);
        });
        BOOST_REQUIRE(co_await all_listening(nodes, key));  // refused and subscribed
        set_mode(redlock::test::fault_proxy::mode::reset);
        BOOST_REQUIRE_MESSAGE(co_await all_listening(nodes, key, "0"), "the waiter's subscriptions were not cut");
        auto [release_ec] = co_await held.async_release(use_tuple);  // published to nobody
        BOOST_TEST(!release_ec, release_ec.message());
        co_await sleep_for(300ms);
        BOOST_REQUIRE(!acquired.has_value());
        set_mode(redlock::test::fault_proxy::mode::pass);
        for (int i = 0; i < 2000 && !acquired; ++i) co_await sleep_for(5ms);  // 10 s: a hang, not a slow handoff
        BOOST_REQUIRE_MESSAGE(acquired.has_value(), "the waiter hangs");
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(*acquired - locked);
        BOOST_TEST_MESSAGE("acquired " << took.count() << " ms after the holder locked; attempts "
                                       << diag.waiting().attempts << ", woken by a release "
                                       << diag.waiting().woken_by_release << ", timed retries "
                                       << diag.waiting().timed_retries);
        BOOST_TEST((took < ttl + 1000ms), took.count() << " ms");
        co_await got.async_release(asio::use_awaitable);
    });
}

// The waiter waits five health-check timeouts before the release: its subscribed connections must stay up
// (answering the health check) and still deliver the release message.
BOOST_AUTO_TEST_CASE(a_release_wakes_a_waiter_that_waited_past_the_health_check_timeout)
{
    cluster nodes(3);
    asio::io_context ctx;
    redlock::client a(ctx.get_executor(), quick_health_checks(nodes));
    redlock::client b(ctx.get_executor(), quick_health_checks(nodes));
    const std::string key = "handoff";
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        std::vector<std::vector<std::string>> before;
        auto wait = [&]() -> asio::awaitable<void> {
            for (std::size_t i = 0; i < nodes.size(); ++i) before.push_back(subscribed_clients(nodes[i]));
            co_await sleep_for(1500ms);
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                BOOST_TEST(before[i].size() == 1u);
                BOOST_TEST(subscribed_clients(nodes[i]) == before[i],
                           "node " << i << ": the subscribed connection changed");
            }
        };
        const auto handoff = co_await handoff_after(a, b, nodes, key, wait);
        BOOST_TEST((handoff < 100ms), handoff.count() << " us");
    });
}

// The subscribed connections are killed on every node (CLIENT KILL TYPE pubsub) while the waiter waits: they
// reconnect and subscribe again, and the release still wakes the waiter.
BOOST_AUTO_TEST_CASE(a_release_wakes_a_waiter_whose_subscriptions_were_killed)
{
    redis_rig rig(3, 2);
    auto& a = rig.client(0);
    auto& b = rig.client(1);
    const std::string key = "handoff";
    rig.run([&]() -> asio::awaitable<void> {
        auto kill = [&]() -> asio::awaitable<void> {
            for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
                BOOST_REQUIRE(subscribed_clients(rig.nodes[i]).size() == 1u);
                BOOST_TEST(rig.nodes[i].cli({"CLIENT", "KILL", "TYPE", "pubsub"}) == "1");
            }
            co_await sleep_for(100ms);
            BOOST_TEST(co_await all_listening(rig.nodes, key), "the subscriptions were not restored");
        };
        const auto handoff = co_await handoff_after(a, b, rig.nodes, key, kill);
        BOOST_TEST((handoff < 100ms), handoff.count() << " us");
    });
}

// Every node restarts (one at a time; the keys persist) while the waiter waits: the waiter's connections
// reconnect and subscribe again, and the release still wakes it within a round trip.
BOOST_AUTO_TEST_CASE(a_release_wakes_a_waiter_across_node_restarts)
{
    redlock::test::node_options persistent;
    persistent.persistence = true;
    redis_rig rig(3, 2, persistent);
    auto& a = rig.client(0);
    auto& b = rig.client(1);
    const std::string key = "handoff";
    rig.run([&]() -> asio::awaitable<void> {
        auto restart = [&]() -> asio::awaitable<void> {
            for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
                rig.nodes[i].restart();
                BOOST_TEST(co_await all_listening(rig.nodes, key), "node " << i << ": not subscribed again");
            }
            BOOST_TEST(rig.nodes[0].cli({"EXISTS", "handoff"}) == "1");  // the holder's key survived
        };
        const auto handoff = co_await handoff_after(a, b, rig.nodes, key, restart);
        BOOST_TEST((handoff < 100ms), handoff.count() << " us");
    });
}

// An ACL user with key and command rights but no channel rights (Redis 7's default resetchannels) on every
// node: each waiter's SUBSCRIBE is refused, so waiters fall back to timed retries. Several clients contend on
// one key: every lock succeeds, the increments made under it are exact, no release fails, and no connection
// broke (a refused SUBSCRIBE that shifted the replies would make requests read others' replies, or break the
// connection with a protocol error).
BOOST_AUTO_TEST_CASE(contention_without_channel_rights_stays_exact_and_every_lock_succeeds)
{
    cluster nodes(3);
    for (std::size_t i = 0; i < nodes.size(); ++i)
        BOOST_REQUIRE(nodes[i].cli({"ACL", "SETUSER", "locker", "on", ">pw", "~*", "+@all", "resetchannels"}) == "OK");
    std::vector<redlock::node_config> as_locker;
    for (auto c : configs(nodes)) {
        c.username = "locker";
        c.password = "pw";
        as_locker.push_back(c);
    }
    auto connections_received = [&](std::size_t i) {
        const auto info = nodes[i].cli({"INFO", "stats"});
        const auto at = info.find("total_connections_received:");
        return std::stol(info.substr(at + std::string("total_connections_received:").size()));
    };
    asio::io_context ctx;
    std::vector<std::unique_ptr<redlock::client>> clients;
    for (std::size_t i = 0; i < 4; ++i)
        clients.push_back(std::make_unique<redlock::client>(ctx.get_executor(), redlock::test::rotated(as_locker, i)));
    constexpr int per_worker = 12;
    constexpr int workers_per_client = 2;
    const int workers = static_cast<int>(clients.size()) * workers_per_client;
    long counter = 0;
    int inside = 0, overlaps = 0, finished = 0;
    std::vector<std::string> failures;
    long waited = 0;  // locks that had to wait for another holder
    std::vector<long> connections_before;

    auto worker = [&](redlock::client& c) -> asio::awaitable<void> {
        redlock::mutex m(
            c, "shared",
            {.ttl = 2000ms, .wait = 20'000ms, .node_timeout = 200ms, .retry_delay = 20ms, .retry_jitter = 10ms});
        for (int k = 0; k < per_worker; ++k) {
            redlock::diagnostics diag;
            const auto start = steady::now();
            auto [ec, held] = co_await m.async_lock(diag, use_tuple);
            if (ec) {
                failures.push_back("lock: " + ec.message() + ": " + std::string(diag.message()));
                continue;
            }
            if (steady::now() - start > 10ms) ++waited;
            if (inside++ != 0) ++overlaps;
            const long value = counter;
            co_await sleep_for(2ms);
            counter = value + 1;
            --inside;
            auto [rec] = co_await held.async_release(diag, use_tuple);
            if (rec) failures.push_back("release: " + rec.message() + ": " + std::string(diag.message()));
        }
        ++finished;
    };
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        for (auto& c : clients) co_await c->async_connect(asio::use_awaitable);
        for (std::size_t i = 0; i < nodes.size(); ++i) connections_before.push_back(connections_received(i));
        for (auto& c : clients)
            for (int w = 0; w < workers_per_client; ++w) asio::co_spawn(ctx, worker(*c), asio::detached);
        const auto deadline = steady::now() + 40s;
        while (finished < workers && steady::now() < deadline) co_await sleep_for(20ms);
    });
    BOOST_REQUIRE_MESSAGE(finished == workers, finished << " of " << workers << " workers finished");
    BOOST_TEST_MESSAGE(counter << " increments, " << waited << " locks waited for another holder");
    std::string all_failures;
    for (const auto& f : failures) all_failures += f + "; ";
    BOOST_TEST(failures.empty(), all_failures);
    BOOST_TEST(overlaps == 0);
    BOOST_TEST(counter == static_cast<long>(workers * per_worker));
    BOOST_TEST(waited > 0);  // there was contention, so waiters did subscribe (and were refused)
    for (std::size_t i = 0; i < nodes.size(); ++i)
        // + 1: this INFO's own redis-cli connection.
        BOOST_TEST(connections_received(i) == connections_before[i] + 1, "node " << i << ": a connection was re-made");
    for (std::size_t i = 0; i < nodes.size(); ++i) BOOST_TEST(nodes[i].cli({"EXISTS", "shared"}) == "0");
}
