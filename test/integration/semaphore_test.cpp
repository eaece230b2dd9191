// The counting semaphore on real nodes: at most `limit` permits, permits of several units, waiting by release
// messages, release and extend that say what happened, expiry by the server's clock, keys that all expire,
// set_limit, inspection, with_permit, the quorum rule and bad input.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <common/models/fair_queue.hpp>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_rig.hpp>
#include <stdexcept>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::redis_rig;
using redlock::test::run_coro;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

const std::string name = "workers";

redlock::semaphore_options options(std::chrono::milliseconds wait = 0ms)
{
    redlock::semaphore_options o;
    o.ttl = 10'000ms;
    o.wait = wait;
    o.node_timeout = 300ms;
    o.retry_delay = 10'000ms;  // a waiter that retries on its timer shows in the time it takes
    return o;
}

// The units a node counts as held (its running total, expired permits not yet dropped included); 0 without one.
long units_on(const redlock::test::redis_node& node)
{
    const auto held = node.cli({"HGET", redlock::aux_name(name, "units"), "held"});
    return held.empty() ? 0 : std::stol(held);
}

// Members of the permits' set on a node: one per permit, whatever its units.
long permits_on(const redlock::test::redis_node& node)
{
    return std::stol(node.cli({"ZCARD", name}));
}

// The server's mean time per script call on a node (INFO commandstats), in microseconds.
long script_usec_per_call(const redlock::test::redis_node& node)
{
    return std::max(node.command_stat("evalsha", "usec_per_call"), node.command_stat("eval", "usec_per_call"));
}

// Waiters in the fair queue of every node (the queue's key follows the semaphore's name: aux_name).
asio::awaitable<bool> until_queued(const cluster& nodes, std::size_t waiters)
{
    const auto deadline = steady::now() + 3s;
    for (;;) {
        bool all = true;
        for (std::size_t i = 0; i < nodes.size(); ++i)
            all = all && redlock::test::fair_queue_length(nodes[i], name) == waiters;
        if (all) co_return true;
        if (steady::now() >= deadline) co_return false;
        co_await sleep_for(5ms);
    }
}

asio::awaitable<bool> until_units(const cluster& nodes, long units)
{
    const auto deadline = steady::now() + 3s;
    for (;;) {
        bool all = true;
        for (std::size_t i = 0; i < nodes.size(); ++i) all = all && units_on(nodes[i]) == units;
        if (all) co_return true;
        if (steady::now() >= deadline) co_return false;
        co_await sleep_for(5ms);
    }
}

}  // namespace

BOOST_DATA_TEST_CASE(at_most_limit_permits_are_granted_and_a_release_lets_the_next_in, data::make({1, 3}), n)
{
    redis_rig rig(n);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::semaphore s(rig.client(), name, 3, options());
        auto [e1, two] = co_await s.async_acquire(2, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        BOOST_TEST(two.count() == 2);
        BOOST_TEST(two.name() == name);
        BOOST_TEST(two.id().size() == 32u);
        auto [e2, one] = co_await s.async_acquire(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e2, e2.message());
        BOOST_TEST(one.id() != two.id());
        BOOST_TEST(co_await until_units(rig.nodes, 3));

        redlock::diagnostics diag;
        auto [e3, none] = co_await s.async_try_acquire(1, diag, use_tuple);
        BOOST_TEST(e3 == error::not_acquired, e3.message() << ": " << diag.message());
        BOOST_TEST(!none);
        co_await one.async_release(asio::use_awaitable);
        auto [e4, again] = co_await s.async_try_acquire(use_tuple);
        BOOST_TEST(!e4, e4.message());
        auto [e5, too_many] = co_await s.async_try_acquire(2, use_tuple);  // one free, two asked
        BOOST_TEST(e5 == error::not_acquired);
        co_await two.async_release(asio::use_awaitable);
        co_await again.async_release(asio::use_awaitable);
        BOOST_TEST(co_await until_units(rig.nodes, 0));
    });
}

