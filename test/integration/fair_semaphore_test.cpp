// The fair semaphore on 1, 3 and 5 real nodes (one down): permits in the order of arrival across clients, a
// request of several permits at the head that waits and holds back those behind it, dead waiters that stop
// blocking within one waiter TTL, a live waiter that keeps its place for many of its TTLs, and waiters of one
// client on slow nodes that heartbeat in time whatever the client's attempt gate does.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <common/models/slow_fair_waiters.hpp>
#include <common/processes/frozen_process.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/node_setups.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_rig.hpp>
#include <thread>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::error_code;
using redlock::test::configs;
using redlock::test::redis_rig;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

const std::string name = "fifo-permits";
const std::string queue_key = "{fifo-permits}:queue";

redlock::semaphore_options fair(std::chrono::milliseconds waiter_ttl = 2000ms)
{
    redlock::semaphore_options o;
    o.ttl = 30'000ms;
    o.wait = 60'000ms;
    o.node_timeout = 300ms;
    o.fair = true;
    o.waiter_ttl = waiter_ttl;
    return o;
}

std::size_t queued(const redlock::test::redis_node& node)
{
    return std::stoul(node.cli({"ZCARD", queue_key}));
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

const auto setups =
    data::make({redlock::test::node_setup{1, 0}, redlock::test::node_setup{3, 0}, redlock::test::node_setup{5, 1}});

}  // namespace

// Limit 2, both permits held; 3 clients x 10 waiters, each started once the one before it is queued. Every
// grant goes to the first in line, however the permits come free. The order is read on node 0 (where each
// permit is scored by the server time of its grant there): two grants in a row may complete in either order
// in the clients, which share one thread.
BOOST_DATA_TEST_CASE(permits_are_granted_in_the_order_of_arrival_across_clients, setups, s)
{
    redis_rig rig(s, 4);  // three for the waiters, the last for the holders
    auto& holders = rig.client(3);
    constexpr int waiters = 30;
    std::vector<int> grants;
    std::vector<long long> granted_at(waiters, 0);  // node 0's score of each waiter's permit: grant time + ttl
    std::vector<std::string> failures;
    int inside = 0, most = 0, barged = 0;

    auto waiter = [&](redlock::client& c, int index) -> asio::awaitable<void> {
        redlock::diagnostics diag;
        auto [ec, p] = co_await redlock::semaphore(c, name, 2, fair()).async_acquire(1, diag, use_tuple);
        if (ec) {
            failures.push_back(ec.message() + ": " + std::string(diag.message()));
            co_return;
        }
        grants.push_back(index);
        granted_at[static_cast<std::size_t>(index)] = std::stoll(rig.nodes[0].cli({"ZSCORE", name, p.id()}));
        most = std::max(most, ++inside);
        co_await sleep_for(std::chrono::milliseconds(3 + index % 7));  // permits come free out of order
        --inside;
        co_await p.async_release(use_tuple);
    };
    rig.run(
        [&]() -> asio::awaitable<void> {
            for (auto& c : rig.clients) co_await c->async_connect(asio::use_awaitable);  // the holders' last
            auto [e1, a] = co_await redlock::semaphore(holders, name, 2, fair()).async_acquire(use_tuple);
            auto [e2, b] = co_await redlock::semaphore(holders, name, 2, fair()).async_acquire(use_tuple);
            BOOST_REQUIRE_MESSAGE(!e1 && !e2, e1.message() << " / " << e2.message());
            for (int i = 0; i < waiters; ++i) {
                asio::co_spawn(rig.ctx, waiter(*rig.clients[static_cast<std::size_t>(i % 3)], i), asio::detached);
                BOOST_REQUIRE(co_await until_queued(rig.nodes[0], static_cast<std::size_t>(i + 1)));
            }
            co_await a.async_release(use_tuple);
            co_await sleep_for(5ms);
            co_await b.async_release(use_tuple);
            // Meanwhile a try-acquire of another client must never get past the queue.
            redlock::semaphore barger(holders, name, 2, fair());
            while (static_cast<int>(grants.size() + failures.size()) < waiters) {
                const bool queue_left = static_cast<int>(grants.size()) < waiters - 2;
                auto [e, p] = co_await barger.async_try_acquire(use_tuple);
                if (!e && queue_left) ++barged;
                if (!e) co_await p.async_release(use_tuple);
                co_await sleep_for(1ms);
            }
        },
        120s);
    std::string all;
    for (const auto& f : failures) all += f + "; ";
    BOOST_TEST(failures.empty(), all);
    BOOST_TEST(grants.size() == static_cast<std::size_t>(waiters));
    for (std::size_t i = 1; i < granted_at.size(); ++i)
        BOOST_TEST(granted_at[i - 1] <= granted_at[i], "waiter " << i << " was granted before waiter " << i - 1);
    BOOST_TEST(most <= 2);
    BOOST_TEST(barged == 0);
    BOOST_TEST_MESSAGE("at most " << most << " held at once");
}

