// The semaphore's sequence against fake nodes: the quorum follows the limit the nodes report (up and down), a
// failed attempt gives back its units wherever it may hold them, and how the scripts' replies read.
#include "common/fakes/fake_rig.hpp"
#include "primitives/semaphore/semaphore_scripts.hpp"

#include <redlock/semaphore.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/test/unit_test.hpp>

namespace {

namespace asio = boost::asio;
namespace scripts = redlock::detail::semaphore_scripts;
using namespace redlock;
using namespace redlock::test;
using namespace std::chrono_literals;

constexpr auto use = asio::as_tuple(asio::use_awaitable);

// The requests, told apart by their keys: the acquire names the permits' set, their units and the limit, the release
// the set and units alone.
bool acquire_request(const exec_record& r)
{
    return r.keys.size() == 3 && r.keys[2].ends_with(":limit") && r.args.size() == 5;
}
bool release_request(const exec_record& r)
{
    return r.keys.size() == 2;
}

resp::value granted(std::int64_t limit)
{
    return array({integer(1), integer(1), integer(limit)});
}
resp::value refused(std::int64_t limit)
{
    return array({integer(0), integer(60'000), integer(limit), integer(limit)});
}
// A node whose stored limit is below the permits asked: no expiry can make room (-1).
resp::value refused_above(std::int64_t limit)
{
    return array({integer(0), integer(-1), integer(0), integer(limit)});
}
// The fair acquire names the queue's keys too; its refusal is {0, wait, counter, ticket, limit}.
bool fair_acquire_request(const exec_record& r)
{
    return r.keys.size() == 6 && r.keys[2].ends_with(":limit");
}
resp::value fair_refused_above(std::int64_t limit)
{
    return array({integer(0), integer(-1), bulk("0"), bulk("0"), integer(limit)});
}
// A fair waiter that gives up: the fair release with its "leave the queue" flag.
bool leaves_queue(const exec_record& r)
{
    return r.keys.size() == 4 && r.args.size() == 4 && r.args[3] == "1";
}

semaphore_options quick()
{
    semaphore_options o;
    o.ttl = 2000ms;
    o.node_timeout = 150ms;
    return o;
}

std::size_t releases(const rig& r, std::size_t node)
{
    std::size_t n = 0;
    for (const auto& rec : r.fakes[node].received()) n += release_request(rec);
    return n;
}

}  // namespace

// The caller says limit 1 (Q = 2 of 3), the nodes keep 3 (Q = 3): two grants are not enough, the attempt waits
// for the third node's, which comes 200 ms later.
BOOST_AUTO_TEST_CASE(the_quorum_rises_to_the_limit_the_nodes_report)
{
    rig r(3);
    for (std::size_t i = 0; i < 3; ++i)
        r.fakes[i].set_policy([i](const exec_record& rec) {
            if (!acquire_request(rec)) return action::released();
            return i == 2 ? action::delayed(200ms, granted(3)) : action::reply(granted(3));
        });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        const auto start = std::chrono::steady_clock::now();
        auto [ec, p] = co_await semaphore(*r.c, "s", 1, quick()).async_acquire(use);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_TEST((std::chrono::steady_clock::now() - start >= 190ms));  // it waited for node 2
        co_await p.async_release(use);
    });
}

// And with the third node silent, no grant: the attempt fails, and gives back what it got on every node that did
// not refuse (the two that granted, and the silent one, where a late grant may land).
BOOST_AUTO_TEST_CASE(without_the_risen_quorum_nothing_is_granted_and_every_grant_is_given_back)
{
    rig r(3);
    for (std::size_t i = 0; i < 3; ++i)
        r.fakes[i].set_policy([i](const exec_record& rec) {
            if (!acquire_request(rec)) return action::released();
            return i == 2 ? action::silent() : action::reply(granted(3));
        });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, p] = co_await semaphore(*r.c, "s", 1, quick()).async_try_acquire(1, diag, use);
        BOOST_TEST(ec == error::no_quorum, ec.message() << ": " << diag.message());
        BOOST_TEST(!p);
        BOOST_TEST(
            co_await eventually([&] { return releases(r, 0) == 1 && releases(r, 1) == 1 && releases(r, 2) == 1; }));
    });
}