// A waiter sleeps until a release message: with a 10 s retry delay and permits held for a minute, only the
// message can wake it in time. A release of 3 permits wakes 3 waiters of one client.
BOOST_AUTO_TEST_CASE(a_release_of_k_permits_wakes_k_waiters_by_message)
{
    redis_rig rig(3, 2);
    auto& holder_client = rig.client(0);
    auto& waiters = rig.client(1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await holder_client.async_connect(asio::use_awaitable);
        co_await waiters.async_connect(asio::use_awaitable);
        auto o = options(30'000ms);
        o.ttl = 60'000ms;
        auto [e1, all] = co_await redlock::semaphore(holder_client, name, 3, o).async_acquire(3, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        std::vector<redlock::diagnostics> diags(3);
        std::vector<std::optional<error_code>> results(3);
        std::vector<redlock::permit> got(3);
        redlock::semaphore s(waiters, name, 3, o);
        for (std::size_t i = 0; i < 3; ++i)
            s.async_acquire(1, diags[i], [&, i](error_code e, redlock::permit p) {
                results[i] = e;
                got[i] = std::move(p);
            });
        while (std::any_of(diags.begin(), diags.end(), [](auto& d) { return d.waiting().attempts < 1; }))
            co_await sleep_for(5ms);
        co_await sleep_for(300ms);  // each refused, subscribed (and checked again): asleep now
        const auto released = steady::now();
        co_await all.async_release(asio::use_awaitable);
        while (std::any_of(results.begin(), results.end(), [](auto& r) { return !r; })) co_await sleep_for(2ms);
        BOOST_TEST_MESSAGE("3 waiters granted " << (steady::now() - released) / 1us << " us after the release");
        for (std::size_t i = 0; i < 3; ++i) {
            BOOST_TEST(!*results[i], results[i]->message() << ": " << diags[i].message());
            BOOST_TEST(diags[i].waiting().timed_retries == 0u);  // woken by the message, never by a timer
            BOOST_TEST(diags[i].waiting().woken_by_release >= 1u);
            co_await got[i].async_release(use_tuple);
        }
    });
}

// "Released" only for a permit that was held: one whose units are gone on a quorum says not_owner, one past
// its validity says lost.
BOOST_AUTO_TEST_CASE(release_never_says_released_for_a_permit_that_was_not_held)
{
    redis_rig rig(3);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::semaphore s(rig.client(), name, 2, options());
        auto [e1, p] = co_await s.async_acquire(2, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        BOOST_REQUIRE(co_await until_units(rig.nodes, 2));
        for (std::size_t i = 0; i < 2; ++i) rig.nodes[i].cli({"ZREM", name, p.id()});  // gone on a quorum
        redlock::diagnostics diag;
        auto [rel] = co_await p.async_release(diag, use_tuple);
        BOOST_TEST(rel == error::not_owner, rel.message() << ": " << diag.message());

        auto o = options();
        o.ttl = 300ms;
        o.node_timeout = 50ms;
        auto [e2, brief] = co_await redlock::semaphore(rig.client(), name, 2, o).async_acquire(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e2, e2.message());
        co_await sleep_for(600ms);
        BOOST_TEST(brief.lost());
        auto [rel2] = co_await brief.async_release(use_tuple);
        BOOST_TEST(rel2 == error::lost, rel2.message());
    });
}

// A permit of max_limit units costs a node what a permit of one unit does: granted within the default node timeout
// (50 ms), extended and released, on 1 and 3 nodes, each script a small fraction of a millisecond of the server's
// time. (With a member per unit, each took seconds: no node answered in time, and every attempt stalled the node
// for all its other clients.)
BOOST_DATA_TEST_CASE(a_permit_of_max_limit_units_is_granted_extended_and_released_in_the_default_node_timeout,
                     data::make({1, 3}), n)
{
    constexpr auto all = redlock::semaphore::max_limit;
    redis_rig rig(n);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::semaphore s(rig.client(), name, all, {.wait = 0ms});  // the default ttl (10 s) and node timeout
        redlock::diagnostics diag;
        auto [e1, p] = co_await s.async_acquire(all, diag, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message() << ": " << diag.message());
        BOOST_TEST(p.count() == all);
        auto [e2, none] = co_await s.async_try_acquire(1, diag, use_tuple);
        BOOST_TEST(e2 == error::not_acquired, e2.message() << ": " << diag.message());
        auto [e3, seen] = co_await s.async_inspect(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e3, e3.message());
        for (const auto& v : seen.nodes) {
            BOOST_TEST(v.held() == all);
            BOOST_TEST(v.available().value_or(-1) == 0);
        }
        auto [e4, remaining] = co_await p.async_extend(diag, use_tuple);
        BOOST_TEST(!e4, e4.message() << ": " << diag.message());
        BOOST_TEST(remaining.count() == 10'000);
        auto [e5] = co_await p.async_release(diag, use_tuple);
        BOOST_TEST(!e5, e5.message() << ": " << diag.message());
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            BOOST_TEST(permits_on(rig.nodes[i]) == 0);
            BOOST_TEST(units_on(rig.nodes[i]) == 0);
        }
    });
    for (std::size_t i = 0; i < rig.nodes.size(); ++i)
        BOOST_TEST(script_usec_per_call(rig.nodes[i]) < 20'000,
                   "node " << i << ": " << script_usec_per_call(rig.nodes[i]) << " us of server time per script");
}

