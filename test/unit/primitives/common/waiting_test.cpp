// How an acquire waits, against fake nodes: every retry has a cause (a release message, the holder's TTL, a
// timed retry without subscriptions), no release is lost whenever it lands, and one release wakes one waiter.
// The waits are long (a 60 s holder TTL, 10 s retry delays): a lost wake-up fails the test by its deadline.
#include "common/fakes/fake_rig.hpp"

#include <redlock/key_layout.hpp>
#include <redlock/mutex.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <array>

namespace {

namespace asio = boost::asio;
namespace bdata = boost::unit_test::data;
using namespace redlock;
using namespace redlock::test;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

const std::string key = "res";

// A waiter that would sleep 10 s between timed retries and gives up after 3 s.
lock_options patient()
{
    lock_options o;
    o.ttl = 2000ms;
    o.wait = 3000ms;
    o.retry_delay = 10'000ms;
    o.retry_jitter = 0ms;
    return o;
}

}  // namespace

// One lock call started in the background, with its outcome and diagnostics. (Not in the anonymous namespace:
// the data test cases are templates.)
struct pending_lock {
    std::optional<error_code> ec;
    lease held;
    diagnostics diag;
    asio::cancellation_signal cancel;

    void start(rig& r, const lock_options& o, std::vector<std::string> keys = {key})
    {
        redlock::mutex m(*r.c, std::move(keys), o);
        m.async_lock(diag, asio::bind_cancellation_slot(cancel.slot(), r.bind([this](error_code e, lease l) {
                         ec = e;
                         held = std::move(l);
                     })));
    }
};

BOOST_DATA_TEST_CASE(a_release_between_the_refusal_and_the_subscription_is_seen_by_the_check_after_it,
                     bdata::make({1, 3}), n)
{
    rig r(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < r.n(); ++i) {
        r.fakes[i].on(script_kind::acquire, action::refused(60'000));
        // The holder releases just before the subscription lands: no message will ever tell the waiter.
        r.fakes[i].on_subscribe([&r, i](const std::vector<std::string>&) {
            r.fakes[i].on(script_kind::acquire, action::granted());
            return error_code{};
        });
    }
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        pending_lock waiter;
        waiter.start(r, patient());
        BOOST_REQUIRE(co_await eventually([&] { return waiter.ec.has_value(); }, 5000ms));
        BOOST_TEST(!*waiter.ec, waiter.ec->message());
        const auto& w = waiter.diag.waiting();
        BOOST_TEST(w.attempts == 2u);  // refused, then the check after the subscription
        BOOST_TEST(w.woken_by_release == 0u);
        BOOST_TEST(w.timed_retries == 0u);
        BOOST_TEST(w.notified);
    });
}

BOOST_AUTO_TEST_CASE(a_release_that_lands_while_an_attempt_is_on_its_way_makes_the_waiter_retry_at_once)
{
    rig r(1);
    // Refused, then the check after the subscription is held while the holder releases; then granted.
    r.fakes[0].on_sequence(script_kind::acquire, {action::refused(60'000), action::hold()}, action::granted());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        pending_lock waiter;
        waiter.start(r, patient());
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].held() == 1u; }));
        r.fakes[0].publish(release_channel(key), "release-1");
        BOOST_REQUIRE(r.fakes[0].deliver_held(integer(-60'000)));  // refused: it ran before the release
        BOOST_REQUIRE(co_await eventually([&] { return waiter.ec.has_value(); }, 5000ms));
        BOOST_TEST(!*waiter.ec, waiter.ec->message());
        const auto& w = waiter.diag.waiting();
        BOOST_TEST(w.attempts == 3u);
        BOOST_TEST(w.woken_by_release == 1u);
        BOOST_TEST(w.timed_retries == 0u);
    });
}