// The caller says 4 on 5 nodes (Q = 5), the nodes keep 1 (Q = 3): three grants make the permit, the two silent
// nodes do not sink it.
BOOST_AUTO_TEST_CASE(the_quorum_falls_to_the_limit_the_nodes_report)
{
    rig r(5);
    for (std::size_t i = 0; i < 5; ++i)
        r.fakes[i].set_policy([i](const exec_record& rec) {
            if (!acquire_request(rec)) return action::released();
            return i >= 3 ? action::silent() : action::reply(granted(1));
        });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, p] = co_await semaphore(*r.c, "s", 4, quick()).async_acquire(1, diag, use);
        BOOST_TEST(!ec, ec.message() << ": " << diag.message());
        co_await p.async_release(use);
    });
}

// Refusals are definite: a refused attempt sends no clean-up to the nodes that refused.
BOOST_AUTO_TEST_CASE(a_refused_attempt_gives_back_nothing_where_it_was_refused)
{
    rig r(3);
    for (std::size_t i = 0; i < 3; ++i)
        r.fakes[i].set_policy([i](const exec_record& rec) {
            if (!acquire_request(rec)) return action::released();
            return i == 0 ? action::reply(granted(2)) : action::reply(refused(2));
        });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto [ec, p] = co_await semaphore(*r.c, "s", 2, quick()).async_try_acquire(use);
        BOOST_TEST(ec == error::not_acquired, ec.message());
        co_await pause_for(50ms);
        BOOST_TEST(releases(r, 0) == 1u);
        BOOST_TEST(releases(r, 1) == 0u);
        BOOST_TEST(releases(r, 2) == 0u);
    });
}

// Another process shrank the limit to 1; a call for 2 permits that may wait 10 s fails after its one attempt with
// exceeds_limit, the stored limit in its diagnostics, counted under its own reason. (Without the check it sleeps
// and retries until the wait runs out, then says not_acquired.)
BOOST_AUTO_TEST_CASE(a_request_above_the_limit_the_nodes_store_fails_at_once_saying_so)
{
    rig r(3);
    for (std::size_t i = 0; i < 3; ++i)
        r.fakes[i].set_policy([](const exec_record& rec) {
            return acquire_request(rec) ? action::reply(refused_above(1)) : action::released(0);
        });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = quick();
        o.wait = 10s;
        diagnostics diag;
        const auto start = std::chrono::steady_clock::now();
        auto [ec, p] = co_await semaphore(*r.c, "s", 3, o).async_acquire(2, diag, use);
        BOOST_TEST(ec == error::exceeds_limit, ec.message() << ": " << diag.message());
        BOOST_TEST((std::chrono::steady_clock::now() - start < 1s));
        BOOST_TEST(diag.waiting().attempts == 1u);
        BOOST_TEST(diag.client_message().find("store a limit of 1") != std::string_view::npos, diag.client_message());
        // Every node agrees: raising the limit is the way out.
        BOOST_TEST(diag.client_message().ends_with("until the limit is raised"), diag.client_message());
        BOOST_TEST(diag.nodes().size() == 3u);
    });
    const auto stats = r.c->stats();
    BOOST_TEST(stats.failures.exceeds_limit == 1u);
    BOOST_TEST(stats.failures.not_acquired == 0u);
}

// Refusals for the limit decide only when the other nodes cannot make a quorum. 5 nodes storing 2 (Q = 4): node
// 0 stores 1, node 1 has no room. The four others could grant once node 1 has room: not_acquired, a wait worth
// having. (A check that gave up on any such refusal would say exceeds_limit.)
BOOST_AUTO_TEST_CASE(one_node_below_the_request_does_not_end_a_wait_a_quorum_can_still_grant)
{
    rig r(5);
    for (std::size_t i = 0; i < 5; ++i)
        r.fakes[i].set_policy([i](const exec_record& rec) {
            if (!acquire_request(rec)) return action::released();
            return action::reply(i == 0 ? refused_above(1) : i == 1 ? refused(2) : granted(2));
        });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, p] = co_await semaphore(*r.c, "s", 2, quick()).async_try_acquire(2, diag, use);
        BOOST_TEST(ec == error::not_acquired, ec.message() << ": " << diag.message());
    });
}