// Permits of 1, 5 and 1000 units side by side (limit 1006): never more units than the limit; one member each,
// and each node counts exactly their units; a permit whose lease lapses frees exactly its 5 units; a release frees
// exactly its own. A count that a key deleted by hand no longer backs is counted again from the permits, never
// trusted: the total gone (the permits still count) or the permits' set gone (they no longer do).
BOOST_DATA_TEST_CASE(permits_of_1_5_and_1000_units_count_exactly_their_units, data::make({1, 3}), n)
{
    constexpr std::int64_t limit = 1006;
    redis_rig rig(n);
    const auto on_every_node = [&](auto check) {
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) check(rig.nodes[i]);
    };
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::semaphore s(rig.client(), name, limit, options());
        auto brief_options = options();
        brief_options.ttl = 1000ms;
        auto [e1, thousand] = co_await s.async_acquire(1000, use_tuple);
        auto [e2, one] = co_await s.async_acquire(1, use_tuple);
        auto [e3, five] =
            co_await redlock::semaphore(rig.client(), name, limit, brief_options).async_acquire(5, use_tuple);
        BOOST_REQUIRE(!e1);
        BOOST_REQUIRE(!e2);
        BOOST_REQUIRE(!e3);
        on_every_node([&](const auto& node) {
            BOOST_TEST(permits_on(node) == 3);
            BOOST_TEST(units_on(node) == limit);
        });
        auto [full, none] = co_await s.async_try_acquire(1, use_tuple);
        BOOST_TEST(full == error::not_acquired, full.message());

        co_await sleep_for(1200ms);  // the five's lease lapses: nobody extends it
        auto [ec, seen] = co_await s.async_inspect(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        for (const auto& v : seen.nodes) {
            BOOST_TEST(v.held() == 1001);
            BOOST_TEST(v.available().value_or(-1) == 5);
        }
        auto [e4, six] = co_await s.async_try_acquire(6, use_tuple);
        BOOST_TEST(e4 == error::not_acquired, e4.message());
        auto [e5, five_again] = co_await s.async_try_acquire(5, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e5, e5.message());
        on_every_node([&](const auto& node) {
            BOOST_TEST(permits_on(node) == 3);
            BOOST_TEST(units_on(node) == limit);
        });

        co_await thousand.async_release(asio::use_awaitable);
        on_every_node([&](const auto& node) { BOOST_TEST(units_on(node) == 6); });
        auto [e6, too_many] = co_await s.async_try_acquire(1001, use_tuple);
        BOOST_TEST(e6 == error::not_acquired, e6.message());
        auto [e7, rest] = co_await s.async_try_acquire(1000, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e7, e7.message());
        co_await rest.async_release(asio::use_awaitable);

        on_every_node([&](const auto& node) { node.cli({"HDEL", redlock::aux_name(name, "units"), "held"}); });
        auto [e8, past_the_total] = co_await s.async_try_acquire(1001, use_tuple);
        BOOST_TEST(e8 == error::not_acquired, e8.message());  // the 6 units held still count
        on_every_node([&](const auto& node) { BOOST_TEST(units_on(node) == 6); });

        on_every_node([&](const auto& node) { node.cli({"DEL", name}); });
        auto [e9, everything] = co_await s.async_try_acquire(limit, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e9, e9.message());  // the permits are gone there: their 6 units no longer count
        on_every_node([&](const auto& node) { BOOST_TEST(units_on(node) == limit); });
        co_await everything.async_release(asio::use_awaitable);
        on_every_node([&](const auto& node) { BOOST_TEST(node.cli({"EXISTS", name, "{workers}:units"}) == "0"); });
    });
}