BOOST_AUTO_TEST_CASE(without_a_message_the_waiter_retries_when_the_holders_key_runs_out_never_on_a_poll)
{
    rig r(1);
    r.fakes[0].on_sequence(script_kind::acquire, {action::refused(300), action::refused(300)}, action::granted());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = patient();
        o.retry_delay = 20ms;  // a poll would show as a dozen attempts
        pending_lock waiter;
        waiter.start(r, o);
        BOOST_REQUIRE(co_await eventually([&] { return waiter.ec.has_value(); }, 5000ms));
        BOOST_TEST(!*waiter.ec, waiter.ec->message());
        const auto& w = waiter.diag.waiting();
        BOOST_TEST(w.attempts == 3u);  // refused, checked after subscribing, then at the holder's TTL
        BOOST_TEST(w.timed_retries == 1u);
        BOOST_TEST(w.woken_by_release == 0u);
    });
}

BOOST_AUTO_TEST_CASE(without_subscriptions_the_waiter_retries_on_its_delay_capped_by_the_holders_ttl)
{
    rig r(1);
    // An ACL user without channel rights: the subscription is refused, so messages cannot be relied on.
    r.fakes[0].on_subscribe([](const std::vector<std::string>&) { return make_error_code(error::server_error); });
    r.fakes[0].on_sequence(script_kind::acquire,
                           {action::refused(60'000), action::refused(60'000), action::refused(60'000)},
                           action::granted());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = patient();
        o.retry_delay = 20ms;
        pending_lock waiter;
        waiter.start(r, o);
        BOOST_REQUIRE(co_await eventually([&] { return waiter.ec.has_value(); }, 5000ms));
        BOOST_TEST(!*waiter.ec, waiter.ec->message());
        const auto& w = waiter.diag.waiting();
        BOOST_TEST(w.attempts == 4u);
        BOOST_TEST(w.timed_retries == 3u);
        BOOST_TEST(!w.notified);
        BOOST_TEST(r.fakes[0].subscribed().empty());
    });
}

BOOST_DATA_TEST_CASE(one_release_wakes_one_waiter_of_a_client_however_many_nodes_publish_it, bdata::make({1, 3}), n)
{
    rig r(static_cast<std::size_t>(n));
    r.on(0, r.n(), script_kind::acquire, action::refused(60'000));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        std::array<pending_lock, 3> waiters;
        for (auto& w : waiters) w.start(r, patient());
        // Each waiter was refused, and the first also checked again after subscribing: all asleep now.
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].received(script_kind::acquire).size() >= 4u; }));
        co_await pause_for(50ms);
        const auto before = r.fakes[0].received(script_kind::acquire).size();
        r.on(0, r.n(), script_kind::acquire, action::granted());
        for (std::size_t i = 0; i < r.n(); ++i) r.fakes[i].publish(release_channel(key), "release-1");
        BOOST_REQUIRE(co_await eventually(
            [&] { return std::any_of(waiters.begin(), waiters.end(), [](auto& w) { return w.ec.has_value(); }); }));
        co_await pause_for(100ms);
        BOOST_TEST(r.fakes[0].received(script_kind::acquire).size() == before + 1);  // one attempt, no herd
        BOOST_TEST(waiters[0].ec.has_value());                                       // the longest waiting
        BOOST_TEST(!waiters[1].ec.has_value());
        BOOST_TEST(!waiters[2].ec.has_value());
        for (auto& w : waiters) w.cancel.emit(asio::cancellation_type::terminal);
        BOOST_REQUIRE(co_await eventually(
            [&] { return std::all_of(waiters.begin(), waiters.end(), [](auto& w) { return w.ec.has_value(); }); }));
    });
}

BOOST_AUTO_TEST_CASE(a_woken_waiter_that_gives_up_before_trying_passes_the_release_to_the_next)
{
    rig r(1);
    r.fakes[0].on(script_kind::acquire, action::refused(60'000));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        std::array<pending_lock, 2> waiters;
        for (auto& w : waiters) w.start(r, patient());
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].received(script_kind::acquire).size() >= 3u; }));
        co_await pause_for(50ms);
        r.fakes[0].on(script_kind::acquire, action::granted());
        // The release wakes the first waiter; it is cancelled before it resumes (the cancellation is queued
        // behind the message, ahead of the waiter's timer completion).
        r.fakes[0].publish(release_channel(key), "release-1");
        asio::post(r.ctx, [&] { waiters[0].cancel.emit(asio::cancellation_type::terminal); });
        BOOST_REQUIRE(co_await eventually([&] { return waiters[0].ec && waiters[1].ec; }, 5000ms));
        BOOST_TEST(*waiters[0].ec == asio::error::operation_aborted);
        BOOST_TEST(!*waiters[1].ec, waiters[1].ec->message());
        BOOST_TEST(waiters[1].diag.waiting().woken_by_release == 1u);
        BOOST_TEST(waiters[1].diag.waiting().timed_retries == 0u);
    });
}

