// Replica acknowledgement (lock_options::replica_acks) against fake nodes: which requests carry the WAIT (and, with
// the option off, that the requests are byte for byte what they were without it), and the quorum rule: a grant,
// a fencing commit or an extension whose WAIT reports too few replicas does not count, is released, and an
// attempt without a quorum of acknowledged grants fails with error::replica_acks. No Redis.
#include "common/fakes/fake_rig.hpp"
#include "common/run_coro.hpp"
#include "primitives/common/decisions.hpp"
#include "primitives/mutex/plain_scripts.hpp"
#include "quorum/replica_acks.hpp"

#include <redlock/client.hpp>
#include <redlock/mutex.hpp>
#include <redlock/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>

namespace {

namespace asio = boost::asio;
using namespace redlock;
using namespace redlock::test;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
using redlock::detail::acknowledged;
using redlock::detail::replica_acks;
constexpr auto use = asio::as_tuple(asio::use_awaitable);

lock_options with_acks(int replicas, ms ttl = 2000ms)
{
    lock_options o;
    o.ttl = ttl;
    o.wait = 0ms;
    o.replica_acks = replicas;
    return o;
}

asio::awaitable<std::tuple<error_code, lease>> try_lock(rig& r, lock_options o, diagnostics& diag)
{
    redlock::mutex m(*r.c, "res", o);
    co_return co_await m.async_try_lock(diag, use);
}

// The releases of `token` node i received (after a pause that lets the clean-up arrive).
asio::awaitable<std::size_t> releases_of(rig& r, std::size_t i, const std::string& token)
{
    co_await pause_for(20ms);
    const auto rel = r.fakes[i].received(script_kind::release);
    co_return static_cast<std::size_t>(
        std::count_if(rel.begin(), rel.end(), [&](const auto& x) { return !x.args.empty() && x.args[0] == token; }));
}

std::string token_of(const rig& r)
{
    auto acq = r.fakes[0].received(script_kind::acquire);
    BOOST_REQUIRE(!acq.empty());
    return acq.front().args.at(0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(without_acks_requests_are_exactly_the_scripts_and_carry_no_wait)
{
    rig r(3);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto o = with_acks(0);
        o.fencing = true;
        auto [ec, l] = co_await try_lock(r, o, diag);
        BOOST_REQUIRE(!ec);
        auto [xec] = co_await l.async_extend(use);
        BOOST_TEST(!xec);
        co_await l.async_release(use);
        for (std::size_t i = 0; i < r.n(); ++i)
            for (const auto& x : r.fakes[i].received()) {
                BOOST_TEST(!x.wait_replicas.has_value(), to_string(x.kind));
                BOOST_TEST(x.payload.find("WAIT") == std::string::npos, to_string(x.kind));
                BOOST_TEST(x.timeout == 50ms, to_string(x.kind));  // the node timeout alone
            }
        // The acquire's bytes are the script's request, nothing added.
        const auto acquire = r.fakes[0].received(script_kind::acquire_reading_fence).at(0);
        const auto expected =
            detail::plain_scripts::acquire_request({"res"}, acquire.args.at(0), 2000ms, 50ms, detail::fence_step::read);
        BOOST_TEST(acquire.payload == std::string(expected.payload()));
    });
}

BOOST_AUTO_TEST_CASE(with_acks_grants_commits_and_extensions_carry_wait_and_releases_do_not)
{
    rig r(3);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto o = with_acks(2);
        o.fencing = true;
        o.replica_ack_timeout = 30ms;
        auto [ec, l] = co_await try_lock(r, o, diag);
        BOOST_REQUIRE(!ec);
        BOOST_TEST(l.fencing_token() == 1u);
        auto [xec] = co_await l.async_extend(use);
        BOOST_TEST(!xec);
        co_await l.async_release(use);
        for (std::size_t i = 0; i < r.n(); ++i) {
            for (auto kind : {script_kind::acquire_reading_fence, script_kind::commit_fence, script_kind::extend}) {
                const auto got = r.fakes[i].received(kind);
                BOOST_REQUIRE_MESSAGE(got.size() == 1u, to_string(kind));
                BOOST_TEST(got[0].wait_replicas.value_or(-1) == 2, to_string(kind));
                BOOST_TEST(got[0].wait_timeout.value_or(-1) == 30, to_string(kind));
                BOOST_TEST(got[0].timeout == 80ms, to_string(kind));  // node timeout + the WAIT's
            }
            for (const auto& rel : r.fakes[i].received(script_kind::release)) {
                BOOST_TEST(!rel.wait_replicas.has_value());
                BOOST_TEST(rel.timeout == 50ms);
            }
        }
        // The acquire's bytes: the script's request, then WAIT 2 30.
        const auto acquire = r.fakes[0].received(script_kind::acquire_reading_fence).at(0);
        const auto alone =
            detail::plain_scripts::acquire_request({"res"}, acquire.args.at(0), 2000ms, 50ms, detail::fence_step::read);
        BOOST_TEST(acquire.payload == std::string(alone.payload()) + "*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$2\r\n30\r\n");
    });
}