// With Q = N (3 nodes, limit 2) a single node storing 1 is enough: no quorum can form without it. The other two
// store 2 (a raise from 1 that missed node 0): the message says the nodes disagree and a set_limit fixes it, not
// that the limit must be raised.
BOOST_AUTO_TEST_CASE(with_a_quorum_of_every_node_one_node_below_the_request_ends_it)
{
    rig r(3);
    for (std::size_t i = 0; i < 3; ++i)
        r.fakes[i].set_policy([i](const exec_record& rec) {
            if (!acquire_request(rec)) return action::released();
            return action::reply(i == 0 ? refused_above(1) : granted(2));
        });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = quick();
        o.wait = 10s;
        diagnostics diag;
        auto [ec, p] = co_await semaphore(*r.c, "s", 2, o).async_acquire(2, diag, use);
        BOOST_TEST(ec == error::exceeds_limit, ec.message() << ": " << diag.message());
        BOOST_TEST(diag.client_message().find("1 of 3 nodes store a limit of 1") != std::string_view::npos,
                   diag.client_message());
        BOOST_TEST(diag.client_message().find("Other nodes store 2") != std::string_view::npos, diag.client_message());
        BOOST_TEST(diag.client_message().ends_with("run async_set_limit again"), diag.client_message());
        // Nodes 1 and 2 may have granted: given back.
        BOOST_TEST(co_await eventually([&] { return releases(r, 1) == 1 && releases(r, 2) == 1; }));
    });
}

std::size_t acquires(const rig& r, std::size_t node)
{
    std::size_t n = 0;
    for (const auto& rec : r.fakes[node].received()) n += acquire_request(rec);
    return n;
}

// exceeds_limit ends the call, and no wait can change it: after its split attempt (nodes 1 and 2 granted) it comes
// back at once, and the gate goes at once to the waiter of the client queued for it. (Held a random moment of up to
// the 300 ms attempt, by the call or by the gate: in four rounds, one would show it.)
BOOST_AUTO_TEST_CASE(a_request_above_the_stored_limit_hands_the_gate_on_at_once)
{
    for (int round = 0; round < 4; ++round) {
        rig r(3);
        for (std::size_t i = 0; i < 3; ++i)
            r.fakes[i].set_policy([i](const exec_record& rec) {
                if (!acquire_request(rec)) return action::released();
                return i == 0 ? action::delayed(300ms, refused_above(1)) : action::reply(granted(2));
            });
        run_coro(r.ctx, [&]() -> asio::awaitable<void> {
            auto o = quick();
            o.wait = 10s;
            o.node_timeout = 1000ms;
            semaphore s(*r.c, "s", 2, o);
            std::optional<error_code> above, queued;
            asio::cancellation_signal cancel;
            s.async_acquire(2, r.bind([&](error_code ec, permit) { above = ec; }));
            s.async_acquire(
                1, asio::bind_cancellation_slot(cancel.slot(), r.bind([&](error_code ec, permit) { queued = ec; })));
            BOOST_REQUIRE(co_await eventually([&] { return releases(r, 1) >= 1; }));
            const auto attempt_over = std::chrono::steady_clock::now();
            BOOST_REQUIRE(co_await eventually([&] { return above.has_value(); }, 5000ms));
            const auto took =
                std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - attempt_over);
            BOOST_TEST(*above == error::exceeds_limit, above->message());
            BOOST_TEST(took.count() < 50, took.count() << " ms after its attempt, round " << round);
            BOOST_REQUIRE(co_await eventually([&] { return acquires(r, 1) == 2; }));
            const auto handed_on =
                std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - attempt_over);
            BOOST_TEST(handed_on.count() < 50,
                       "the queued waiter tried " << handed_on.count() << " ms after, round " << round);
            cancel.emit(asio::cancellation_type::terminal);
            BOOST_REQUIRE(co_await eventually([&] { return queued.has_value(); }));
        });
    }
}