// Limit 3, 2 held. The first in line asks for 2 (one is free): it waits, and so does a request of 1 behind it,
// although one permit is free. A release lets the head in, then (one free again) the next.
BOOST_AUTO_TEST_CASE(a_request_of_several_permits_at_the_head_waits_and_holds_back_those_behind)
{
    redis_rig rig(3);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::semaphore s(rig.client(), name, 3, fair());
        auto [e1, two] = co_await s.async_acquire(2, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        std::vector<std::string> order;
        redlock::permit head, behind;
        s.async_acquire(2, [&](error_code e, redlock::permit p) {
            BOOST_TEST(!e, e.message());
            order.push_back("head");
            head = std::move(p);
        });
        BOOST_REQUIRE(co_await until_queued(rig.nodes[0], 1));
        s.async_acquire(1, [&](error_code e, redlock::permit p) {
            BOOST_TEST(!e, e.message());
            order.push_back("behind");
            behind = std::move(p);
        });
        BOOST_REQUIRE(co_await until_queued(rig.nodes[0], 2));
        co_await sleep_for(500ms);
        BOOST_TEST(order.empty());  // one permit free, but the head needs two and the other comes after it
        auto [try_ec, none] = co_await s.async_try_acquire(use_tuple);
        BOOST_TEST(try_ec == redlock::error::not_acquired);  // no barging past the queue either
        co_await two.async_release(use_tuple);
        // Three permits free now: both fit, and their grants may complete in either order (each is its own attempt
        // on the nodes). What fairness forbids, "behind" taking the permit while the head could not have its two,
        // was checked above.
        while (order.size() < 2) co_await sleep_for(5ms);
        std::sort(order.begin(), order.end());
        BOOST_TEST(order == (std::vector<std::string>{"behind", "head"}), boost::test_tools::per_element());
        BOOST_TEST(head.count() == 2);
        co_await head.async_release(use_tuple);
        co_await behind.async_release(use_tuple);
    });
}

// The other side of dropping dead waiters: a live one is never dropped, however long it waits. A waiter with a
// waiter TTL of 1 s waits 4.5 s (four and a half of its TTLs) behind a held permit, with another waiter queued
// behind it: its heartbeats keep it first on every node, and it is served first. (A waiter that slept until the
// holder's TTL without heartbeating, or whose heartbeat did not refresh its entry, would be dropped and served after
// the other one.) The TTL is 1 s, not shorter: the probes run redis-cli on this thread, which sends the heartbeats
// too, and a loaded machine must not make a live waiter miss three in a row.
BOOST_DATA_TEST_CASE(a_live_waiter_keeps_its_place_however_long_it_waits, data::make({1, 3}), n)
{
    redis_rig rig(n, 3);
    auto& holder = rig.client(0);
    auto& first_client = rig.client(1);
    auto& second_client = rig.client(2);
    rig.run([&]() -> asio::awaitable<void> {
        for (auto* c : {&holder, &first_client, &second_client}) co_await c->async_connect(asio::use_awaitable);
        auto [ec, held] = co_await redlock::semaphore(holder, name, 1, fair()).async_acquire(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        auto short_lived = fair(1000ms);
        short_lived.node_timeout = 150ms;  // well below waiter_ttl / 3
        std::vector<std::string> order;
        redlock::permit first, second;
        redlock::semaphore(first_client, name, 1, short_lived).async_acquire([&](error_code e, redlock::permit p) {
            BOOST_TEST(!e, e.message());
            order.push_back("first");
            first = std::move(p);
        });
        BOOST_REQUIRE(co_await until_queued(rig.nodes[0], 1));
        const auto first_member = rig.nodes[0].cli({"ZRANGE", queue_key, "0", "0"});
        redlock::semaphore(second_client, name, 1, fair()).async_acquire([&](error_code e, redlock::permit p) {
            BOOST_TEST(!e, e.message());
            order.push_back("second");
            second = std::move(p);
        });
        BOOST_REQUIRE(co_await until_queued(rig.nodes[0], 2));
        co_await sleep_for(4500ms);
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            BOOST_TEST(queued(rig.nodes[i]) == 2u, "node " << i);
            BOOST_TEST(rig.nodes[i].cli({"ZRANGE", queue_key, "0", "0"}) == first_member, "node " << i);
        }
        BOOST_TEST(order.empty());
        co_await held.async_release(use_tuple);
        while (order.empty()) co_await sleep_for(2ms);
        BOOST_TEST(order.front() == "first");
        BOOST_TEST(first.id() == first_member);
        co_await sleep_for(100ms);
        BOOST_TEST(order.size() == 1u);  // the second waits for the first's permit
        co_await first.async_release(use_tuple);
        while (order.size() < 2) co_await sleep_for(2ms);
        co_await second.async_release(use_tuple);
    });
}

