// The fair lock's sequence against fake nodes: how a waiter over N nodes chooses its ticket (1 + the highest
// counter among a quorum's answers), gives back what its first attempt may hold, and asks again with the
// ticket; and a try-lock that takes no ticket and leaves no trace.
#include "common/fakes/fake_rig.hpp"

#include <redlock/mutex.hpp>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

namespace {

namespace asio = boost::asio;
namespace bdata = boost::unit_test::data;
using namespace redlock;
using namespace redlock::test;
using namespace std::chrono_literals;

constexpr auto use = asio::as_tuple(asio::use_awaitable);

// The fair scripts' requests, told apart by their keys: the acquire names the ticket counter ({key}:ticket).
bool fair_acquire(const exec_record& r)
{
    return r.keys.size() >= 4 && r.keys[3].ends_with(":ticket");
}
bool fair_release(const exec_record& r)
{
    return r.keys.size() == 3 && r.keys[1].ends_with(":queue");
}

// ARGV of the fair acquire: token, ttl, waiter ttl, ticket, take a ticket ("1" one node), fence step, channel.
std::string ticket_of(const exec_record& r)
{
    return r.args.at(3);
}

std::vector<exec_record> only(const std::vector<exec_record>& records, bool (*which)(const exec_record&))
{
    std::vector<exec_record> out;
    for (const auto& r : records)
        if (which(r)) out.push_back(r);
    return out;
}

resp::value refusal(std::int64_t counter)
{
    return array({integer(0), integer(60'000), bulk(std::to_string(counter)), bulk("0")});
}

lock_options fair_options()
{
    lock_options o;
    o.ttl = 2000ms;
    o.wait = 3000ms;
    o.fair = true;
    o.waiter_ttl = 30'000ms;  // no heartbeat during the test
    return o;
}

}  // namespace

// Nodes 0 and 1 answer at once (counters 5 and 9), node 2 late (counter 12): the ticket is chosen from the
// first quorum, 10. The refusals are definite, so only node 2, which had not answered, gets the clean-up.
BOOST_AUTO_TEST_CASE(over_n_nodes_the_ticket_is_one_more_than_the_highest_counter_of_a_quorum)
{
    rig r(3);
    const std::array<std::int64_t, 3> counters{5, 9, 12};
    for (std::size_t i = 0; i < r.n(); ++i) {
        r.fakes[i].set_policy([i, &counters](const exec_record& rec) {
            if (!fair_acquire(rec)) return action::released();
            if (ticket_of(rec) == "0") {
                if (i == 2) return action::delayed(200ms, refusal(counters[i]));
                return action::reply(refusal(counters[i]));
            }
            return action::reply(array({integer(1), bulk("0"), bulk(ticket_of(rec))}));
        });
    }
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        redlock::mutex m(*r.c, "res", fair_options());
        auto [ec, held] = co_await m.async_lock(diag, use);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
        co_await pause_for(300ms);  // node 2's late answer and its clean-up
        for (std::size_t i = 0; i < 2; ++i) {
            const auto acquires = only(r.fakes[i].received(), fair_acquire);
            BOOST_REQUIRE(acquires.size() == 2u);
            BOOST_TEST(ticket_of(acquires[0]) == "0");
            BOOST_TEST(acquires[0].args.at(4) == "0");  // over N nodes no node hands out the ticket
            BOOST_TEST(ticket_of(acquires[1]) == "10");
            // Refused at first: nothing to give back before the attempt with the ticket.
            BOOST_TEST(only(r.fakes[i].received(), fair_release).empty());
        }
        const auto late = only(r.fakes[2].received(), fair_release);
        BOOST_REQUIRE(late.size() >= 1u);
        BOOST_TEST(late.front().args.at(1).starts_with("~"), "a clean-up id: " << late.front().args.at(1));
        BOOST_TEST(late.front().args.at(3) == "0");  // keeps its place: it does not leave the queue
        co_await held.async_release(asio::use_awaitable);
    });
}

// A try-lock does not wait, so it has no use for a place in the queue: no ticket taken (one node included),
// no leave sent when refused.
BOOST_DATA_TEST_CASE(a_fair_try_lock_takes_no_ticket_and_leaves_no_trace, bdata::make({1, 3}), n)
{
    rig r(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < r.n(); ++i)
        r.fakes[i].set_policy([](const exec_record&) { return action::reply(refusal(3)); });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex m(*r.c, "res", fair_options());
        auto [ec, held] = co_await m.async_try_lock(use);
        BOOST_TEST(ec == error::not_acquired, ec.message());
        co_await pause_for(100ms);
        for (std::size_t i = 0; i < r.n(); ++i) {
            const auto records = r.fakes[i].received();
            BOOST_REQUIRE(records.size() == 1u);
            BOOST_TEST(fair_acquire(records[0]));
            BOOST_TEST(ticket_of(records[0]) == "0");
            BOOST_TEST(records[0].args.at(4) == "0");
        }
    });
}

// A fair waiter whose subscriptions never settle (node 1 refuses them, node 2 never answers) waits for them after
// each refusal. That wait is part of its pause: its attempts, its heartbeats, still leave at most waiter_ttl / 3
// after the last one answered, not a wait for subscriptions and then a whole pause (together up to 2 waiter_ttl / 3:
// with a waiter TTL just above 3 node timeouts, slow nodes would then miss the heartbeat).
BOOST_AUTO_TEST_CASE(a_fair_waiters_wait_for_its_subscriptions_is_part_of_its_pause)
{
    rig r(3);
    std::vector<std::chrono::steady_clock::time_point> sent;  // node 0's acquires
    for (std::size_t i = 0; i < r.n(); ++i)
        r.fakes[i].set_policy([i, &sent](const exec_record& rec) {
            if (!fair_acquire(rec)) return action::released();
            if (i == 0) sent.push_back(std::chrono::steady_clock::now());
            return action::reply(refusal(7));
        });
    r.fakes[1].on_subscribe([](const std::vector<std::string>&) { return make_error_code(error::server_error); });
    r.fakes[2].hold_subscriptions();
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = fair_options();
        o.wait = 1500ms;
        o.node_timeout = 50ms;
        o.waiter_ttl = 300ms;  // at most 100 ms from an attempt's answer to the next attempt
        o.retry_delay = 10'000ms;
        o.retry_jitter = 0ms;
        redlock::mutex m(*r.c, "res", o);
        auto [ec, held] = co_await m.async_lock(use);
        BOOST_TEST(ec == error::not_acquired, ec.message());
    });
    // The first attempt sends two acquires (without its ticket, then with it); each later one sends one.
    BOOST_REQUIRE(sent.size() >= 6u);
    std::chrono::steady_clock::duration longest{};
    for (std::size_t i = 2; i < sent.size(); ++i) longest = std::max(longest, sent[i] - sent[i - 1]);
    const auto longest_ms = std::chrono::duration_cast<std::chrono::milliseconds>(longest);
    BOOST_TEST_MESSAGE(sent.size() << " acquires on node 0, at most " << longest_ms.count() << " ms apart");
    BOOST_TEST((longest_ms < 150ms), longest_ms.count() << " ms");  // 100 ms, and the machine's latency
}
