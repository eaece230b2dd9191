// Waiting on real nodes: thousands of handoffs between clients, each woken by the release message alone.
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

#include <array>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_rig.hpp>
#include <optional>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::error_code;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::redis_rig;
using redlock::test::run_coro;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

#ifdef REDLOCK_TEST_SANITIZED
constexpr int scale = 10;  // the sanitizers make each handoff ten times dearer
#else
constexpr int scale = 1;
#endif

// Two clients (two connections per node, as two processes would have) take turns on one key: each, after its
// release, waits until the other took the lock before it asks again (and, refused while the other holds for
// 0.5 ms, waits for its release), so every grant is a handoff. The holder's TTL is a minute and the timed
// retry 10 s, beyond the 10 s wait: a wake-up lost once fails a lock call.
struct handoff_run {
    int handoffs = 0;
    std::vector<std::string> failures;
    redlock::wait_summary total;
};

handoff_run take_turns(const cluster& nodes, int target)
{
    asio::io_context ctx;
    redlock::client a(ctx.get_executor(), configs(nodes));
    redlock::client b(ctx.get_executor(), configs(nodes));
    handoff_run run;
    int holder = -1;
    int finished = 0;
    std::array<std::optional<asio::steady_timer>, 2> turn;  // a worker waits on its own until the other took it

    auto worker = [&](redlock::client& c, int me) -> asio::awaitable<void> {
        redlock::mutex m(c, "turns",
                         {.ttl = 60'000ms, .wait = 10'000ms, .node_timeout = 500ms, .retry_delay = 10'000ms});
        turn[me].emplace(ctx, steady::time_point::max());
        while (run.handoffs < target && run.failures.empty()) {
            redlock::diagnostics diag;
            auto [ec, held] = co_await m.async_lock(diag, use_tuple);
            const auto& w = diag.waiting();
            run.total.attempts += w.attempts;
            run.total.woken_by_release += w.woken_by_release;
            run.total.timed_retries += w.timed_retries;
            if (ec) {
                run.failures.push_back("lock: " + ec.message() + ": " + std::string(diag.message()));
                break;
            }
            if (holder != -1 && holder != me) ++run.handoffs;
            holder = me;
            turn[1 - me]->cancel();  // the other asks again now, and is refused while this one holds
            asio::steady_timer hold(ctx, 500us);
            co_await hold.async_wait(use_tuple);
            auto [rec] = co_await held.async_release(use_tuple);
            if (rec) run.failures.push_back("release: " + rec.message());
            while (holder == me && run.handoffs < target && run.failures.empty()) {
                turn[me]->expires_at(steady::time_point::max());
                co_await turn[me]->async_wait(use_tuple);
            }
        }
        turn[1 - me]->cancel();
        ++finished;
    };
    run_coro(
        ctx,
        [&]() -> asio::awaitable<void> {
            co_await a.async_connect(asio::use_awaitable);
            co_await b.async_connect(asio::use_awaitable);
            asio::co_spawn(ctx, worker(a, 0), asio::detached);
            asio::co_spawn(ctx, worker(b, 1), asio::detached);
            while (finished < 2) co_await redlock::test::sleep_for(10ms);
        },
        240s);
    return run;
}

}  // namespace

BOOST_DATA_TEST_CASE(thousands_of_handoffs_lose_no_wake_up, data::make({1, 3}), n)
{
    cluster nodes(static_cast<std::size_t>(n));
    const int target = (n == 1 ? 10'000 : 2'000) / scale;
    const auto start = steady::now();
    const auto run = take_turns(nodes, target);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start);
    BOOST_TEST_MESSAGE(n << " node(s): " << run.handoffs << " handoffs in " << took.count() << " ms; "
                         << run.total.attempts << " attempts, " << run.total.woken_by_release << " woken by a release, "
                         << run.total.timed_retries << " timed retries");
    std::string all;
    for (const auto& f : run.failures) all += f + "; ";
    BOOST_TEST(run.failures.empty(), all);
    BOOST_TEST(run.handoffs == target);
    BOOST_TEST(run.total.timed_retries == 0u);  // every retry was started by a release message
    // Most grants followed a release message (a waiter slower than the 0.5 ms hold finds the lock free).
    BOOST_TEST(run.total.woken_by_release >= static_cast<std::uint32_t>(target / 2));
}