// A fair waiter that asks for more than the stored limit would wait at the head for ever, holding back everyone
// behind it (strict FIFO): it fails at once and leaves the queue on every node.
BOOST_AUTO_TEST_CASE(a_fair_waiter_above_the_stored_limit_fails_at_once_and_leaves_the_queue)
{
    rig r(3);
    for (std::size_t i = 0; i < 3; ++i)
        r.fakes[i].set_policy([](const exec_record& rec) {
            return fair_acquire_request(rec) ? action::reply(fair_refused_above(1)) : action::released(0);
        });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = quick();
        o.wait = 10s;
        o.fair = true;
        diagnostics diag;
        const auto start = std::chrono::steady_clock::now();
        auto [ec, p] = co_await semaphore(*r.c, "s", 3, o).async_acquire(2, diag, use);
        BOOST_TEST(ec == error::exceeds_limit, ec.message() << ": " << diag.message());
        BOOST_TEST((std::chrono::steady_clock::now() - start < 1s));
        BOOST_TEST(co_await eventually([&] {
            for (std::size_t i = 0; i < 3; ++i) {
                const auto got = r.fakes[i].received();
                if (std::none_of(got.begin(), got.end(), leaves_queue)) return false;
            }
            return true;
        }));
    });
}

BOOST_AUTO_TEST_CASE(the_scripts_replies_read_as_votes_limits_and_hints)
{
    const auto one = [](resp::value v) {
        response r;
        r.push_back(std::move(v));
        return r;
    };
    // Plain and fair grants and refusals; the limit is the last element.
    const auto plain = scripts::read_acquire;
    const auto fair = scripts::read_fair_acquire;
    BOOST_TEST((plain({}, one(granted(3))).verdict == detail::vote::yes));
    BOOST_TEST((plain({}, one(refused(3))).verdict == detail::vote::no));
    BOOST_TEST((fair({}, one(array({integer(1), bulk("0"), bulk("7"), integer(5)}))).verdict == detail::vote::yes));
    const auto fair_refusal = one(array({integer(0), integer(10), bulk("7"), bulk("3"), integer(5)}));
    BOOST_TEST((fair({}, fair_refusal).verdict == detail::vote::no));
    BOOST_TEST(plain({}, one(granted(3))).limit.value_or(-1) == 3);
    BOOST_TEST(fair({}, fair_refusal).limit.value_or(-1) == 5);
    BOOST_TEST(fair({}, fair_refusal).ticket_counter.value_or(0) == 7u);
    BOOST_TEST(fair({}, fair_refusal).ticket.value_or(0) == 3u);
    BOOST_TEST(plain({}, one(refused(3))).wait.value_or(-1ms) == 60'000ms);
    BOOST_TEST(!plain({}, one(array({integer(0), integer(-1), integer(3), integer(2)}))).wait);  // n > limit
    BOOST_TEST(!plain({}, one(granted(3))).wait);
    // Malformed: a vote of its own, never a grant; and no fair reply reads as a plain one.
    BOOST_TEST((plain({}, one(integer(1))).verdict == detail::vote::error));
    BOOST_TEST((plain({}, one(array({integer(1), integer(1)}))).verdict == detail::vote::error));
    BOOST_TEST((plain({}, one(array({integer(1), integer(1), bulk("x")}))).verdict == detail::vote::error));
    BOOST_TEST((plain(make_error_code(error::timeout), one(granted(3))).verdict == detail::vote::error));
    BOOST_TEST((fair({}, one(granted(3))).verdict == detail::vote::error));
    // Extend: the ttl it gave (server time), or 0 when the permit is not held there.
    BOOST_TEST((scripts::classify_extend({}, one(integer(2000))) == detail::vote::yes));
    BOOST_TEST(scripts::extended_for(one(integer(2000))).value_or(0ms) == 2000ms);
    BOOST_TEST((scripts::classify_extend({}, one(integer(0))) == detail::vote::no));
    BOOST_TEST(scripts::not_held(one(integer(0))));
    // Release: units removed, or 0 when the permit was gone (expired): never a yes for that.
    BOOST_TEST((scripts::classify_release({}, one(integer(2))) == detail::vote::yes));
    BOOST_TEST((scripts::classify_release({}, one(integer(0))) == detail::vote::no));
    BOOST_TEST((scripts::classify_release({}, one(error_reply("ERR"))) == detail::vote::error));
}