// A release of 5 units among permits of 1 and 1000 (limit 1006, all taken) publishes "+5": of six waiters for one
// unit, five are woken by its message and granted, and the sixth, for which nothing is free, waits on until the
// release of the 1-unit permit wakes it.
BOOST_AUTO_TEST_CASE(a_release_of_5_units_wakes_5_waiters_and_the_sixth_waits_for_the_next)
{
    constexpr std::int64_t limit = 1006;
    redis_rig rig(3, 2);
    auto& holder = rig.client(0);
    auto& waiters = rig.client(1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await holder.async_connect(asio::use_awaitable);
        co_await waiters.async_connect(asio::use_awaitable);
        auto o = options(30'000ms);
        o.ttl = 60'000ms;
        redlock::semaphore held(holder, name, limit, o);
        auto [e1, thousand] = co_await held.async_acquire(1000, use_tuple);
        auto [e2, five] = co_await held.async_acquire(5, use_tuple);
        auto [e3, one] = co_await held.async_acquire(1, use_tuple);
        BOOST_REQUIRE(!e1);
        BOOST_REQUIRE(!e2);
        BOOST_REQUIRE(!e3);
        BOOST_REQUIRE(co_await until_units(rig.nodes, limit));

        constexpr std::size_t count = 6;
        std::vector<redlock::diagnostics> diags(count);
        std::vector<std::optional<error_code>> results(count);
        std::vector<redlock::permit> got(count);
        redlock::semaphore s(waiters, name, limit, o);
        for (std::size_t i = 0; i < count; ++i)
            s.async_acquire(1, diags[i], [&, i](error_code e, redlock::permit p) {
                results[i] = e;
                got[i] = std::move(p);
            });
        while (std::any_of(diags.begin(), diags.end(), [](auto& d) { return d.waiting().attempts < 1; }))
            co_await sleep_for(5ms);
        co_await sleep_for(300ms);  // each refused, subscribed (and checked again): asleep now
        const auto granted = [&] {
            return std::count_if(results.begin(), results.end(), [](auto& r) { return r && !*r; });
        };
        co_await five.async_release(asio::use_awaitable);
        const auto deadline = steady::now() + 3s;
        while (granted() < 5 && steady::now() < deadline) co_await sleep_for(2ms);
        co_await sleep_for(300ms);  // time enough for a sixth grant, were one possible
        BOOST_TEST(granted() == 5);
        BOOST_TEST(std::count_if(results.begin(), results.end(), [](auto& r) { return !r; }) == 1);
        co_await one.async_release(asio::use_awaitable);
        while (granted() < 6 && steady::now() < deadline + 3s) co_await sleep_for(2ms);
        BOOST_TEST(granted() == 6);
        for (std::size_t i = 0; i < count; ++i) {
            BOOST_TEST(diags[i].waiting().timed_retries == 0u);  // woken by the messages, never by a timer
            co_await got[i].async_release(use_tuple);
        }
        co_await thousand.async_release(asio::use_awaitable);
        BOOST_TEST(co_await until_units(rig.nodes, 0));
    });
}

// A refusal's wait reads the 64 permits that expire first, at most: when room needs more of them to expire (66 of
// 100 permits of one unit), the waiter looks again when the 64th does, early and never late, and is granted as
// soon as enough have expired, not at its 30 s retry delay.
BOOST_AUTO_TEST_CASE(a_wait_for_more_than_64_permits_to_expire_ends_when_they_have)
{
    redis_rig rig(1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        auto o = options();
        std::vector<redlock::permit> held;
        for (const auto& [count, ttl] : {std::pair{64, 2000ms}, std::pair{36, 4000ms}}) {
            o.ttl = ttl;
            redlock::semaphore s(rig.client(), name, 100, o);
            for (int i = 0; i < count; ++i) held.push_back(co_await s.async_acquire(asio::use_awaitable));
        }
        o = options(10'000ms);
        o.retry_delay = 30'000ms;
        redlock::diagnostics diag;
        const auto start = steady::now();
        auto [ec, p] = co_await redlock::semaphore(rig.client(), name, 100, o).async_acquire(66, diag, use_tuple);
        const auto took = steady::now() - start;
        BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
        BOOST_TEST_MESSAGE("granted after " << took / 1ms << " ms and " << diag.waiting().attempts << " attempts");
        BOOST_TEST((took < 5000ms), took / 1ms << " ms");
        co_await p.async_release(asio::use_awaitable);
    });
}

// Expiry is the server's: a node whose clock runs an hour ahead scores the permit an hour ahead too, and the
// extension reports what the node gives the permit by its own clock.
BOOST_AUTO_TEST_CASE(expiry_and_extension_are_in_server_time)
{
    redlock::test::node_options shimmed;
    shimmed.clock_shim = true;
    redis_rig rig(1, 1, shimmed);
    rig.nodes[0].set_clock(3'600'000);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        auto [ec, p] = co_await redlock::semaphore(rig.client(), name, 2, options()).async_acquire(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        auto server_ms = [&] {
            const auto t = rig.nodes[0].cli({"TIME"});  // "seconds\nmicroseconds"
            const auto nl = t.find('\n');
            return std::stoll(t.substr(0, nl)) * 1000 + std::stoll(t.substr(nl + 1)) / 1000;
        };
        const auto left = std::stoll(rig.nodes[0].cli({"ZSCORE", name, p.id()})) - server_ms();
        BOOST_TEST((left > 9'000 && left <= 10'000), left << " ms left by the server's clock");
        auto [e2, remaining] = co_await p.async_extend(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e2, e2.message());
        BOOST_TEST(remaining.count() == 10'000);
        co_await p.async_release(asio::use_awaitable);
    });
}