// Another client holds the lock on nodes 0 and 1 (a quorum) for a minute; node 2 is free (its copy was lost).
// Two waiters of two clients each win node 2 in turn and give it back: their clean-ups must not wake each other
// (nor themselves) into a retry loop. Each sleeps until its 1.5 s wait runs out, in a handful of attempts.
BOOST_DATA_TEST_CASE(waiters_that_win_a_free_minority_do_not_wake_each_other, data::make({false, true}), fair)
{
    redis_rig rig(3, 2);
    auto& a = rig.client(0);
    auto& b = rig.client(1);
    for (std::size_t i = 0; i < 2; ++i) rig.nodes[i].cli({"SET", "minority", "another-owner", "PX", "60000"});
    rig.run([&]() -> asio::awaitable<void> {
        const redlock::lock_options o{.ttl = 10'000ms, .wait = 1500ms, .node_timeout = 300ms, .fair = fair};
        std::array<redlock::diagnostics, 2> diags;
        std::array<std::optional<error_code>, 2> outcomes;
        std::array<redlock::client*, 2> clients{&a, &b};
        for (std::size_t i = 0; i < 2; ++i)
            redlock::mutex(*clients[i], "minority", o)
                .async_lock(diags[i], [&outcomes, i](error_code ec, redlock::lease) { outcomes[i] = ec; });
        for (int i = 0; i < 400 && !(outcomes[0] && outcomes[1]); ++i) co_await redlock::test::sleep_for(10ms);
        BOOST_REQUIRE(outcomes[0] && outcomes[1]);
        for (std::size_t i = 0; i < 2; ++i) {
            const auto& w = diags[i].waiting();
            BOOST_TEST_MESSAGE("waiter " << i << ": " << w.attempts << " attempts, " << w.woken_by_release
                                         << " woken by a release, " << w.timed_retries << " timed");
            BOOST_TEST((*outcomes[i] == redlock::error::not_acquired),
                       outcomes[i]->message());  // the holder kept its quorum
            BOOST_TEST(w.attempts <= 10u);       // a loop makes thousands
        }
    });
}

// A foreign writer set the key with PX 9000000000000000 (about 285,000 years) and the waiter waits for ever: its
// pause (the holder's TTL) must not overflow the timer's clock, which made the timer fire at once and the waiter
// spin. It makes an attempt and the check that follows its subscription, then sleeps until it is cancelled.
BOOST_DATA_TEST_CASE(a_holder_ttl_of_ages_does_not_make_a_waiter_spin, data::make({1, 3}), n)
{
    redis_rig rig(n);
    for (std::size_t i = 0; i < rig.nodes.size(); ++i)
        rig.nodes[i].cli({"SET", "ages", "foreign", "PX", "9000000000000000"});
    rig.run([&]() -> asio::awaitable<void> {
        redlock::mutex m(rig.client(), "ages", {.ttl = 10'000ms, .wait = std::chrono::milliseconds::max()});
        redlock::diagnostics diag;
        asio::cancellation_signal stop;
        asio::steady_timer timer(rig.ctx, 1500ms);
        timer.async_wait([&](error_code) { stop.emit(asio::cancellation_type::terminal); });
        auto [ec, held] = co_await m.async_lock(diag, asio::bind_cancellation_slot(stop.slot(), use_tuple));
        BOOST_TEST(ec == asio::error::operation_aborted, ec.message());
        BOOST_TEST(diag.waiting().attempts <= 3u, diag.waiting().attempts << " attempts");
    });
}

// Redis 7: a release is published with SPUBLISH on the lock's sharded channel, and the waiter, subscribed with
// SSUBSCRIBE, resumes within a short bound of it. The holder's TTL is a minute and the timed retry longer than the
// wait: only the message can wake the waiter in time. Over one node and three (a quorum's messages).
BOOST_DATA_TEST_CASE(a_waiter_resumes_on_the_sharded_release_message, data::make({1, 3}), n)
{
    redis_rig rig(n, 2);
    rig.run([&]() -> asio::awaitable<void> {
        const redlock::lock_options options{.ttl = 60'000ms, .wait = 10'000ms, .retry_delay = 20'000ms};
        redlock::mutex holder(rig.client(0), "{orders}:sharded", options);
        redlock::mutex waiter(rig.client(1), "{orders}:sharded", options);
        auto [hec, held] = co_await holder.async_lock(use_tuple);
        BOOST_REQUIRE(!hec);
        std::optional<steady::time_point> resumed;
        redlock::diagnostics diag;
        waiter.async_lock(diag, [&](error_code ec, redlock::lease) {
            BOOST_TEST(!ec, ec.message());
            resumed = steady::now();
        });
        BOOST_REQUIRE(co_await redlock::test::all_listening(rig.nodes, "{orders}:sharded"));
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            BOOST_TEST(rig.nodes[i].cli({"PUBSUB", "SHARDCHANNELS"}) == "{orders}:sharded:released");
            BOOST_TEST(rig.nodes[i].cli({"PUBSUB", "CHANNELS"}) == "");  // no classic subscription
        }
        const auto released = steady::now();
        co_await held.async_release(use_tuple);
        for (int i = 0; i < 200 && !resumed; ++i) co_await redlock::test::sleep_for(5ms);
        BOOST_REQUIRE(resumed);
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(*resumed - released);
        BOOST_TEST(took < 1000ms, took.count() << " ms from the release to the grant");
        BOOST_TEST(diag.waiting().woken_by_release >= 1u);
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            BOOST_TEST(rig.nodes[i].command_stat("spublish") >= 1);
            BOOST_TEST(rig.nodes[i].command_stat("publish") == 0);
        }
    });
}
