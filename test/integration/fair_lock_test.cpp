// The fair lock on 1 and 3 real nodes (and 3 with one down): grants in arrival order across clients, and in
// ticket order across processes, dead waiters that stop blocking within one waiter TTL however many there are, a
// live waiter never evicted, cancelling leaves the queue at once, and an idle lock leaves no key behind.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <common/models/fair_queue.hpp>
#include <common/models/slow_fair_waiters.hpp>
#include <common/processes/frozen_process.hpp>
#include <common/processes/helper_process.hpp>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/node_setups.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_rig.hpp>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

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

const auto& setups = redlock::test::one_three_and_three_with_one_down;

redlock::lock_options fair(std::chrono::milliseconds wait = 60'000ms, std::chrono::milliseconds waiter_ttl = 2000ms)
{
    redlock::lock_options o;
    o.ttl = 30'000ms;
    o.wait = wait;
    o.node_timeout = 300ms;
    o.fair = true;
    o.waiter_ttl = waiter_ttl;
    return o;
}

const std::string key = "fifo";

// Waiters queued on node 0 (the queue's members, live or not yet dropped).
std::size_t queued(const redlock::test::redis_node& node)
{
    return redlock::test::fair_queue_length(node, key);
}

std::string queue_dump(const redlock::test::redis_node& node)
{
    return "queue " + node.cli({"ZRANGE", "{fifo}:queue", "0", "-1", "WITHSCORES"}) + "; alive " +
           node.cli({"ZRANGE", "{fifo}:alive", "0", "-1", "WITHSCORES"}) + "; time " + node.cli({"TIME"});
}

std::string not_joined(const redlock::test::redis_node& node, int waiter, const std::vector<std::string>& failures)
{
    return "waiter " + std::to_string(waiter) + " did not join the queue: " + queue_dump(node) + "; " +
           std::to_string(failures.size()) + " failed, first: " + (failures.empty() ? "" : failures.front());
}

asio::awaitable<bool> until_queued(const redlock::test::redis_node& node, std::size_t n)
{
    const auto deadline = steady::now() + 5s;
    while (queued(node) != n) {
        if (steady::now() >= deadline) co_return false;
        co_await sleep_for(2ms);
    }
    co_return true;
}

}  // namespace

// 3 clients x 20 waiters, each started once the one before it is queued: the grants come in that order.
BOOST_DATA_TEST_CASE(grants_follow_the_order_of_arrival_across_clients, setups, s)
{
    redis_rig rig(s, 4);
    constexpr int waiters = 60;
    std::vector<int> grants;
    std::vector<std::string> failures;
    int inside = 0, overlaps = 0;

    auto waiter = [&](redlock::client& c, int index) -> asio::awaitable<void> {
        redlock::mutex m(c, key, fair());
        redlock::diagnostics diag;
        auto [ec, held] = co_await m.async_lock(diag, use_tuple);
        if (ec) {
            failures.push_back(std::to_string(index) + ": " + ec.message() + ": " + std::string(diag.message()));
            co_return;
        }
        if (inside++ != 0) ++overlaps;
        grants.push_back(index);
        --inside;
        co_await held.async_release(use_tuple);
    };
    rig.run([&]() -> asio::awaitable<void> {
        for (auto& c : rig.clients) co_await c->async_connect(asio::use_awaitable);
        redlock::mutex m(*rig.clients[3], key, fair());
        auto [ec, holder] = co_await m.async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        for (int i = 0; i < waiters; ++i) {
            asio::co_spawn(rig.ctx, waiter(*rig.clients[static_cast<std::size_t>(i % 3)], i), asio::detached);
            const bool joined = co_await until_queued(rig.nodes[0], static_cast<std::size_t>(i + 1));
            if (!joined) {
                const auto why = not_joined(rig.nodes[0], i, failures);
                BOOST_FAIL(why);
            }
        }
        co_await holder.async_release(use_tuple);
        const auto deadline = steady::now() + 60s;
        while (grants.size() + failures.size() < waiters && steady::now() < deadline) co_await sleep_for(10ms);
    });
    std::string all;
    for (const auto& f : failures) all += f + "; ";
    BOOST_TEST(failures.empty(), all);
    BOOST_TEST(overlaps == 0);
    std::vector<int> expected(waiters);
    std::iota(expected.begin(), expected.end(), 0);
    BOOST_TEST(grants == expected, boost::test_tools::per_element());
}

namespace {

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

}  // namespace