// A fair lock's release names the next in line: only that waiter wakes (a waiter of another process, or none,
// leaves this client's waiters asleep: no herd).
BOOST_AUTO_TEST_CASE(a_fair_release_wakes_only_the_waiter_it_names)
{
    rig r(1);
    // Every fair attempt is refused for a minute: {0, wait ms, ticket counter, our ticket}.
    r.fakes[0].set_policy([](const exec_record&) {
        return action::reply(array({integer(0), integer(60'000), bulk("7"), bulk("7")}));
    });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = patient();
        o.fair = true;
        o.waiter_ttl = 30'000ms;  // heartbeats every 10 s: none during the test
        std::array<pending_lock, 2> waiters;
        waiters[0].start(r, o);
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].received().size() >= 2u; }));
        waiters[1].start(r, o);
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].received().size() >= 3u; }));
        co_await pause_for(50ms);
        const auto records = r.fakes[0].received();
        const auto first = records.front().args.at(0);  // each attempt's ARGV[1] is the waiter's token
        const auto second = records.back().args.at(0);
        BOOST_REQUIRE(first != second);

        const auto before = r.fakes[0].received().size();
        r.fakes[0].publish(release_channel(key), "release-1\nsomeone-elses-token");
        co_await pause_for(100ms);
        BOOST_TEST(r.fakes[0].received().size() == before);  // nobody here is next

        r.fakes[0].publish(release_channel(key), "release-2\n" + second);
        co_await pause_for(100ms);
        BOOST_TEST(r.fakes[0].received().size() == before + 1);
        BOOST_TEST(r.fakes[0].received().back().args.at(0) == second);
        for (auto& w : waiters) w.cancel.emit(asio::cancellation_type::terminal);
        BOOST_REQUIRE(co_await eventually([&] { return waiters[0].ec && waiters[1].ec; }));
    });
}

// The other copies of a release that raced the woken waiter's attempt (it was granted where the release had
// landed, refused where it had not yet): with its own grant they make a quorum, so it retries at once. Deduplicated
// as copies and nothing else, they would leave it asleep for the holder's minute.
BOOST_AUTO_TEST_CASE(the_copies_of_a_release_that_raced_the_woken_waiters_attempt_make_it_retry_at_once)
{
    rig r(3);
    // Refused, refused again by the check after subscribing; the third attempt follows the release: node 0
    // grants it, nodes 1 and 2 answer only after their copies of the release are out, refusing.
    const auto refused = action::refused(60'000);
    r.fakes[0].on_sequence(script_kind::acquire, {refused, refused}, action::granted());
    for (std::size_t i = 1; i < r.n(); ++i)
        r.fakes[i].on_sequence(script_kind::acquire, {refused, refused, action::hold()}, action::granted());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        pending_lock waiter;
        waiter.start(r, patient());
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].received(script_kind::acquire).size() >= 2u; }));
        co_await pause_for(50ms);  // asleep
        r.fakes[0].publish(release_channel(key), "release-1");
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[1].held() == 1u && r.fakes[2].held() == 1u; }));
        for (std::size_t i = 1; i < r.n(); ++i) r.fakes[i].publish(release_channel(key), "release-1");
        co_await pause_for(20ms);
        for (std::size_t i = 1; i < r.n(); ++i) BOOST_REQUIRE(r.fakes[i].deliver_held(integer(-60'000)));
        BOOST_REQUIRE(co_await eventually([&] { return waiter.ec.has_value(); }, 5000ms));
        BOOST_TEST(!*waiter.ec, waiter.ec->message());
        const auto& w = waiter.diag.waiting();
        BOOST_TEST(w.attempts == 4u);
        BOOST_TEST(w.woken_by_release == 2u);
        BOOST_TEST(w.timed_retries == 0u);
    });
}