BOOST_AUTO_TEST_CASE(the_wait_timeout_defaults_to_the_node_timeout)
{
    rig r(1);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, with_acks(1), diag);
        BOOST_REQUIRE(!ec);
        const auto acquire = r.fakes[0].received(script_kind::acquire).at(0);
        BOOST_TEST(acquire.wait_replicas.value_or(-1) == 1);
        BOOST_TEST(acquire.wait_timeout.value_or(-1) == 50);
        BOOST_TEST(acquire.timeout == 100ms);
        co_await l.async_release(use);
    });
}

BOOST_AUTO_TEST_CASE(a_grant_too_few_replicas_acknowledged_does_not_count_but_a_quorum_of_others_does)
{
    rig r(3);
    r.fakes[0].set_acknowledging_replicas(0);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, with_acks(1), diag);
        BOOST_REQUIRE(!ec);  // nodes 1 and 2 acknowledged: a quorum
        const auto& nodes = diag.nodes();
        BOOST_REQUIRE(nodes.size() == 3u);
        if (nodes[0].what != node_outcome::result::pending) {  // decided at the quorum: node 0 may not have counted yet
            BOOST_TEST((nodes[0].what == node_outcome::result::failed));
            BOOST_TEST(nodes[0].ec == error::replica_acks);
            BOOST_TEST(nodes[0].message == "not acknowledged by 1 replica(s) within 50 ms (0 did)");
        }
        co_await l.async_release(use);
    });
}

BOOST_AUTO_TEST_CASE(without_a_quorum_of_acknowledged_grants_the_attempt_fails_and_releases_every_grant)
{
    rig r(3);
    r.fakes[0].set_acknowledging_replicas(0);
    r.fakes[1].set_acknowledging_replicas(0);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, with_acks(1), diag);
        BOOST_TEST(ec == error::replica_acks);
        BOOST_TEST(!l);
        BOOST_TEST(std::string(diag.message()).find("not acknowledged by 1 replica(s) within 50 ms") !=
                   std::string::npos);
        const auto token = token_of(r);
        // The unacknowledged grants are released like any failed attempt's; the acknowledged one too.
        for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(co_await releases_of(r, i, token) == 1u);
    });
    // Counted as what it is, for the metrics (redlock_acquire_failures_total{reason="replica_acks"}).
    const auto stats = r.c->stats();
    BOOST_TEST(stats.failures.replica_acks == 1u);
    BOOST_TEST(stats.failures.other == 0u);
    BOOST_TEST(redlock::to_prometheus(stats).find("redlock_acquire_failures_total{reason=\"replica_acks\"} 1\n") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(one_node_with_fewer_replicas_than_asked_fails_with_replica_acks)
{
    rig r(1);
    r.fakes[0].set_acknowledging_replicas(1);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, with_acks(2), diag);
        BOOST_TEST(ec == error::replica_acks);
        BOOST_REQUIRE(diag.nodes().size() == 1u);
        BOOST_TEST(diag.nodes()[0].message == "not acknowledged by 2 replica(s) within 50 ms (1 did)");
        BOOST_TEST(co_await releases_of(r, 0, token_of(r)) == 1u);
    });
}