// 3 processes x 20 waiters, in 20 rounds: one waiter of each process asks at once (over 3 nodes their tickets may
// tie, and the lower token goes first), and the next round starts once all three are queued on a quorum, so its
// tickets must be higher. Then the holder releases: every grant, across the processes, follows the tickets the
// queues hold.
BOOST_DATA_TEST_CASE(grants_across_processes_follow_the_ticket_order, data::make({1, 3}), n)
{
    cluster nodes(static_cast<std::size_t>(n));
    redlock::test::redis_node observer;  // the processes' start signals, and the order of the grants
    constexpr int processes = 3, rounds = 20;
    const auto dir = redlock::test::make_temp_dir("fair-processes-");
    std::vector<std::unique_ptr<redlock::test::helper_process>> helpers;  // test/helpers/fair_waiter.cpp
    for (int p = 0; p < processes; ++p)
        helpers.push_back(std::make_unique<redlock::test::helper_process>(
            "fair_waiter", dir, "waiter" + std::to_string(p),
            std::vector<std::string>{redlock::test::comma_joined(nodes.urls()), observer.url(), key, std::to_string(p),
                                     std::to_string(rounds)}));
    std::map<std::string, int> round_of;
    std::map<std::string, std::uint64_t> ticket_of;
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), configs(nodes));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await c.async_connect(asio::use_awaitable);
        redlock::mutex m(c, key, fair());
        auto [ec, holder] = co_await m.async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        for (int r = 0; r < rounds; ++r) {
            // One script signals the processes at once.
            std::vector<std::string> signal{"EVAL", "for _, k in ipairs(KEYS) do redis.call('RPUSH', k, 1) end",
                                            std::to_string(processes)};
            for (int p = 0; p < processes; ++p) signal.push_back("go:" + std::to_string(p));
            observer.cli(signal);
            const auto placed_by_now = static_cast<std::size_t>(processes * (r + 1));
            std::set<std::string> placed;
            for (const auto deadline = steady::now() + 5s;
                 (placed = redlock::test::queued_on_quorum(nodes, key)).size() < placed_by_now;) {
                if (steady::now() >= deadline)
                    BOOST_FAIL("round " << r << ": " << placed.size() << " placed, " << queue_dump(nodes[0]));
                co_await sleep_for(2ms);
            }
            BOOST_REQUIRE_EQUAL(placed.size(), placed_by_now);
            for (const auto& token : placed) round_of.try_emplace(token, r);
        }
        // Each waiter's ticket: the same in every queue that holds it.
        for (std::size_t i = 0; i < nodes.size(); ++i)
            for (const auto& w : redlock::test::fair_queue(nodes[i], key)) {
                const auto [it, fresh] = ticket_of.try_emplace(w.token, w.ticket);
                BOOST_TEST(it->second == w.ticket, "node " << i << " queues " << w.token << " with another ticket");
            }
        co_await holder.async_release(use_tuple);
    });
    for (auto& h : helpers) {
        const auto status = h->wait(30s);
        BOOST_REQUIRE_MESSAGE(status != -1, "a process hangs: " << h->output());
        BOOST_TEST(status == 0, h->output());
        BOOST_TEST(h->field("granted") == rounds);
    }
    BOOST_REQUIRE_EQUAL(ticket_of.size(), static_cast<std::size_t>(processes * rounds));

    // FIFO: every ticket of a round is above every ticket of the round before.
    std::vector<std::uint64_t> lowest(rounds, std::numeric_limits<std::uint64_t>::max()), highest(rounds, 0);
    for (const auto& [token, r] : round_of) {
        const auto i = static_cast<std::size_t>(r);
        lowest[i] = std::min(lowest[i], ticket_of.at(token));
        highest[i] = std::max(highest[i], ticket_of.at(token));
    }
    for (std::size_t r = 1; r < lowest.size(); ++r)
        BOOST_TEST(lowest[r] > highest[r - 1],
                   "round " << r << " has ticket " << lowest[r] << ", round " << r - 1 << " had " << highest[r - 1]);

    // The grants, in order, are the waiters by (ticket, token). Each is shown as "ticket token".
    auto labelled = [&](const std::string& token) {
        const auto it = ticket_of.find(token);
        return (it == ticket_of.end() ? std::string("?") : std::to_string(it->second)) + " " + token;
    };
    std::vector<std::pair<std::uint64_t, std::string>> by_ticket;
    for (const auto& [token, ticket] : ticket_of) by_ticket.emplace_back(ticket, token);
    std::sort(by_ticket.begin(), by_ticket.end());
    std::vector<std::string> expected;
    std::size_t ties = 0;
    for (std::size_t i = 0; i < by_ticket.size(); ++i) {
        expected.push_back(labelled(by_ticket[i].second));
        if (i > 0 && by_ticket[i].first == by_ticket[i - 1].first) ++ties;
    }
    BOOST_TEST_MESSAGE(ties << " waiters had the ticket of the one before them");
    std::vector<std::string> grants;
    for (const auto& token : lines_of(observer.cli({"LRANGE", "grants", "0", "-1"}))) grants.push_back(labelled(token));
    BOOST_TEST(grants == expected, boost::test_tools::per_element());
}