// Every key a semaphore writes has a TTL: a holder and a fair waiter that vanish (their process stops) leave
// nothing behind once the permit's TTL, the waiter's TTLs and the margin have passed.
BOOST_AUTO_TEST_CASE(an_abandoned_semaphore_leaves_no_key_behind)
{
    cluster nodes(1);
    {
        asio::io_context ctx;
        redlock::client c(ctx.get_executor(), configs(nodes));
        run_coro(ctx, [&]() -> asio::awaitable<void> {
            auto o = options(30'000ms);
            o.ttl = 800ms;
            o.fair = true;
            o.waiter_ttl = 1000ms;
            redlock::semaphore s(c, name, 1, o);
            auto [ec, held] = co_await s.async_acquire(use_tuple);
            BOOST_REQUIRE_MESSAGE(!ec, ec.message());
            s.async_acquire([](error_code, redlock::permit) {});  // a waiter, queued behind
            while (redlock::test::fair_queue_length(nodes[0], name) != 1) co_await sleep_for(5ms);
            for (const auto& key :
                 {name, std::string("{workers}:units"), std::string("{workers}:limit"), std::string("{workers}:queue"),
                  std::string("{workers}:alive"), std::string("{workers}:ticket")})
                BOOST_TEST(std::stol(nodes[0].cli({"PTTL", key})) > 0, key << " has no TTL");
            ctx.stop();  // the process "dies": no release, no leave, no heartbeat
        });
    }
    const auto deadline = steady::now() + 6s;
    while (!nodes[0].cli({"KEYS", "*"}).empty() && steady::now() < deadline) std::this_thread::sleep_for(50ms);
    BOOST_TEST(nodes[0].cli({"KEYS", "*"}).empty());
}

// A larger limit wakes the waiters at once; a smaller one revokes nothing: the holders keep (and extend) their
// permits, and new ones wait until the holders fit under it.
BOOST_AUTO_TEST_CASE(set_limit_up_wakes_waiters_and_down_revokes_nothing)
{
    redis_rig rig(3, 2);
    auto& c = rig.client(0);
    auto& admin = rig.client(1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await c.async_connect(asio::use_awaitable);
        co_await admin.async_connect(asio::use_awaitable);
        redlock::semaphore s(c, name, 1, options(30'000ms));
        auto [e1, first] = co_await s.async_acquire(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        redlock::diagnostics diag;
        std::optional<error_code> waited;
        redlock::permit second;
        s.async_acquire(1, diag, [&](error_code e, redlock::permit p) {
            waited = e;
            second = std::move(p);
        });
        while (diag.waiting().attempts < 1) co_await sleep_for(5ms);
        co_await sleep_for(300ms);  // asleep
        co_await redlock::semaphore(admin, name, 1).async_set_limit(2, asio::use_awaitable);
        while (!waited) co_await sleep_for(2ms);
        BOOST_TEST(!*waited, waited->message());
        BOOST_TEST(diag.waiting().timed_retries == 0u);

        co_await redlock::semaphore(admin, name, 1).async_set_limit(1, asio::use_awaitable);
        auto [x1, r1] = co_await first.async_extend(use_tuple);
        auto [x2, r2] = co_await second.async_extend(use_tuple);
        BOOST_TEST(!x1, x1.message());  // both still held: nothing revoked
        BOOST_TEST(!x2, x2.message());
        auto [e3, third] = co_await s.async_try_acquire(use_tuple);
        BOOST_TEST(e3 == error::not_acquired);
        co_await first.async_release(asio::use_awaitable);
        auto [e4, fourth] = co_await s.async_try_acquire(use_tuple);  // one held, limit 1: still full
        BOOST_TEST(e4 == error::not_acquired);
        co_await second.async_release(asio::use_awaitable);
        auto [e5, fifth] = co_await s.async_try_acquire(use_tuple);
        BOOST_TEST(!e5, e5.message());
        co_await fifth.async_release(asio::use_awaitable);
    });
}

// Another process shrinks the limit to 1 while a waiter wants 2 (2 of 3 held). The shrink wakes it and it fails at
// once with exceeds_limit, the stored limit in its diagnostics (without the wake-up it would sleep until the
// holder's permits expire, 10 s; without the check, until its wait ends, 30 s, and say not_acquired). A fair one
// also leaves the queue: the waiter behind it is served as soon as the holder gives back, not a waiter TTL later.
BOOST_DATA_TEST_CASE(a_waiter_for_more_than_a_shrunk_limit_fails_promptly_with_exceeds_limit, data::make({false, true}),
                     fair)
{
    redis_rig rig(3, 3);
    auto& holder = rig.client(0);
    auto& waiter = rig.client(1);
    auto& admin = rig.client(2);
    rig.run([&]() -> asio::awaitable<void> {
        for (auto* c : {&holder, &waiter, &admin}) co_await c->async_connect(asio::use_awaitable);
        auto o = options(30'000ms);
        o.fair = fair;
        auto [e1, two] = co_await redlock::semaphore(holder, name, 3, o).async_acquire(2, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        redlock::diagnostics diag;
        std::optional<error_code> result;
        redlock::semaphore s(waiter, name, 3, o);
        s.async_acquire(2, diag, [&](error_code e, redlock::permit) { result = e; });
        while (diag.waiting().attempts < 1) co_await sleep_for(5ms);
        co_await sleep_for(300ms);  // refused, subscribed: asleep
        std::optional<error_code> behind;
        redlock::permit behind_permit;
        if (fair) {
            redlock::semaphore(holder, name, 3, o).async_acquire(1, [&](error_code e, redlock::permit p) {
                behind = e;
                behind_permit = std::move(p);
            });
            BOOST_REQUIRE(co_await until_queued(rig.nodes, 2));
        }
        const auto shrunk = steady::now();
        co_await redlock::semaphore(admin, name, 3).async_set_limit(1, asio::use_awaitable);
        while (!result && steady::now() - shrunk < 15s) co_await sleep_for(2ms);
        BOOST_REQUIRE(result.has_value());
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - shrunk);
        BOOST_TEST_MESSAGE("failed " << took.count() << " ms after the shrink: " << diag.client_message());
        BOOST_TEST(*result == error::exceeds_limit, result->message() << ": " << diag.message());
        BOOST_TEST(*result == redlock::condition::not_acquired);
        BOOST_TEST((took < 1s), took.count() << " ms");
        BOOST_TEST(diag.client_message().find("a limit of 1") != std::string_view::npos, diag.client_message());
        BOOST_TEST(waiter.stats().failures.exceeds_limit == 1u);
        BOOST_TEST(waiter.stats().failures.not_acquired == 0u);
        BOOST_TEST(redlock::to_prometheus(waiter.stats())
                       .find("redlock_acquire_failures_total{reason=\"exceeds_limit\"} 1\n") != std::string::npos);
        if (fair) {
            BOOST_TEST(co_await until_queued(rig.nodes, 1));  // it left every node's queue
            co_await two.async_release(asio::use_awaitable);
            const auto released = steady::now();
            while (!behind && steady::now() - released < 10s) co_await sleep_for(2ms);
            BOOST_REQUIRE(behind.has_value());
            BOOST_TEST(!*behind, behind->message());
            BOOST_TEST((steady::now() - released < 1s));  // not after the head's waiter TTL (2 s)
            co_await behind_permit.async_release(use_tuple);
        } else {
            co_await two.async_release(asio::use_awaitable);
        }
    });
}

// 12 coroutines of 3 clients take and give back permits while the limit moves between 2 and 4: every grant
// fits the limit in force (the larger one while a change is on its way), and the grants go on throughout.
BOOST_AUTO_TEST_CASE(set_limit_under_load_bounds_every_grant_by_the_limit_in_force)
{
    redis_rig rig(3, 4);
    int inside = 0, over = 0, grants = 0;
    std::int64_t ceiling = 2;  // the largest limit a node may have right now
    bool done = false;
    auto worker = [&](redlock::client& c) -> asio::awaitable<void> {
        redlock::semaphore s(c, name, 2, options(30'000ms));
        while (!done) {
            auto [ec, p] = co_await s.async_acquire(use_tuple);
            if (ec) continue;
            ++grants;
            if (++inside > ceiling) ++over;
            co_await sleep_for(std::chrono::milliseconds(1 + grants % 4));
            --inside;  // before the release: the nodes count it until then
            co_await p.async_release(use_tuple);
        }
    };
    rig.run(
        [&]() -> asio::awaitable<void> {
            for (auto& c : rig.clients) co_await c->async_connect(asio::use_awaitable);
            for (int i = 0; i < 12; ++i)
                asio::co_spawn(rig.ctx, worker(*rig.clients[static_cast<std::size_t>(i % 3)]), asio::detached);
            redlock::semaphore admin(*rig.clients[3], name, 2);
            for (int round = 0; round < 8; ++round) {
                co_await sleep_for(100ms);
                const std::int64_t next = round % 2 == 0 ? 4 : 2;
                ceiling = std::max(ceiling, next);  // a grant may see the larger while the change is on its way
                co_await admin.async_set_limit(next, asio::use_awaitable);
                // Set on every node. A grant decided before may still be completing in its client: then no
                // grant exceeds the new limit (the holders above a smaller one give back within ms).
                co_await sleep_for(100ms);
                ceiling = next;
            }
            done = true;
            while (inside > 0) co_await sleep_for(5ms);
            co_await sleep_for(100ms);
        },
        120s);
    BOOST_TEST(over == 0);
    BOOST_TEST(grants > 100);
}

// The nodes keep the limit, and the quorum follows the limit they report: a caller that says 1 (Q = 2 of 3)
// on nodes set to 3 (Q = 3) must not be granted with one node down.
BOOST_AUTO_TEST_CASE(the_quorum_follows_the_limit_the_nodes_report)
{
    redis_rig rig(3);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        co_await redlock::semaphore(rig.client(), name, 1).async_set_limit(3, asio::use_awaitable);
        for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(rig.nodes[i].cli({"GET", "{workers}:limit"}) == "3");
        redlock::semaphore s(rig.client(), name, 1, options());
        BOOST_TEST(s.quorum() == 2u);
        auto [e1, p1] = co_await s.async_acquire(use_tuple);  // all up: granted by 3 (the quorum of limit 3)
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        auto [e2, p2] = co_await s.async_acquire(use_tuple);  // the nodes' limit, not the caller's 1
        BOOST_TEST(!e2, e2.message());
        rig.nodes[2].kill();
        redlock::diagnostics diag;
        auto [e3, p3] = co_await s.async_acquire(1, diag, use_tuple);
        BOOST_TEST(e3 == error::no_quorum, e3.message() << ": " << diag.message());
        co_await p1.async_release(use_tuple);
        co_await p2.async_release(use_tuple);
    });
}

// With limit >= N - 1 the quorum is N: one node down and nothing is granted (the API says so up front).
BOOST_AUTO_TEST_CASE(with_limit_at_least_n_minus_1_no_node_may_fail)
{
    redis_rig rig(3);
    rig.nodes[2].kill();
    rig.run([&]() -> asio::awaitable<void> {
        redlock::semaphore two(rig.client(), name, 2, options());
        BOOST_TEST(two.quorum() == 3u);
        BOOST_TEST(two.failures_tolerated() == 0u);
        auto [e1, p1] = co_await two.async_acquire(use_tuple);
        BOOST_TEST(e1 == error::no_quorum, e1.message());
        redlock::semaphore one(rig.client(), "single", 1, options());
        BOOST_TEST(one.failures_tolerated() == 1u);
        auto [e2, p2] = co_await one.async_acquire(use_tuple);
        BOOST_TEST(!e2, e2.message());
        co_await p2.async_release(use_tuple);
    });
}

BOOST_AUTO_TEST_CASE(inspect_shows_holders_limits_and_available_permits)
{
    redis_rig rig(3);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::semaphore s(rig.client(), name, 4, options());
        auto [e1, two] = co_await s.async_acquire(2, use_tuple);
        auto [e2, one] = co_await s.async_acquire(use_tuple);
        BOOST_REQUIRE(!e1);
        BOOST_REQUIRE(!e2);
        BOOST_REQUIRE(co_await until_units(rig.nodes, 3));
        auto [ec, seen] = co_await s.async_inspect(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_TEST(seen.limit == 4);
        BOOST_TEST(seen.quorum == 3u);  // floor(3 * 4 / 5) + 1
        BOOST_TEST(seen.failures_tolerated() == 0u);
        for (const auto& v : seen.nodes) {
            BOOST_TEST(v.limit.value_or(-1) == 4);
            BOOST_TEST(v.held() == 3);
            BOOST_TEST(v.available().value_or(-1) == 1);
        }
        const auto holders = seen.holders();
        BOOST_REQUIRE(holders.size() == 2u);
        for (const auto& h : holders) {
            BOOST_TEST(h.count == (h.id == two.id() ? 2 : 1));
            BOOST_TEST((h.ttl > 9s && h.ttl <= 10s));
        }
        co_await two.async_release(asio::use_awaitable);
        co_await one.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(with_permit_holds_while_the_body_runs_and_gives_back_on_every_exit)
{
    redis_rig rig(1);
    rig.run([&]() -> asio::awaitable<void> {
        redlock::semaphore s(rig.client(), name, 2, options());
        auto body = [&](const redlock::permit& p) -> asio::awaitable<int> {
            BOOST_TEST(p.count() == 2);
            BOOST_TEST(units_on(rig.nodes[0]) == 2);
            co_return 7;
        };
        BOOST_TEST(co_await redlock::with_permit(s, 2, body) == 7);
        BOOST_TEST(units_on(rig.nodes[0]) == 0);
        auto failing = []() -> asio::awaitable<void> {
            throw std::runtime_error("the job failed");
            co_return;
        };
        bool thrown = false;
        try {
            co_await redlock::with_permit(s, failing);
        } catch (const std::runtime_error&) {
            thrown = true;
        }
        BOOST_TEST(thrown);
        BOOST_TEST(units_on(rig.nodes[0]) == 0);
    });
}

// Before any I/O: the diagnostics show no node answered (none was asked) and no attempt; and it is quick, though
// the client's one node is a dead port. A check made after the fan-out would list the node as failed.
BOOST_AUTO_TEST_CASE(bad_input_fails_before_any_io)
{
    asio::io_context ctx;
    redlock::client nowhere(ctx.get_executor(), {redlock::parse_url("redis://127.0.0.1:1")});
    const auto refused_before_io = [](error_code ec, const redlock::diagnostics& diag, std::string_view expected,
                                      steady::time_point start) {
        BOOST_TEST(ec == error::invalid_argument, ec.message());
        BOOST_TEST(diag.client_message().find(expected) != std::string_view::npos, diag.client_message());
        BOOST_TEST(diag.nodes().empty(), diag.nodes().size() << " node(s) touched");
        BOOST_TEST(diag.waiting().attempts == 0u);
        BOOST_TEST((steady::now() - start < 50ms));
    };
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        auto check = [&](redlock::semaphore s, std::int64_t permits,
                         std::string_view expected) -> asio::awaitable<void> {
            for (const bool one_attempt : {false, true}) {
                redlock::diagnostics diag;
                const auto start = steady::now();
                auto [ec, p] = one_attempt ? co_await s.async_try_acquire(permits, diag, use_tuple)
                                           : co_await s.async_acquire(permits, diag, use_tuple);
                refused_before_io(ec, diag, expected, start);
            }
        };
        co_await check(redlock::semaphore(nowhere, "s", 0), 1, "limit");
        co_await check(redlock::semaphore(nowhere, "s", -3), 1, "limit");
        co_await check(redlock::semaphore(nowhere, "s", redlock::semaphore::max_limit + 1), 1, "limit");
        co_await check(redlock::semaphore(nowhere, "s", 2), 0, "permits");
        co_await check(redlock::semaphore(nowhere, "s", 2), -1, "permits");
        co_await check(redlock::semaphore(nowhere, "s", 2), 3, "permits");
        co_await check(redlock::semaphore(nowhere, "", 2), 1, "name");
        co_await check(redlock::semaphore(nowhere, "s", 2, {.ttl = 0ms}), 1, "ttl");
        for (const std::int64_t limit : {std::int64_t{0}, std::int64_t{-1}, redlock::semaphore::max_limit + 1}) {
            redlock::diagnostics diag;
            const auto start = steady::now();
            auto [ec] = co_await redlock::semaphore(nowhere, "s", 2).async_set_limit(limit, diag, use_tuple);
            refused_before_io(ec, diag, "limit", start);
        }
        {
            redlock::diagnostics diag;
            const auto start = steady::now();
            auto [ec, seen] = co_await redlock::semaphore(nowhere, "", 2).async_inspect(diag, use_tuple);
            refused_before_io(ec, diag, "name", start);
            BOOST_TEST(seen.nodes.empty());
        }
        // And the contrast that makes the checks above mean something: a valid call does touch the dead node.
        redlock::diagnostics diag;
        auto [ec, p] = co_await redlock::semaphore(nowhere, "s", 2).async_try_acquire(1, diag, use_tuple);
        BOOST_TEST(ec != error::invalid_argument);
        BOOST_TEST(diag.nodes().size() == 1u);
    });
}
