// A campaign against fake nodes: a lock won whose proclaim fails (a node too slow, the key taken back) is released,
// and the campaign goes back to the lock until its wait runs out, as async_lock does after an attempt without a
// quorum. The scripts themselves run on real servers (integration_election_test).
#include "common/fakes/fake_rig.hpp"

#include <redlock/election.hpp>
#include <redlock/key_layout.hpp>

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
const std::string name = "leader";

bool is_proclaim(const exec_record& r)
{
    return r.keys.size() == 2 && r.keys[0] == name && r.keys[1] == leader_key(name);
}

std::size_t proclaims(const fake_node_control& f)
{
    std::size_t n = 0;
    for (const auto& r : f.received())
        if (is_proclaim(r)) ++n;
    return n;
}

lock_options quick()
{
    lock_options o;
    o.ttl = 2000ms;
    o.wait = 2000ms;
    o.retry_delay = 20ms;
    o.retry_jitter = 0ms;
    return o;
}

}  // namespace

// The first proclaim fails on every node (no answer within node_timeout: no_quorum; or the key holds no longer our
// token: not_owner); the campaign releases, takes the lock again and proclaims again.
BOOST_DATA_TEST_CASE(a_failed_proclaim_sends_the_campaign_back_to_the_lock, bdata::make({1, 3}) * bdata::make({0, 1}),
                     n, not_owner)
{
    rig r(static_cast<std::size_t>(n));
    const auto first = not_owner ? action::reply(integer(0)) : action::fail(error::timeout);
    for (std::size_t i = 0; i < r.n(); ++i) r.fakes[i].on_sequence(script_kind::other, {first}, action::granted());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        election e(*r.c, name, quick());
        auto [ec, led] = co_await e.async_campaign("p", use);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_TEST(led.revision() == 1u);  // the proposal, written by the second lock
        for (std::size_t i = 0; i < r.n(); ++i) {
            BOOST_TEST(proclaims(r.fakes[i]) == 2u);
            BOOST_TEST(r.fakes[i].received(script_kind::release).size() == 1u, "the first lock given back");
        }
        co_await led.async_resign(use);
    });
}

// A proclaim that keeps failing ends the campaign with its error once the wait ran out; a wait of 0 tries once.
BOOST_AUTO_TEST_CASE(a_proclaim_that_keeps_failing_ends_the_campaign_at_its_wait)
{
    rig r(3);
    r.on(0, r.n(), script_kind::other, action::fail(error::timeout));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = quick();
        o.wait = 300ms;
        election e(*r.c, name, o);
        const auto start = std::chrono::steady_clock::now();
        auto [ec, led] = co_await e.async_campaign("p", use);
        const auto took = std::chrono::steady_clock::now() - start;
        BOOST_TEST(ec == error::no_quorum, ec.message());
        BOOST_TEST(proclaims(r.fakes[0]) >= 3u, "campaigned again within the wait: " << proclaims(r.fakes[0]));
        BOOST_TEST(took >= 290ms);  // the deadline, to the millisecond
        BOOST_TEST(took < 1500ms);

        o.wait = 0ms;
        election once(*r.c, name, o);
        const auto before = proclaims(r.fakes[0]);
        auto [ec2, led2] = co_await once.async_campaign("p", use);
        BOOST_TEST(ec2 == error::no_quorum, ec2.message());
        BOOST_TEST(proclaims(r.fakes[0]) == before + 1);
    });
}