// Two waiters that each win a minority while the holder keeps a quorum must not wake each other with their
// clean-ups forever: a clean-up frees one node, and only nodes freed on a quorum are worth a retry.
BOOST_AUTO_TEST_CASE(clean_ups_wake_a_waiter_only_when_they_free_a_quorum_of_nodes)
{
    rig r(3);
    r.on(0, 2, script_kind::acquire, action::refused(60'000));  // the holder's quorum
    r.fakes[2].on(script_kind::acquire, action::granted());     // a free minority: each attempt wins it
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        pending_lock waiter;
        waiter.start(r, patient());
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].received(script_kind::acquire).size() >= 2u; }));
        co_await pause_for(50ms);
        const auto before = r.fakes[0].received(script_kind::acquire).size();
        // Another waiter's clean-up of the same minority node, again and again: nothing to gain.
        for (int i = 0; i < 5; ++i) r.fakes[2].publish(release_channel(key), "~other:" + std::to_string(i));
        co_await pause_for(100ms);
        BOOST_TEST(r.fakes[0].received(script_kind::acquire).size() == before);
        // A clean-up on node 0 as well (a split vote undone): with its own grant on node 2, a quorum is free.
        r.on(0, r.n(), script_kind::acquire, action::granted());
        r.fakes[0].publish(release_channel(key), "~other:9");
        BOOST_REQUIRE(co_await eventually([&] { return waiter.ec.has_value(); }, 5000ms));
        BOOST_TEST(!*waiter.ec, waiter.ec->message());
        BOOST_TEST(waiter.diag.waiting().woken_by_release == 1u);
        BOOST_TEST(waiter.diag.waiting().timed_retries == 0u);
    });
}

// A multi-key waiter woken by a release of one key may be refused for another: the release also wakes the
// next waiter, which only needed that key.
BOOST_AUTO_TEST_CASE(a_multi_key_waiter_does_not_use_up_the_release_of_a_one_key_waiter)
{
    rig r(1);
    r.fakes[0].on(script_kind::acquire, action::refused(60'000));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        pending_lock multi, single;
        multi.start(r, patient(), {key, "other"});
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].received(script_kind::acquire).size() >= 2u; }));
        single.start(r, patient());
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].received(script_kind::acquire).size() >= 3u; }));
        co_await pause_for(50ms);
        const auto before = r.fakes[0].received(script_kind::acquire).size();
        r.fakes[0].publish(release_channel(key), "release-1");  // "other" stays held: the multi-key one is refused
        BOOST_REQUIRE(co_await eventually(
            [&] { return r.fakes[0].received(script_kind::acquire).size() >= before + 2; }, 5000ms));
        BOOST_TEST(multi.diag.waiting().woken_by_release == 1u);
        BOOST_TEST(single.diag.waiting().woken_by_release == 1u);
        for (auto* w : {&multi, &single}) w->cancel.emit(asio::cancellation_type::terminal);
        BOOST_REQUIRE(co_await eventually([&] { return multi.ec && single.ec; }));
    });
}