// A refusal is a refusal whatever the replicas say: the lock is another's.
BOOST_AUTO_TEST_CASE(a_refusal_with_too_few_acknowledgements_stays_a_refusal)
{
    rig r(1);
    r.fakes[0].set_acknowledging_replicas(0);
    r.on(0, 1, script_kind::acquire, action::refused(3000));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, with_acks(1), diag);
        BOOST_TEST(ec == error::not_acquired);
    });
}

// A node whose WAIT fails (a replica itself, an ACL without WAIT) failed: its grant does not count.
BOOST_AUTO_TEST_CASE(a_wait_that_fails_is_a_failed_node)
{
    rig r(1);
    r.fakes[0].set_wait_reply(error_reply("ERR WAIT cannot be used with replica instances"));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, with_acks(1), diag);
        BOOST_TEST(ec == error::no_quorum);
        BOOST_REQUIRE(diag.nodes().size() == 1u);
        BOOST_TEST(diag.nodes()[0].ec == error::server_error);
        BOOST_TEST(diag.nodes()[0].message == "ERR WAIT cannot be used with replica instances");
    });
}

// Over N nodes the token is committed on a quorum; a commit a promoted replica lacks could be issued again.
BOOST_AUTO_TEST_CASE(a_fencing_commit_too_few_replicas_acknowledged_fails_the_acquire)
{
    rig r(3);
    for (std::size_t i = 0; i < 2; ++i) r.fakes[i].set_acknowledging_replicas(script_kind::commit_fence, 0);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto o = with_acks(1);
        o.fencing = true;
        auto [ec, l] = co_await try_lock(r, o, diag);
        BOOST_TEST(ec == error::replica_acks);
        BOOST_TEST(std::string(diag.message()).find("fencing token 1 was not committed") != std::string::npos);
        const auto token = r.fakes[0].received(script_kind::acquire_reading_fence).at(0).args.at(0);
        for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(co_await releases_of(r, i, token) == 1u);
    });
}

// An unacknowledged extension does not count on that node: a failover to a replica would bring back the old expiry.
BOOST_AUTO_TEST_CASE(an_extension_too_few_replicas_acknowledged_does_not_extend)
{
    rig r(3);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, with_acks(1), diag);
        BOOST_REQUIRE(!ec);
        const auto before = l.valid_until();
        co_await pause_for(20ms);
        r.fakes[0].set_acknowledging_replicas(0);
        auto [one_short] = co_await l.async_extend(diag, use);  // nodes 1 and 2 acknowledged: extended
        BOOST_TEST(!one_short);
        BOOST_TEST((l.valid_until() > before));
        const auto extended = l.valid_until();
        co_await pause_for(20ms);
        r.fakes[1].set_acknowledging_replicas(0);
        auto [xec] = co_await l.async_extend(diag, use);
        BOOST_TEST(xec == error::replica_acks);
        BOOST_TEST(std::string(diag.message()).find("not acknowledged by 1 replica(s)") != std::string::npos);
        BOOST_TEST((l.valid_until() == extended));  // the validity did not move
        BOOST_TEST(!l.lost());                      // held until it ends, as after any failed extension
        co_await l.async_release(use);
    });
}

// The watchdog's batched extension carries the WAIT too; a lease whose extensions are never acknowledged is lost
// when its validity ends.
BOOST_AUTO_TEST_CASE(the_watchdog_loses_a_lease_whose_extensions_are_not_acknowledged)
{
    rig r(1);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto o = with_acks(1, 300ms);
        o.watchdog = true;
        o.extend_interval = 60ms;
        o.node_timeout = 10ms;
        auto [ec, l] = co_await try_lock(r, o, diag);
        BOOST_REQUIRE(!ec);
        BOOST_TEST(co_await eventually([&] { return r.fakes[0].received(script_kind::extend).size() >= 2; }));
        for (const auto& x : r.fakes[0].received(script_kind::extend)) BOOST_TEST(x.wait_replicas.value_or(-1) == 1);
        BOOST_TEST(!l.lost());
        r.fakes[0].set_acknowledging_replicas(0);
        const auto& lease = l;  // clang 14 captures no structured binding
        BOOST_TEST(co_await eventually([&] { return lease.lost(); }, 1000ms));
        co_await l.async_release(use);
    });
}

