// Leader election on 1 and 3 real nodes (and 3 with one down): campaign, proclaim, leader and resign; a waiting
// candidate leads at the resignation, woken by its message; terms strictly increase over leaders and over a node that
// lost its data; an observer sees every change in order, by message, and a silently dead leader at its key's expiry;
// with_leadership cancels its body when the leadership is lost; a deposed leader's fenced write is refused.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <common/processes/frozen_process.hpp>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/node_setups.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_rig.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::election;
using redlock::error;
using redlock::error_code;
using redlock::leader_info;
using redlock::leadership;
using redlock::test::redis_rig;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

const auto& setups = redlock::test::one_three_and_three_with_one_down;
const std::string name = "leader";

redlock::lock_options options(ms ttl = 10'000ms, ms wait = 20'000ms)
{
    return {.ttl = ttl, .wait = wait, .node_timeout = 100ms, .retry_delay = 20ms, .retry_jitter = 10ms};
}

ms since(steady::time_point t)
{
    return std::chrono::duration_cast<ms>(steady::now() - t);
}

// The next change an observer delivers, or a failed test after `limit`.
asio::awaitable<std::optional<leader_info>> next_within(redlock::election_observer& o, ms limit)
{
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer timer(ex, limit);
    asio::cancellation_signal stop;
    timer.async_wait([&stop](error_code ec) {
        if (!ec) stop.emit(asio::cancellation_type::terminal);
    });
    redlock::diagnostics diag;
    auto [ec, seen] = co_await o.async_next(diag, asio::bind_cancellation_slot(stop.slot(), use_tuple));
    timer.cancel();
    BOOST_TEST_REQUIRE(!ec, "no change within " << limit.count() << " ms: " << ec.message());
    co_return seen;
}

std::string describe(const std::optional<leader_info>& l)
{
    return l ? "term " + std::to_string(l->term) + " '" + l->value + "' rev " + std::to_string(l->revision)
             : std::string("nobody");
}

}  // namespace

BOOST_DATA_TEST_CASE(campaign_proclaim_leader_and_resign, setups, s)
{
    redis_rig rig(s);
    rig.run([&]() -> asio::awaitable<void> {
        election e(rig.client(), name, options());
        auto [none_ec, nobody] = co_await e.async_leader(use_tuple);
        BOOST_TEST(!none_ec);
        BOOST_TEST(!nobody, describe(nobody));

        redlock::diagnostics diag;
        auto [ec, led] = co_await e.async_campaign("node-a", diag, use_tuple);
        BOOST_TEST_REQUIRE(!ec, ec.message() << ": " << diag.message());
        BOOST_TEST(led.term() > 0u);
        BOOST_TEST(led.value() == "node-a");
        BOOST_TEST(led.revision() == 1u);
        BOOST_TEST(led.name() == name);
        BOOST_TEST(led.validity() > 5000ms);

        auto [lec, leader] = co_await e.async_leader(use_tuple);
        BOOST_TEST_REQUIRE(!lec);
        BOOST_TEST_REQUIRE(leader.has_value());
        BOOST_TEST(leader->token == led.token());
        BOOST_TEST(leader->term == led.term());
        BOOST_TEST(leader->value == "node-a");
        BOOST_TEST(leader->revision == 1u);

        auto [pec] = co_await led.async_proclaim("node-a, v2", use_tuple);
        BOOST_TEST_REQUIRE(!pec, pec.message());
        BOOST_TEST(led.value() == "node-a, v2");
        BOOST_TEST(led.revision() == 2u);
        auto [lec2, changed] = co_await e.async_leader(use_tuple);
        BOOST_TEST_REQUIRE(changed.has_value());
        BOOST_TEST(changed->value == "node-a, v2");
        BOOST_TEST(changed->term == led.term(), "a proclaim keeps the term");

        // Only the leader's key was created besides the hash and the fence counter; the hash has no TTL.
        BOOST_TEST(rig.nodes[0].cli({"PTTL", redlock::leader_key(name)}) == "-1");

        auto [rec] = co_await led.async_resign(use_tuple);
        BOOST_TEST(!rec, rec.message());
        auto [aec, after] = co_await e.async_leader(use_tuple);
        BOOST_TEST(!aec);
        BOOST_TEST(!after, "the leader resigned, yet: " << describe(after));
        auto [late] = co_await led.async_proclaim("too late", use_tuple);
        BOOST_TEST(late == error::not_owner, late.message());
    });
}