// After a waiter's attempt split the vote (node 0 granted, the others refused), the gate stays taken a random
// moment, up to that attempt, while another waiter of the client queues for it. Cancelled during that hold, the
// waiter ends at once with operation_aborted. (A waiter that held the gate itself, its cancellation going to the
// hold's timer, and did not look at it afterwards would sleep on, here until its 3 s wait runs out, the holder's key
// being good for a minute.) The hold is random: a round whose hold ended before the cancellation could land is run
// again.
BOOST_AUTO_TEST_CASE(a_waiter_cancelled_while_it_holds_the_gate_after_a_split_ends_at_once)
{
    auto o = patient();
    o.node_timeout = 1000ms;  // node 2's slow refusal is an answer, not a timeout
    int caught = 0;
    for (int round = 0; round < 10 && caught == 0; ++round) {
        rig r(3);
        r.on(0, r.n(), script_kind::acquire, action::refused(60'000));
        run_coro(r.ctx, [&]() -> asio::awaitable<void> {
            // A waiter refused everywhere subscribes and sleeps for the holder's minute: the messages can be
            // relied on when the split attempt is sent, so no wait for subscriptions follows it.
            pending_lock asleep, first, second;
            asleep.start(r, o);
            BOOST_REQUIRE(co_await eventually([&] { return r.fakes[1].received(script_kind::acquire).size() >= 2u; }));
            co_await pause_for(50ms);
            // Node 0 grants, node 1 refuses at once, node 2 after 300 ms: a split vote, an attempt of 300 ms.
            r.fakes[0].on(script_kind::acquire, action::granted());
            r.fakes[2].on(script_kind::acquire, action::delayed(300ms, integer(-60'000)));
            first.start(r, o);
            second.start(r, o);  // queues for the gate
            BOOST_REQUIRE(co_await eventually([&] { return !r.fakes[0].received(script_kind::release).empty(); }));
            // The first attempt is over (its clean-up is out) and the second has not been let in: the hold.
            const bool holding = r.fakes[1].received(script_kind::acquire).size() == 3u;
            first.cancel.emit(asio::cancellation_type::terminal);
            const auto cancelled_at = std::chrono::steady_clock::now();
            BOOST_REQUIRE(co_await eventually([&] { return first.ec.has_value(); }, 5000ms));
            const auto took = std::chrono::duration_cast<ms>(std::chrono::steady_clock::now() - cancelled_at);
            if (holding) {
                ++caught;
                BOOST_TEST(*first.ec == asio::error::operation_aborted, first.ec->message());
                BOOST_TEST(took.count() < 100, took.count() << " ms after the cancellation");
                BOOST_TEST(first.diag.waiting().attempts == 1u);
            }
            for (auto* w : {&asleep, &second}) w->cancel.emit(asio::cancellation_type::terminal);
            BOOST_REQUIRE(co_await eventually([&] { return asleep.ec && second.ec; }));
        });
    }
    BOOST_TEST(caught == 1);
}

// A call that ends after its attempt (a try, or a wait that has run out) comes back at once after a split: a try
// that waited out the gate's hold itself would come back up to an attempt late, for no attempt of its own (the
// hold is uniform in [0, 300 ms): in four rounds, one would show it). The gate is still held for that moment: the
// next waiter of the client does not follow the try's clean-up at once (which would split the vote again in step
// with another client); in four rounds, one hold is over 20 ms.
BOOST_AUTO_TEST_CASE(a_try_that_splits_the_vote_comes_back_at_once_and_the_gate_is_held_without_it)
{
    auto o = patient();
    o.node_timeout = 1000ms;
    auto once = o;
    once.wait = 0ms;
    ms longest_hold{0};
    for (int round = 0; round < 4; ++round) {
        rig r(3);
        r.fakes[0].on(script_kind::acquire, action::granted());
        r.fakes[1].on(script_kind::acquire, action::refused(60'000));
        r.fakes[2].on(script_kind::acquire, action::delayed(300ms, integer(-60'000)));
        run_coro(r.ctx, [&]() -> asio::awaitable<void> {
            pending_lock tried, second;
            tried.start(r, once);
            second.start(r, o);  // queues for the gate
            BOOST_REQUIRE(co_await eventually([&] { return !r.fakes[0].received(script_kind::release).empty(); }));
            const auto attempt_over = std::chrono::steady_clock::now();
            BOOST_REQUIRE(co_await eventually([&] { return tried.ec.has_value(); }, 5000ms));
            const auto took = std::chrono::duration_cast<ms>(std::chrono::steady_clock::now() - attempt_over);
            BOOST_TEST(*tried.ec == error::not_acquired, tried.ec->message());
            BOOST_TEST(took.count() < 50, took.count() << " ms after its attempt, round " << round);
            BOOST_REQUIRE(co_await eventually([&] { return r.fakes[1].received(script_kind::acquire).size() == 2u; }));
            longest_hold =
                std::max(longest_hold, std::chrono::duration_cast<ms>(std::chrono::steady_clock::now() - attempt_over));
            second.cancel.emit(asio::cancellation_type::terminal);
            BOOST_REQUIRE(co_await eventually([&] { return second.ec.has_value(); }));
        });
    }
    BOOST_TEST(longest_hold.count() >= 20, "the gate was handed on within " << longest_hold.count() << " ms");
}