// Waiters of a client whose process froze (its io_context stopped: no heartbeat, no leave) are queued ahead
// of a live one. Once the holder releases, they stop blocking within one waiter TTL of their last heartbeat,
// however many they are (not one TTL each).
BOOST_DATA_TEST_CASE(dead_waiters_ahead_stop_blocking_within_one_waiter_ttl, setups, s)
{
    constexpr auto waiter_ttl = 1000ms;
    constexpr int dead = 5;
    redis_rig rig(s, 2);
    auto& live = rig.client(0);
    auto& holder_client = rig.client(1);
    redlock::test::frozen_process frozen(configs(rig.nodes));
    steady::time_point last_heartbeat;

    rig.run([&]() -> asio::awaitable<void> {
        co_await live.async_connect(asio::use_awaitable);
        co_await holder_client.async_connect(asio::use_awaitable);
        redlock::mutex m(holder_client, key, fair());
        auto [ec, holder] = co_await m.async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());

        // The dead: queued, then their process stops for good.
        for (int i = 0; i < dead; ++i) {
            redlock::mutex(frozen.client(), key, fair(60'000ms, waiter_ttl)).async_lock([](error_code, redlock::lease) {
            });
            BOOST_REQUIRE(co_await until_queued(rig.nodes[0], static_cast<std::size_t>(i + 1)));
        }
        frozen.freeze();
        last_heartbeat = steady::now();

        redlock::mutex w(live, key, fair(60'000ms, waiter_ttl));
        std::optional<steady::time_point> granted;
        redlock::lease got;
        redlock::diagnostics diag;
        w.async_lock(diag, [&](error_code e, redlock::lease l) {
            BOOST_TEST(!e, e.message());
            granted = steady::now();
            got = std::move(l);
        });
        BOOST_REQUIRE(co_await until_queued(rig.nodes[0], dead + 1));
        co_await holder.async_release(use_tuple);
        while (!granted && steady::now() - last_heartbeat < 20s) co_await sleep_for(10ms);
        BOOST_REQUIRE(granted.has_value());
        const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(*granted - last_heartbeat);
        BOOST_TEST_MESSAGE("granted " << after.count() << " ms after the dead waiters' last heartbeat");
        // One waiter TTL, and the live waiter's heartbeat (a third of it) to notice: never 5 TTLs.
        BOOST_TEST((after < waiter_ttl + waiter_ttl / 3 + 700ms), after.count() << " ms");
        // The dead were dropped (node 0 may answer the grant after the quorum decided: its script then drops them).
        BOOST_TEST(co_await until_queued(rig.nodes[0], 1));
        co_await got.async_release(use_tuple);
    });
}

// A waiter that waits far longer than its waiter TTL (its heartbeats keep it: 30 s, thirty TTLs, on three nodes)
// keeps its place on every node, sampled all along: a later waiter is not served before it.
BOOST_DATA_TEST_CASE(a_live_waiter_is_never_evicted_however_long_it_waits, data::make({1, 3}), n)
{
    redis_rig rig(n);
#ifdef REDLOCK_TEST_SANITIZED
    const std::chrono::seconds hold = 10s;
#else
    // Thirty waiter TTLs on three nodes, twenty on one: the file stays well inside its ctest timeout.
    const std::chrono::seconds hold = n == 3 ? 30s : 20s;
#endif
    std::vector<int> grants;
    rig.run(
        [&]() -> asio::awaitable<void> {
            co_await rig.client().async_connect(asio::use_awaitable);
            // A waiter TTL of 1 s, not shorter: each sample runs redis-cli on this thread, which sends the heartbeats
            // too.
            auto o = fair(90'000ms, 1000ms);
            o.watchdog = true;
            o.ttl = 3000ms;
            redlock::mutex m(rig.client(), key, o);
            auto [ec, holder] = co_await m.async_lock(use_tuple);
            BOOST_REQUIRE_MESSAGE(!ec, ec.message());
            auto waiter = [&](int index) -> asio::awaitable<void> {
                auto [e, held] = co_await m.async_lock(use_tuple);
                BOOST_TEST(!e, e.message());
                grants.push_back(index);
                co_await held.async_release(use_tuple);
            };
            asio::co_spawn(rig.ctx, waiter(1), asio::detached);
            for (std::size_t i = 0; i < rig.nodes.size(); ++i) BOOST_REQUIRE(co_await until_queued(rig.nodes[i], 1));
            asio::co_spawn(rig.ctx, waiter(2), asio::detached);
            for (std::size_t i = 0; i < rig.nodes.size(); ++i) BOOST_REQUIRE(co_await until_queued(rig.nodes[i], 2));
            std::size_t samples = 0, short_queues = 0;
            for (const auto end = steady::now() + hold; steady::now() < end;) {
                co_await sleep_for(20ms);
                for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
                    ++samples;
                    if (queued(rig.nodes[i]) != 2u) {
                        ++short_queues;
                        BOOST_TEST_MESSAGE("a waiter was missing: " << queue_dump(rig.nodes[i]));
                    }
                }
            }
            BOOST_TEST_MESSAGE(samples << " samples of the queues while the waiters waited");
            BOOST_TEST(short_queues == 0u);
            co_await holder.async_release(use_tuple);
            while (grants.size() < 2) co_await sleep_for(10ms);
        },
        120s);
    BOOST_TEST(grants == (std::vector<int>{1, 2}), boost::test_tools::per_element());
}

namespace {

// How the scenario of test/common/models/slow_fair_waiters.hpp takes a fair lock.
struct lock_kind {
    static asio::awaitable<std::tuple<error_code, redlock::lease>> take(redlock::client& c, std::string name,
                                                                        redlock::lock_options o,
                                                                        redlock::diagnostics& diag)
    {
        redlock::mutex m(c, std::move(name), o);
        auto taken = co_await m.async_lock(diag, use_tuple);
        co_return taken;
    }
    static std::string id(const redlock::lease& held) { return held.token(); }
};

}  // namespace

// Six fair waiters of one client on slow nodes (each request and each reply 40 % of a node timeout late), with
// the shortest waiter TTL the library accepts for that node timeout, while another client holds the lock. The
// client's attempt gate lets one attempt of a lock through at a time: a waiter that queued there behind the others'
// attempts before its own heartbeat (six round trips) missed it and dropped out of the queue while alive. An
// observer on the nodes themselves (not behind the proxies) reads every heartbeat for the whole wait: none comes
// later than a waiter TTL after the one before, no waiter leaves the queue before it is served, and then the
// grants follow the tickets. A run that failed while the machine did not keep up (a PING through a proxy slower than
// the node timeout, or the event loop 100 ms late) runs again, up to 3 times
// (test/common/models/slow_fair_waiters.hpp).
BOOST_DATA_TEST_CASE(fair_waiters_of_one_client_on_slow_nodes_heartbeat_in_time_whatever_the_gate, data::make({1, 3}),
                     n)
{
    redlock::test::slow_fair_setup s;  // a node timeout of 300 ms, 120 ms each way, 6 waiters, a hold of 4 s
    s.nodes = static_cast<std::size_t>(n);
    s.name = key;
#ifdef REDLOCK_TEST_SANITIZED
    s.node_timeout = 450ms;
    s.delay = 180ms;
    s.hold = 6s;
#endif
    // The shortest waiter TTL accepted (lock_call.cpp, invalid_arguments). Heartbeats come 2 delays + a third of it
    // apart (540 ms of 901): a machine that stalls a node or the client a moment is no eviction. Behind the gate,
    // they came 6 round trips apart (1440 ms).
    s.waiter_ttl = 3 * s.node_timeout + 1ms;
    redlock::test::check_slow_fair_waiters<lock_kind>(s);
}

// A waiter of another process whose attempt with its ticket reached node 0 alone (and that heartbeats for a
// minute) is first there only: the order binds waiters queued on a quorum, so a newcomer wins nodes 1 and 2
// and the lock, rather than everyone waiting on a place no quorum knows.
BOOST_AUTO_TEST_CASE(a_waiter_queued_on_a_minority_only_does_not_block_the_others)
{
    redis_rig rig(3);
    rig.nodes[0].cli({"ZADD", "{fifo}:queue", "1", "elsewhere"});
    rig.nodes[0].cli({"EVAL",
                      "local t = redis.call('TIME') return redis.call('ZADD', KEYS[1], t[1] * 1000 + 60000, ARGV[1])",
                      "1", "{fifo}:alive", "elsewhere"});
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::diagnostics diag;
        redlock::mutex m(rig.client(), key, fair(2000ms));
        auto [ec, held] = co_await m.async_lock(diag, use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
        BOOST_TEST(diag.waiting().attempts == 1u);
        co_await held.async_release(use_tuple);
    });
}