BOOST_DATA_TEST_CASE(bad_arguments_are_refused_before_any_io, setups, s)
{
    redis_rig rig(s);
    rig.run([&]() -> asio::awaitable<void> {
        auto [ec, led] = co_await election(rig.client(), "", options()).async_campaign("x", use_tuple);
        BOOST_TEST(ec == error::invalid_argument);
        auto o = options();
        o.fair = true;
        auto [fec, fled] = co_await election(rig.client(), name, o).async_campaign("x", use_tuple);
        BOOST_TEST(fec == error::invalid_argument);
        auto [lec, leader] = co_await election(rig.client(), "").async_leader(use_tuple);
        BOOST_TEST(lec == error::invalid_argument);
        auto [pec] = co_await leadership{}.async_proclaim("x", use_tuple);
        BOOST_TEST(pec == error::not_owner);
    });
}

// Candidate B waits while A leads (TTL 10 s); A resigns after 300 ms: B leads within a second, woken by the release
// message, not by A's TTL; its term is above A's.
BOOST_DATA_TEST_CASE(a_waiting_candidate_leads_at_the_resignation_by_message, setups, s)
{
    redis_rig rig(s, 2);
    rig.run([&]() -> asio::awaitable<void> {
        for (auto& c : rig.clients) co_await c->async_connect(asio::use_awaitable);
        election a(rig.client(0), name, options()), b(rig.client(1), name, options());
        leadership led_a = co_await a.async_campaign("a", asio::use_awaitable);
        std::optional<leadership> led_b;
        steady::time_point elected_b{};
        // Named: it must outlive the coroutine it makes (this frame does).
        auto campaign_b = [&]() -> asio::awaitable<void> {
            led_b = co_await b.async_campaign("b", asio::use_awaitable);
            elected_b = steady::now();
        };
        asio::co_spawn(co_await asio::this_coro::executor, campaign_b(), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
        co_await sleep_for(300ms);
        BOOST_TEST(!led_b.has_value(), "two leaders at once");
        const auto resigned = steady::now();
        co_await led_a.async_resign(asio::use_awaitable);
        while (!led_b && since(resigned) < 5000ms) co_await sleep_for(5ms);
        BOOST_TEST_REQUIRE(led_b.has_value());
        const auto took = std::chrono::duration_cast<ms>(elected_b - resigned);
        BOOST_TEST_MESSAGE(s << ": B elected " << took.count() << " ms after A resigned");
        BOOST_TEST(took < 1000ms, "B waited for A's TTL rather than its release message");
        BOOST_TEST(led_b->term() > led_a.term());
        auto [ec, leader] = co_await a.async_leader(use_tuple);
        BOOST_TEST_REQUIRE(leader.has_value());
        BOOST_TEST(leader->value == "b");
        co_await led_b->async_resign(asio::use_awaitable);
    });
}

// Six leaderships from two clients, one after another; on 3 nodes node 0 loses everything (FLUSHALL) half way: every
// term is above the one before (the fence counters of the other nodes carry it over).
BOOST_DATA_TEST_CASE(terms_strictly_increase_over_leaders_and_a_flushed_node, setups, s)
{
    redis_rig rig(s, 2);
    rig.run([&]() -> asio::awaitable<void> {
        std::vector<std::uint64_t> terms;
        for (int i = 0; i < 6; ++i) {
            if (i == 3 && s.nodes == 3) rig.nodes[0].cli({"FLUSHALL"});
            election e(rig.client(i % 2), name, options());
            leadership led = co_await e.async_campaign("c" + std::to_string(i), asio::use_awaitable);
            terms.push_back(led.term());
            auto [ec, leader] = co_await e.async_leader(use_tuple);
            BOOST_TEST_REQUIRE(leader.has_value());
            BOOST_TEST(leader->term == led.term());
            co_await led.async_resign(asio::use_awaitable);
        }
        for (std::size_t i = 1; i < terms.size(); ++i)
            BOOST_TEST(terms[i] > terms[i - 1], "term " << i << ": " << terms[i] << " after " << terms[i - 1]);
    });
}

// An observer (another client) sees: nobody, A with its proposal, A's new value, nobody after A resigns, B; each within
// a second of the change although the TTL is 10 s (by message, not at an expiry); and a leader that vanished without a
// word (its process frozen) at its key's expiry, TTL 1 s.
BOOST_DATA_TEST_CASE(an_observer_sees_every_change_in_order, setups, s)
{
    redis_rig rig(s, 2);
    redlock::test::frozen_process doomed(redlock::test::configs(rig.nodes));
    rig.run([&]() -> asio::awaitable<void> {
        for (auto& c : rig.clients) co_await c->async_connect(asio::use_awaitable);
        election watched(rig.client(1), name, options());
        auto observer = watched.observe();
        auto first = co_await next_within(observer, 3000ms);
        BOOST_TEST(!first, describe(first));

        election a(rig.client(0), name, options());
        leadership led = co_await a.async_campaign("a1", asio::use_awaitable);
        auto t = steady::now();
        auto seen = co_await next_within(observer, 1000ms);
        BOOST_TEST_MESSAGE(s << ": the new leader seen " << since(t).count() << " ms after its campaign returned");
        BOOST_TEST_REQUIRE(seen.has_value());
        BOOST_TEST(seen->term == led.term());
        BOOST_TEST(seen->value == "a1");

        t = steady::now();
        co_await led.async_proclaim("a2", asio::use_awaitable);
        seen = co_await next_within(observer, 1000ms);
        BOOST_TEST_REQUIRE(seen.has_value());
        BOOST_TEST(seen->value == "a2");
        BOOST_TEST(seen->revision == 2u);
        BOOST_TEST_MESSAGE(s << ": the new value seen " << since(t).count() << " ms after the proclaim returned");

        t = steady::now();
        co_await led.async_resign(asio::use_awaitable);
        seen = co_await next_within(observer, 1000ms);
        BOOST_TEST(!seen, "after the resignation: " << describe(seen));
        BOOST_TEST_MESSAGE(s << ": the resignation seen " << since(t).count() << " ms after it returned");

        election b(rig.client(0), name, options());
        leadership led_b = co_await b.async_campaign("b", asio::use_awaitable);
        seen = co_await next_within(observer, 1000ms);
        BOOST_TEST_REQUIRE(seen.has_value());
        BOOST_TEST(seen->value == "b");
        BOOST_TEST(seen->term > led.term());
        // Destroying the leadership resigns in the background: heard by message too.
        t = steady::now();
        led_b = leadership{};
        seen = co_await next_within(observer, 1000ms);
        BOOST_TEST(!seen, describe(seen));

        // A leader that publishes nothing when it goes: seen gone once its key expires (TTL 1 s), not before.
        election frozen(doomed.client(), name, options(1000ms));
        auto [fec, frozen_led] = co_await frozen.async_campaign("frozen", asio::as_tuple(asio::use_awaitable));
        BOOST_TEST_REQUIRE(!fec, fec.message());
        seen = co_await next_within(observer, 1000ms);
        BOOST_TEST_REQUIRE(seen.has_value());
        BOOST_TEST(seen->value == "frozen");
        doomed.freeze();
        t = steady::now();
        seen = co_await next_within(observer, 3000ms);
        BOOST_TEST(!seen, describe(seen));
        BOOST_TEST_MESSAGE(s << ": a frozen leader seen gone " << since(t).count() << " ms after it froze (TTL 1 s)");
        BOOST_TEST(since(t) < 2000ms);
    });
}

// with_leadership (TTL 900 ms): the election key is deleted on every node; the watchdog's next extension finds it gone
// and the body is cancelled at once; with_leadership throws error::lost, and another candidate can lead.
BOOST_DATA_TEST_CASE(with_leadership_cancels_its_body_when_the_leadership_is_lost, setups, s)
{
    redis_rig rig(s);
    rig.run([&]() -> asio::awaitable<void> {
        election e(rig.client(), name, options(900ms));
        bool started = false, finished = false;
        std::uint64_t term = 0;
        auto body = [&](const leadership& led) -> asio::awaitable<void> {
            started = true;
            term = led.term();
            asio::steady_timer work(co_await asio::this_coro::executor, 10'000ms);
            co_await work.async_wait(asio::use_awaitable);  // throws when cancelled
            finished = true;
        };
        auto ex = co_await asio::this_coro::executor;
        bool threw_lost = false, done = false;
        asio::co_spawn(ex, redlock::with_leadership(e, "worker", body), [&](std::exception_ptr ep) {
            done = true;
            try {
                if (ep) std::rethrow_exception(ep);
            } catch (const boost::system::system_error& x) {
                threw_lost = x.code() == error::lost;
            }
        });
        while (!started) co_await sleep_for(5ms);
        co_await sleep_for(100ms);
        const auto deleted = steady::now();
        for (std::size_t i = 0; i < rig.nodes.size(); ++i)
            if (rig.nodes[i].running()) rig.nodes[i].cli({"DEL", name});
        while (!done && since(deleted) < 3000ms) co_await sleep_for(5ms);
        BOOST_TEST_REQUIRE(done, "the body was not cancelled");
        BOOST_TEST(threw_lost);
        BOOST_TEST(!finished);
        BOOST_TEST_MESSAGE(s << ": the body cancelled " << since(deleted).count() << " ms after the key was deleted");
        BOOST_TEST(since(deleted) < 900ms);
        leadership next = co_await e.async_campaign("next", asio::use_awaitable);
        BOOST_TEST(next.term() > term);
    });
}

// Leader A writes to a resource with its term; it is deposed (its key deleted everywhere: it does not know yet), B is
// elected and writes with its higher term; A's late write with its old term is refused.
BOOST_DATA_TEST_CASE(a_deposed_leaders_fenced_write_is_refused, setups, s)
{
    redis_rig rig(s, 2);
    rig.run([&]() -> asio::awaitable<void> {
        redlock::redis store(rig.ctx.get_executor(), redlock::parse_url(rig.nodes[0].url()));
        const std::string guard = "{account}:fence";
        const auto write = [&](std::uint64_t term, std::string value) {
            redlock::fenced_write w(guard, term);
            w.command("SET", "{account}:owner", {value});
            return redlock::async_fenced_write(store, w, use_tuple);
        };
        leadership a = co_await election(rig.client(0), name, options()).async_campaign("a", asio::use_awaitable);
        auto [aec, atoken] = co_await write(a.term(), "a");
        BOOST_TEST_REQUIRE(!aec, aec.message());
        for (std::size_t i = 0; i < rig.nodes.size(); ++i)
            if (rig.nodes[i].running()) rig.nodes[i].cli({"DEL", name});
        leadership b = co_await election(rig.client(1), name, options()).async_campaign("b", asio::use_awaitable);
        BOOST_TEST_REQUIRE(b.term() > a.term());
        auto [bec, btoken] = co_await write(b.term(), "b");
        BOOST_TEST_REQUIRE(!bec, bec.message());
        auto [late, newer] = co_await write(a.term(), "a, late");
        BOOST_TEST(late == error::stale_token, late.message());
        BOOST_TEST(newer == b.term());
        BOOST_TEST(rig.nodes[0].cli({"GET", "{account}:owner"}) == "b");
        co_await b.async_resign(asio::use_awaitable);
    });
}