// Five waiters of a process that froze are queued ahead of a live one. Once the permit is released, they stop
// blocking within one waiter TTL of their last heartbeat, however many they are.
BOOST_DATA_TEST_CASE(dead_waiters_at_the_head_stop_blocking_within_one_waiter_ttl, data::make({1, 3}), n)
{
    constexpr auto waiter_ttl = 1000ms;
    redis_rig rig(n);
    redlock::test::frozen_process frozen(configs(rig.nodes));
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::semaphore s(rig.client(), name, 1, fair(waiter_ttl));
        auto [ec, held] = co_await s.async_acquire(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        for (int i = 0; i < 5; ++i) {
            redlock::semaphore(frozen.client(), name, 1, fair(waiter_ttl))
                .async_acquire([](error_code, redlock::permit) {});
            BOOST_REQUIRE(co_await until_queued(rig.nodes[0], static_cast<std::size_t>(i + 1)));
        }
        frozen.freeze();
        const auto last_heartbeat = steady::now();
        std::optional<steady::time_point> granted;
        redlock::permit got;
        s.async_acquire([&](error_code e, redlock::permit p) {
            BOOST_TEST(!e, e.message());
            granted = steady::now();
            got = std::move(p);
        });
        BOOST_REQUIRE(co_await until_queued(rig.nodes[0], 6));
        co_await held.async_release(use_tuple);
        while (!granted && steady::now() - last_heartbeat < 20s) co_await sleep_for(10ms);
        BOOST_REQUIRE(granted.has_value());
        const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(*granted - last_heartbeat);
        BOOST_TEST_MESSAGE("granted " << after.count() << " ms after the dead waiters' last heartbeat");
        BOOST_TEST((after < waiter_ttl + waiter_ttl / 3 + 700ms), after.count() << " ms");  // never 5 TTLs
        co_await got.async_release(use_tuple);
    });
}

namespace {

// How the scenario of test/common/models/slow_fair_waiters.hpp takes a permit of a fair semaphore of one.
struct semaphore_kind {
    static asio::awaitable<std::tuple<error_code, redlock::permit>> take(redlock::client& c, std::string name,
                                                                         redlock::lock_options o,
                                                                         redlock::diagnostics& diag)
    {
        redlock::semaphore s(c, std::move(name), 1,
                             {.ttl = o.ttl,
                              .wait = o.wait,
                              .node_timeout = o.node_timeout,
                              .watchdog = o.watchdog,
                              .fair = o.fair,
                              .waiter_ttl = o.waiter_ttl});
        auto taken = co_await s.async_acquire(1, diag, use_tuple);
        co_return taken;
    }
    static std::string id(const redlock::permit& held) { return held.id(); }
};

}  // namespace

// As fair_lock_test's test of the same name: six fair waiters of one client on slow nodes (each request and each
// reply 40 % of a node timeout late), with the shortest waiter TTL accepted, while another client holds the one
// permit. An observer on the nodes themselves sees every heartbeat come within a waiter TTL of the one before and no
// waiter leave the queue before it is served; then the permits follow the tickets
// (test/common/models/slow_fair_waiters.hpp).
BOOST_DATA_TEST_CASE(fair_waiters_of_one_client_on_slow_nodes_heartbeat_in_time_whatever_the_gate, data::make({1, 3}),
                     n)
{
    redlock::test::slow_fair_setup s;  // a node timeout of 300 ms, 120 ms each way, 6 waiters, a hold of 4 s
    s.nodes = static_cast<std::size_t>(n);
    s.name = name;
#ifdef REDLOCK_TEST_SANITIZED
    s.node_timeout = 450ms;
    s.delay = 180ms;
    s.hold = 6s;
#endif
    // The shortest waiter TTL accepted (lock_call.cpp, invalid_arguments). Heartbeats come 2 delays + a third of it
    // apart (540 ms of 901): a machine that stalls a node or the client a moment is no eviction. Behind the gate,
    // they came 6 round trips apart (1440 ms).
    s.waiter_ttl = 3 * s.node_timeout + 1ms;
    redlock::test::check_slow_fair_waiters<semaphore_kind>(s);
}