BOOST_AUTO_TEST_CASE(a_permit_too_few_replicas_acknowledged_fails_with_replica_acks)
{
    rig r(1);
    r.fakes[0].set_acknowledging_replicas(0);
    r.fakes[0].set_policy([](const exec_record& x) {
        // The semaphore's acquire answers {1, units held, limit} when granted; its release a count.
        if (x.wait_replicas) return action::reply(array({integer(1), integer(1), integer(3)}));
        return action::released();
    });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        redlock::semaphore s(*r.c, "pool", 3, {.wait = 0ms, .replica_acks = 1});
        auto [ec, p] = co_await s.async_acquire(1, diag, use);
        BOOST_TEST(ec == error::replica_acks);
        BOOST_TEST(r.fakes[0].received().at(0).wait_replicas.value_or(-1) == 1);
    });
}

BOOST_AUTO_TEST_CASE(options_that_leave_no_room_for_the_wait_are_invalid)
{
    BOOST_TEST(with_acks(1).invalid().empty());
    BOOST_TEST(with_acks(-1).invalid() == "replica_acks must not be negative");
    auto o = with_acks(1, 100ms);
    o.node_timeout = 40ms;
    o.replica_ack_timeout = 60ms;  // 100 ms: above the validity (100 ms - 3 ms drift)
    BOOST_TEST(o.invalid().find("node_timeout + replica_ack_timeout must be below the validity") == 0u);
    o.replica_ack_timeout = 50ms;
    BOOST_TEST(o.invalid().empty());
    o.replica_acks = 0;  // off: the timeout is not used
    o.replica_ack_timeout = 500ms;
    BOOST_TEST(o.invalid().empty());
    auto fair = with_acks(1);
    fair.fair = true;
    fair.node_timeout = 200ms;
    fair.replica_ack_timeout = 500ms;  // 3 x 700 ms above the waiter TTL of 2 s
    BOOST_TEST(fair.invalid().find("waiter_ttl must be above 3 times node_timeout + replica_ack_timeout") == 0u);
}

BOOST_AUTO_TEST_CASE(a_wait_longer_than_the_health_check_timeout_is_refused_before_any_io)
{
    rig r(1);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto o = with_acks(1, 60'000ms);
        o.replica_ack_timeout = 3000ms;  // the health check takes a connection silent for 3 s for dead
        auto [ec, l] = co_await try_lock(r, o, diag);
        BOOST_TEST(ec == error::invalid_argument);
        BOOST_TEST(std::string(diag.message()).find("health_check_timeout") != std::string::npos);
        BOOST_TEST(r.fakes[0].received().empty());
    });
}

BOOST_AUTO_TEST_CASE(the_failure_is_for_want_of_acks_only_when_they_would_have_made_the_quorum)
{
    using detail::for_want_of_acks;
    using detail::quorum_tally;
    using detail::vote;
    quorum_tally t(3, 2);
    t.add(vote::yes);
    t.add(vote::error);  // unacknowledged
    t.add(vote::no);
    const auto no_quorum = make_error_code(error::not_acquired);
    BOOST_TEST(for_want_of_acks(no_quorum, t, 1) == error::replica_acks);
    BOOST_TEST(for_want_of_acks(no_quorum, t, 0) == error::not_acquired);
    quorum_tally refused(3, 2);
    refused.add(vote::no);
    refused.add(vote::no);
    refused.add(vote::error);
    BOOST_TEST(for_want_of_acks(no_quorum, refused, 1) == error::not_acquired);  // 1 would not have made 2
    quorum_tally reached(3, 2);
    reached.add(vote::yes);
    reached.add(vote::yes);
    reached.add(vote::error);
    // Granted, but too late: the acknowledgements are not why.
    BOOST_TEST(for_want_of_acks(make_error_code(error::timeout), reached, 1) == error::timeout);
    BOOST_TEST(!for_want_of_acks({}, reached, 1));
}

BOOST_AUTO_TEST_CASE(an_acknowledged_request_is_the_request_then_wait)
{
    request req;
    req.push("SET", "k", "v");
    req.set_timeout(20ms);
    const auto acked = acknowledged(req, replica_acks{2, 15ms});
    BOOST_TEST(acked.payload() == std::string(req.payload()) + "*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$2\r\n15\r\n");
    BOOST_TEST(acked.expected_replies() == 2u);
    BOOST_TEST(acked.timeout() == 35ms);
}