// A queue entry without a heartbeat (its alive entry deleted by hand, or lost) at the head is dropped, not
// waited for: the next waiter gets the free lock at once.
BOOST_AUTO_TEST_CASE(a_head_without_a_heartbeat_does_not_block)
{
    redis_rig rig(1);
    rig.nodes[0].cli({"ZADD", "{fifo}:queue", "0", "ghost"});
    rig.run([&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        redlock::mutex m(rig.client(), key, fair(2000ms));
        auto [ec, held] = co_await m.async_lock(diag, use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
        BOOST_TEST(diag.waiting().attempts == 1u);
        co_await held.async_release(use_tuple);
    });
}

// The ticket counter lives as long as the longest waiter TTL among those queued: a waiter with a short one must
// not cut it, or a newcomer after its expiry would take ticket 1 and jump ahead of a long-lived waiter.
BOOST_AUTO_TEST_CASE(a_short_waiter_ttl_does_not_shorten_the_ticket_counters_life)
{
    cluster nodes(3);  // over N nodes a waiter sets each counter to the ticket it chose
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), configs(nodes));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex m(c, key, fair());
        auto [ec, holder] = co_await m.async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        std::vector<error_code> results;
        auto wait_with = [&](std::chrono::milliseconds waiter_ttl) {
            auto o = fair(3000ms, waiter_ttl);
            o.node_timeout = 50ms;
            redlock::mutex(c, key, o).async_lock([&](error_code e, redlock::lease) { results.push_back(e); });
        };
        wait_with(60'000ms);
        for (std::size_t i = 0; i < nodes.size(); ++i) BOOST_REQUIRE(co_await until_queued(nodes[i], 1));
        wait_with(200ms);
        for (std::size_t i = 0; i < nodes.size(); ++i) BOOST_REQUIRE(co_await until_queued(nodes[i], 2));
        for (std::size_t i = 0; i < nodes.size(); ++i)  // two of the long waiter TTLs
            BOOST_TEST(std::stol(nodes[i].cli({"PTTL", "{fifo}:ticket"})) > 60'000);
        co_await holder.async_release(use_tuple);
        while (results.size() < 2) co_await sleep_for(10ms);
    });
}

BOOST_DATA_TEST_CASE(a_cancelled_waiter_leaves_the_queue_at_once_and_an_idle_lock_leaves_nothing, setups, s)
{
    redis_rig rig(s);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        auto o = fair(60'000ms, 300ms);
        o.node_timeout = 90ms;  // a waiter TTL must be above 3 node timeouts
        redlock::mutex m(rig.client(), key, o);
        auto [ec, holder] = co_await m.async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        asio::cancellation_signal cancel;
        std::optional<error_code> result;
        m.async_lock(asio::bind_cancellation_slot(cancel.slot(), [&](error_code e, redlock::lease) { result = e; }));
        BOOST_REQUIRE(co_await until_queued(rig.nodes[0], 1));
        cancel.emit(asio::cancellation_type::terminal);
        // Well before its 300 ms waiter TTL could drop it.
        const auto cancelled = steady::now();
        BOOST_TEST(co_await until_queued(rig.nodes[0], 0));
        BOOST_TEST((steady::now() - cancelled < 200ms));
        BOOST_TEST((result && *result == asio::error::operation_aborted));
        co_await holder.async_release(use_tuple);
        // Every key of the queue expires within two waiter TTLs of its last write.
        co_await sleep_for(1000ms);
        for (std::size_t i = 0; i < rig.nodes.size(); ++i)
            if (rig.nodes[i].running())
                BOOST_TEST(rig.nodes[i].cli({"EXISTS", key, "{fifo}:queue", "{fifo}:alive", "{fifo}:ticket"}) == "0");
    });
}

// Fair and fenced: each grant's fencing token is above the last, on one node (incremented in the acquire) and
// on three (read by a quorum, then committed).
BOOST_DATA_TEST_CASE(a_fair_lock_issues_increasing_fencing_tokens, data::make({1, 3}), n)
{
    redis_rig rig(n, 2);
    auto& a = rig.client(0);
    auto& b = rig.client(1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await a.async_connect(asio::use_awaitable);
        co_await b.async_connect(asio::use_awaitable);
        auto o = fair();
        o.fencing = true;
        std::uint64_t last = 0;
        for (int i = 0; i < 6; ++i) {
            redlock::mutex m(i % 2 == 0 ? a : b, key, o);
            auto [ec, held] = co_await m.async_lock(use_tuple);
            BOOST_REQUIRE_MESSAGE(!ec, ec.message());
            BOOST_TEST(held.fencing_token() > last);
            last = held.fencing_token();
            co_await held.async_release(use_tuple);
        }
    });
}
