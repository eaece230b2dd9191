// The lock sequence (acquire, extend, release) of redlock::mutex against fake nodes, through redlock::client
// and its node_factory: every tally outcome with N = 1, 3 and 5, and regressions of defects found in the lease
// machinery. No Redis.
#include "common/fakes/fake_rig.hpp"
#include "common/run_coro.hpp"

#include <redlock/client.hpp>
#include <redlock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <optional>
#include <set>

namespace {

namespace asio = boost::asio;
namespace bdata = boost::unit_test::data;
using namespace redlock;
using namespace redlock::test;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

const std::vector<std::size_t> sizes{1, 3, 5};
constexpr auto use = asio::as_tuple(asio::use_awaitable);

lock_options opts(ms ttl = 2000ms)
{
    lock_options o;
    o.ttl = ttl;
    o.wait = 0ms;
    return o;
}

asio::awaitable<std::tuple<error_code, lease>> try_lock(rig& r, lock_options o, diagnostics& diag)
{
    redlock::mutex m(*r.c, "res", o);
    co_return co_await m.async_try_lock(diag, use);
}

// Every node received a release of `token` (the clean-up of a failed attempt is sent without waiting).
asio::awaitable<bool> released_everywhere(rig& r, std::string token)
{
    std::function<bool()> pred = [&r, token] {
        for (std::size_t i = 0; i < r.n(); ++i) {
            auto rel = r.fakes[i].received(script_kind::release);
            if (std::none_of(rel.begin(), rel.end(), [&](auto& x) { return !x.args.empty() && x.args[0] == token; }))
                return false;
        }
        return true;
    };
    co_return co_await eventually(pred);
}

// How many releases of `token` nodes [from, to) received (after a pause that lets any clean-up arrive).
asio::awaitable<std::size_t> releases_of(rig& r, const std::string& token, std::size_t from, std::size_t to)
{
    co_await pause_for(20ms);
    std::size_t n = 0;
    for (std::size_t i = from; i < to && i < r.n(); ++i)
        for (const auto& x : r.fakes[i].received(script_kind::release))
            if (!x.args.empty() && x.args[0] == token) ++n;
    co_return n;
}

std::string acquire_token(rig& r)
{
    auto acq = r.fakes[0].received(script_kind::acquire);
    BOOST_REQUIRE(!acq.empty());
    BOOST_REQUIRE(!acq.front().args.empty());
    return acq.front().args[0];
}

// ---------------------------------------------------------------------------------------------- acquire

BOOST_DATA_TEST_CASE(lock_granted_on_a_quorum_is_a_lease, bdata::make(sizes), n)
{
    rig r(n);
    r.on(r.q(), n, script_kind::acquire, action::refused());  // a minority refuses: still ours
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_TEST(!ec);
        BOOST_REQUIRE(static_cast<bool>(l));
        BOOST_TEST(!l.lost());
        BOOST_TEST(l.validity() > 1500ms);
        BOOST_TEST(l.token() == acquire_token(r));
        for (std::size_t i = 0; i < n; ++i) {
            auto acq = r.fakes[i].received(script_kind::acquire);
            BOOST_REQUIRE(acq.size() == 1u);
            BOOST_TEST(acq[0].keys == std::vector<std::string>{"res"});
            BOOST_TEST(acq[0].args.at(1) == "2000");
            BOOST_TEST(acq[0].timeout == 50ms);  // min(50 ms, ttl / 10)
        }
        auto [rec] = co_await l.async_release(diag, use);
        BOOST_TEST(!rec);
        for (std::size_t i = 0; i < n; ++i) BOOST_TEST(r.fakes[i].received(script_kind::release).size() == 1u);
    });
}

// A quorum refuses: not_acquired, and the clean-up release goes to every node that may hold a grant: the
// silent one (its grant may still land), never the refusing ones (a refusal is a definite answer).
BOOST_DATA_TEST_CASE(lock_refused_on_a_quorum_is_not_acquired_and_released_where_it_may_hold, bdata::make(sizes), n)
{
    rig r(n);
    r.on(0, r.q(), script_kind::acquire, action::refused(5000));
    if (n > r.q()) r.fakes[n - 1].on(script_kind::acquire, action::hold());  // silent
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_TEST(ec == error::not_acquired);
        BOOST_TEST(!l);
        BOOST_TEST(diag.nodes().size() == n);
        const auto token = acquire_token(r);
        BOOST_TEST(co_await releases_of(r, token, 0, r.q()) == 0u);
        BOOST_TEST(co_await releases_of(r, token, r.q(), n) == n - r.q());
    });
}

BOOST_DATA_TEST_CASE(lock_failing_on_a_quorum_is_no_quorum_and_released_everywhere, bdata::make(sizes), n)
{
    rig r(n);
    // Too many failures: one times out by its own deadline (silent), the others are not connected.
    r.on(0, n - r.q() + 1, script_kind::acquire, action::fail(error::not_connected));
    r.fakes[0].on(script_kind::acquire, action::silent());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_TEST(ec == error::no_quorum);
        BOOST_TEST(!l);
        BOOST_TEST(co_await released_everywhere(r, acquire_token(r)));
    });
}

BOOST_DATA_TEST_CASE(lock_granted_too_late_is_timeout_and_released, bdata::make(sizes), n)
{
    rig r(n);
    auto o = opts(300ms);
    o.min_validity = 200ms;
    r.on(0, n, script_kind::acquire, action::delayed(120ms, integer(1)));  // validity left < 200 ms
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, o, diag);
        BOOST_TEST(ec == error::timeout);
        BOOST_TEST(!l);
        BOOST_TEST(co_await released_everywhere(r, acquire_token(r)));
    });
}

// ------------------------------------------------------------------------ the plain-command acquire

// Every node on Redis >= 7.0: the first attempt of a one-key lock without fencing is SET NX PX GET + PTTL, not
// the script; the lease it grants is released with the same token.
BOOST_DATA_TEST_CASE(first_attempt_on_redis_7_is_set_nx_get, bdata::make(sizes), n)
{
    rig r(n);
    for (std::size_t i = 0; i < n; ++i) r.fakes[i].set_server_version(70015);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(2000ms), diag);
        BOOST_TEST_REQUIRE(!ec);
        std::string token;
        for (std::size_t i = 0; i < n; ++i) {
            BOOST_TEST(r.fakes[i].received(script_kind::acquire).empty());
            auto sets = r.fakes[i].received(script_kind::set_acquire);
            BOOST_TEST_REQUIRE(sets.size() == 1u);
            BOOST_TEST(sets[0].keys == std::vector<std::string>{"res"});
            BOOST_TEST(sets[0].args[1] == "2000");
            if (token.empty()) token = sets[0].args[0];
            BOOST_TEST(sets[0].args[0] == token);  // one token on every node
        }
        BOOST_TEST(token.size() == 32u);
        auto [rec] = co_await l.async_release(use);
        BOOST_TEST(!rec);
        for (std::size_t i = 0; i < n; ++i) {
            auto rel = r.fakes[i].received(script_kind::release);
            BOOST_TEST_REQUIRE(rel.size() == 1u);
            BOOST_TEST(rel[0].args[0] == token);
        }
    });
}

// Valkey nodes, alone or beside Redis 7: the SET too (the gate reads the server, not only its version number).
BOOST_AUTO_TEST_CASE(valkey_nodes_get_set_nx_get_too)
{
    rig r(3);
    r.fakes[0].set_server({server_kind::valkey, 80001});
    r.fakes[1].set_server_version(70015);
    r.fakes[2].set_server({server_kind::valkey, 70205});
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_TEST_REQUIRE(!ec);
        auto [rec] = co_await l.async_release(use);
        BOOST_TEST(!rec);
    });
    for (std::size_t i = 0; i < 3; ++i) {
        BOOST_TEST(r.fakes[i].received(script_kind::set_acquire).size() == 1u);
        BOOST_TEST(r.fakes[i].received(script_kind::acquire).empty());
    }
}

// One node older than 7.0: the script everywhere. So do fencing and locks of several keys, which need it.
BOOST_AUTO_TEST_CASE(an_old_node_fencing_or_several_keys_use_the_script)
{
    auto script_only = [](rig& r, lock_options o, std::vector<std::string> keys) {
        run_coro(r.ctx, [&]() -> asio::awaitable<void> {
            redlock::mutex m(*r.c, keys, o);
            auto [ec, l] = co_await m.async_try_lock(use);
            BOOST_TEST(!ec);
        });
        for (std::size_t i = 0; i < r.n(); ++i) {
            BOOST_TEST(r.fakes[i].received(script_kind::set_acquire).empty());
            BOOST_TEST(r.fakes[i].received().size() >= 1u);
        }
    };
    {
        rig r(3);
        r.fakes[0].set_server_version(70000);
        r.fakes[1].set_server_version(60209);
        r.fakes[2].set_server_version(70200);
        script_only(r, opts(), {"res"});
        BOOST_TEST(r.fakes[0].received(script_kind::acquire).size() == 1u);
    }
    {
        // A Valkey beside a Redis 6.2: the Redis decides.
        rig r(2);
        r.fakes[0].set_server({server_kind::valkey, 80001});
        r.fakes[1].set_server_version(60214);
        script_only(r, opts(), {"res"});
        BOOST_TEST(r.fakes[0].received(script_kind::acquire).size() == 1u);
    }
    {
        rig r(3);
        for (std::size_t i = 0; i < 3; ++i) r.fakes[i].set_server_version(70000);
        auto o = opts();
        o.fencing = true;
        script_only(r, o, {"res"});
        BOOST_TEST(r.fakes[0].received(script_kind::acquire_reading_fence).size() == 1u);
    }
    {
        rig r(1);
        r.fakes[0].set_server_version(70000);
        script_only(r, opts(), {"a", "b"});
        BOOST_TEST(r.fakes[0].received(script_kind::acquire).size() == 1u);
    }
}

// A node that has not told its version yet (not connected) does not stop the SET. If it turns out older than
// 7.0, its syntax error turns the client to scripts within the same attempt: the script re-grants our token
// where the SET granted, so nothing is released in between.
BOOST_AUTO_TEST_CASE(an_unknown_version_gets_the_set_and_an_old_one_falls_back)
{
    rig r(3);
    r.fakes[0].set_server_version(70000);
    r.fakes[1].set_server_version(0);
    r.fakes[2].set_server_version(0);
    auto syntax_error = action::reply(array({error_reply("ERR syntax error"), integer(-2)}));
    syntax_error.ec = make_error_code(error::server_error);
    r.fakes[1].on(script_kind::set_acquire, syntax_error);
    r.fakes[2].on(script_kind::set_acquire, syntax_error);
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_TEST_REQUIRE(!ec);
        for (std::size_t i = 0; i < 3; ++i) {
            BOOST_TEST(r.fakes[i].received(script_kind::set_acquire).size() == 1u);
            BOOST_TEST(r.fakes[i].received(script_kind::acquire).size() == 1u);
        }
        BOOST_TEST(r.fakes[0].received(script_kind::release).empty());
        BOOST_TEST(r.fakes[0].received(script_kind::acquire).at(0).args.at(0) == l.token());
    });
}

// Refused by SET: not_acquired, no clean-up (every node refused: none granted), and the holder's PTTL decides
// the retry. The retry runs the script (idempotent for our own token), with the same token.
BOOST_DATA_TEST_CASE(a_refused_set_retries_with_the_script_at_the_holders_ttl, bdata::make(sizes), n)
{
    rig r(n);
    for (std::size_t i = 0; i < n; ++i) r.fakes[i].set_server_version(70000);
    r.on(0, n, script_kind::set_acquire, action::set_refused(30));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_TEST(ec == error::not_acquired);
        const auto token = r.fakes[0].received(script_kind::set_acquire).at(0).args.at(0);
        BOOST_TEST(co_await releases_of(r, token, 0, n) == 0u);

        auto o = opts();
        o.wait = 5000ms;
        o.retry_delay = 4000ms;  // the holder's 30 ms PTTL, not this delay, must decide when to retry
        o.retry_jitter = 0ms;
        const auto start = clock_type::now();
        redlock::mutex m(*r.c, "res", o);
        auto [ec2, l2] = co_await m.async_lock(diag, use);
        BOOST_TEST(!ec2);
        BOOST_TEST((clock_type::now() - start < 2000ms));
        const auto sets = r.fakes[0].received(script_kind::set_acquire);
        const auto scripts = r.fakes[0].received(script_kind::acquire);
        BOOST_TEST_REQUIRE(sets.size() == 2u);
        BOOST_TEST_REQUIRE(scripts.size() == 1u);
        BOOST_TEST(scripts[0].args[0] == sets[1].args[0]);
    });
}

// A node that rejects SET (an ACL user without it): if no quorum granted, the same attempt goes on with the
// script at once (a try_lock still succeeds), and the client sends no more SET acquires.
BOOST_DATA_TEST_CASE(a_rejected_set_turns_the_client_to_the_script, bdata::make(sizes), n)
{
    rig r(n);
    for (std::size_t i = 0; i < n; ++i) r.fakes[i].set_server_version(70000);
    r.on(0, r.q(), script_kind::set_acquire, action::set_rejected());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_TEST_REQUIRE(!ec);
        const auto token = r.fakes[0].received(script_kind::set_acquire).at(0).args.at(0);
        BOOST_TEST(r.fakes[0].received(script_kind::acquire).at(0).args.at(0) == token);
        auto [ec2, l2] = co_await try_lock(r, opts(), diag);
        BOOST_TEST(!ec2);
        for (std::size_t i = 0; i < n; ++i) {
            BOOST_TEST(r.fakes[i].received(script_kind::set_acquire).size() == 1u);
            BOOST_TEST(r.fakes[i].received(script_kind::acquire).size() == 2u);
        }
    });
}

// ---------------------------------------------------------------------------------------------- extend

BOOST_DATA_TEST_CASE(extend_granted_on_a_quorum_prolongs, bdata::make(sizes), n)
{
    rig r(n);
    r.on(r.q(), n, script_kind::extend, action::not_ours());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_REQUIRE(!ec);
        const auto before = l.valid_until();
        co_await pause_for(20ms);
        auto [eec] = co_await l.async_extend(diag, use);
        BOOST_TEST(!eec);
        BOOST_TEST(!l.lost());
        BOOST_TEST((l.valid_until() > before));
        auto [rec] = co_await l.async_release(use);
        BOOST_TEST(!rec);
    });
}

BOOST_DATA_TEST_CASE(extend_with_our_keys_missing_on_a_quorum_is_lost, bdata::make(sizes), n)
{
    rig r(n);
    r.on(0, r.q(), script_kind::extend, action::not_ours());  // 0: missing (restarted empty, expired)
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_REQUIRE(!ec);
        auto [eec] = co_await l.async_extend(diag, use);
        BOOST_TEST(eec == error::lost);
        BOOST_TEST(l.lost());
        diagnostics why;
        auto [wec] = co_await l.async_wait_lost(why, use);
        BOOST_TEST(wec == error::lost);
        BOOST_TEST(why.message().find("missing") != std::string_view::npos, why.message());
    });
}

BOOST_DATA_TEST_CASE(extend_refused_on_a_quorum_is_not_owner_and_lost, bdata::make(sizes), n)
{
    rig r(n);
    r.on(0, r.q(), script_kind::extend, action::reply(integer(-1)));  // another owner holds the keys
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_REQUIRE(!ec);
        auto [eec] = co_await l.async_extend(diag, use);
        BOOST_TEST(eec == error::not_owner);
        BOOST_TEST(l.lost());
        auto [wec] = co_await l.async_wait_lost(use);
        BOOST_TEST(wec == error::lost);
        auto [again] = co_await l.async_extend(use);
        BOOST_TEST(again == error::lost);
        auto [rec] = co_await l.async_release(use);
        BOOST_TEST(rec == error::lost);
    });
}

BOOST_DATA_TEST_CASE(extend_with_too_few_answers_is_no_quorum_and_still_held, bdata::make(sizes), n)
{
    rig r(n);
    r.on(0, n - r.q() + 1, script_kind::extend, action::fail(error::timeout));
    if (n > 1) r.fakes[0].on(script_kind::extend, action::fail(error::connection_lost));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_REQUIRE(!ec);
        const auto before = l.valid_until();
        auto [eec] = co_await l.async_extend(diag, use);
        BOOST_TEST(eec == error::no_quorum);
        BOOST_TEST(!l.lost());
        BOOST_TEST((l.valid_until() == before));
        BOOST_TEST(l.validity() > 0ms);
        BOOST_TEST(diag.nodes().size() == n);
        // Still ours: the next extension may succeed, and the release does.
        r.on(0, n, script_kind::extend, action::granted());
        auto [again] = co_await l.async_extend(use);
        BOOST_TEST(!again);
        auto [rec] = co_await l.async_release(use);
        BOOST_TEST(!rec);
    });
}

// For N >= 3: refusals below the threshold, plus errors, is not "other owners on a quorum".
BOOST_DATA_TEST_CASE(extend_mixed_refusals_and_errors_is_no_quorum_not_lost,
                     bdata::make(std::vector<std::size_t>{3, 5}), n)
{
    rig r(n);
    const auto q = r.q();
    r.on(0, n - q, script_kind::extend, action::not_ours());
    r.fakes[n - q].on(script_kind::extend, action::fail(error::not_connected));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_REQUIRE(!ec);
        auto [eec] = co_await l.async_extend(diag, use);
        BOOST_TEST(eec == error::no_quorum);
        BOOST_TEST(!l.lost());
    });
}

// Every node answers yes, but only after the validity ended: the lease is lost (someone else may have held the
// lock in between).
BOOST_DATA_TEST_CASE(extension_after_the_validity_is_lost, bdata::make(sizes), n)
{
    rig r(n);
    r.on(0, n, script_kind::extend, action::delayed(500ms, integer(1)));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(300ms), diag);
        BOOST_REQUIRE(!ec);
        auto [eec] = co_await l.async_extend(diag, use);
        BOOST_TEST(eec == error::lost);
        BOOST_TEST(l.lost());
        auto [wec] = co_await l.async_wait_lost(use);
        BOOST_TEST(wec == error::lost);
        co_await pause_for(250ms);  // the late "yes" arrives: it must not revive the lease
        BOOST_TEST(l.lost());
    });
}

// ---------------------------------------------------------------------------------------------- release

BOOST_DATA_TEST_CASE(release_refused_on_a_quorum_is_not_owner, bdata::make(sizes), n)
{
    rig r(n);
    r.on(0, r.q(), script_kind::release, action::other_owner());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_REQUIRE(!ec);
        auto [rec] = co_await l.async_release(diag, use);
        BOOST_TEST(rec == error::not_owner);
        for (std::size_t i = 0; i < n; ++i) BOOST_TEST(r.fakes[i].received(script_kind::release).size() == 1u);
        auto [again] = co_await l.async_release(use);  // idempotent
        BOOST_TEST(!again);
    });
}

BOOST_DATA_TEST_CASE(release_with_errors_on_a_quorum_is_no_quorum, bdata::make(sizes), n)
{
    rig r(n);
    r.on(0, n - r.q() + 1, script_kind::release, action::fail(error::not_connected));
    r.fakes[0].on(script_kind::release, action::silent());  // answers by its deadline: release waits for all
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_REQUIRE(!ec);
        auto [rec] = co_await l.async_release(diag, use);
        BOOST_TEST(rec == error::no_quorum);
        BOOST_TEST(diag.nodes().size() == n);
        for (auto& o : diag.nodes()) BOOST_TEST((o.what != node_outcome::result::pending));
    });
}

// ---------------------------------------------------------------------------------------------- regressions

// Defect: a lease destroyed (and its client too) while the user's async_extend waits for the nodes. The
// extension must own the lease's state and, through it, the client's nodes: if it referred to the lease or
// the client without owning them, the replies delivered afterwards would write into freed memory (the
// sanitizer builds run this) or the handler would never run.
BOOST_DATA_TEST_CASE(lease_destroyed_during_extend_completes_the_handler, bdata::make(sizes), n)
{
    rig r(n);
    r.on(0, n, script_kind::extend, action::hold());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        bool done = false;
        error_code got;
        {
            auto [ec, l] = co_await try_lock(r, opts(), diag);
            BOOST_REQUIRE(!ec);
            l.async_extend(r.bind([&](error_code e) {
                done = true;
                got = e;
            }));
            std::function<bool()> all_held = [&] {
                for (std::size_t i = 0; i < n; ++i)
                    if (r.fakes[i].held() != 1) return false;
                return true;
            };
            BOOST_REQUIRE(co_await eventually(all_held));
        }  // the lease is destroyed: released in the background
        r.c.reset();
        co_await pause_for(5ms);
        BOOST_TEST(!done);
        for (std::size_t i = 0; i < n; ++i) {
            BOOST_TEST(!r.fakes[i].destroyed());  // the extension keeps the nodes alive
            BOOST_TEST(r.fakes[i].deliver_held(integer(1)));
        }
        std::function<bool()> is_done = [&] { return done; };
        BOOST_TEST(co_await eventually(is_done));
        BOOST_TEST(got == error::not_owner);  // released meanwhile
        std::function<bool()> all_gone = [&] {
            for (std::size_t i = 0; i < n; ++i)
                if (!r.fakes[i].destroyed()) return false;
            return true;
        };
        BOOST_TEST(co_await eventually(all_gone));  // and nothing leaks: the nodes die with the last owner
    });
}

// Defect: a client destroyed during async_connect(diag, ...) while the nodes still connect. The connect must
// own the client's state (the nodes and the per-node diagnostics the nodes write into): otherwise the nodes
// would be destroyed under it (their connects failing with closed, so no_quorum) or answer into freed memory.
BOOST_DATA_TEST_CASE(client_destroyed_during_connect_completes_the_handler, bdata::make(sizes), n)
{
    rig r(n);
    for (std::size_t i = 0; i < n; ++i) r.fakes[i].on_connect(action::hold());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        bool done = false;
        error_code got;
        r.c->async_connect(diag, r.bind([&](error_code e) {
            done = true;
            got = e;
        }));
        std::function<bool()> all_held = [&] {
            for (std::size_t i = 0; i < n; ++i)
                if (r.fakes[i].held_connects() != 1) return false;
            return true;
        };
        BOOST_REQUIRE(co_await eventually(all_held));
        r.c.reset();
        co_await pause_for(5ms);
        BOOST_TEST(!done);
        for (std::size_t i = 0; i < n; ++i) {
            BOOST_TEST(!r.fakes[i].destroyed());
            BOOST_TEST(r.fakes[i].complete_connects() == 1u);
        }
        std::function<bool()> is_done = [&] { return done; };
        BOOST_TEST(co_await eventually(is_done));
        BOOST_TEST(!got);
        BOOST_TEST(diag.nodes().size() >= r.q());
    });
}

// Defect: an exception thrown by a node during a watchdog extension ended the keeper coroutine silently: the
// lease was no longer extended, yet never declared lost (async_wait_lost never completed, lost() stayed false).
// A node that throws now counts as a failed node (the fan-out catches it); with every node throwing, the
// extensions fail and the lease is lost at its validity end, and the waiters are told.
BOOST_DATA_TEST_CASE(exception_during_watchdog_extension_makes_the_lease_lost, bdata::make(sizes), n)
{
    rig r(n);
    r.on(0, n, script_kind::extend, action::raise());
    auto o = opts(900ms);
    o.watchdog = true;
    o.extend_interval = 100ms;
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, o, diag);
        BOOST_REQUIRE(!ec);
        const auto valid_until = l.valid_until();
        bool done = false;
        error_code got;
        diagnostics lost_diag;
        l.async_wait_lost(lost_diag, r.bind([&](error_code e) {
            done = true;
            got = e;
        }));
        std::function<bool()> is_done = [&] { return done; };
        BOOST_REQUIRE(co_await eventually(is_done, 3000ms));
        BOOST_TEST(got == error::lost);
        BOOST_TEST(l.lost());
        BOOST_TEST((clock_type::now() >= valid_until - 5ms));  // extensions failed: lost at the validity end
        BOOST_TEST(!lost_diag.message().empty());
        BOOST_TEST(r.fakes[0].received(script_kind::extend).size() >= 1u);
    });
}

// The watchdog extends the leases of a client that are due close together in one request per node: each
// lease's part counts as its own extension (a lease one node refuses still holds on the others), and none is
// lost.
BOOST_DATA_TEST_CASE(due_leases_extend_in_batches, bdata::make(sizes), n)
{
    rig r(n);
    auto o = opts(900ms);
    o.watchdog = true;
    o.extend_interval = 300ms;  // batched if due within 30 ms of each other
    constexpr std::size_t leases = 20;
    r.fakes[0].set_policy([](const exec_record& rec) {  // node 0 refuses lease "k0" (not ours there)
        if (rec.kind == script_kind::extend && rec.keys == std::vector<std::string>{"k0"}) return action::not_ours();
        if (rec.kind == script_kind::release) return action::released();
        return action::granted();
    });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        std::vector<lease> held(leases);
        std::size_t granted = 0;
        for (std::size_t k = 0; k < leases; ++k) {
            redlock::mutex m(*r.c, "k" + std::to_string(k), o);
            m.async_try_lock(r.bind([&, k](error_code ec, lease l) {
                if (!ec) ++granted;
                held[k] = std::move(l);
            }));
        }
        std::function<bool()> all_granted = [&] { return granted == leases; };
        BOOST_REQUIRE(co_await eventually(all_granted));
        co_await pause_for(1000ms);  // three intervals, past the first validity
        for (std::size_t i = 0; i < n; ++i) {
            const auto ext = r.fakes[i].received(script_kind::extend);
            BOOST_TEST(ext.size() >= 2 * leases);
            std::set<std::size_t> requests;
            for (const auto& e : ext) {
                BOOST_TEST(e.batched);
                requests.insert(e.request);
            }
            BOOST_TEST(requests.size() * 5 <= ext.size(), requests.size() << " requests for " << ext.size());
        }
        for (std::size_t k = 1; k < leases; ++k) BOOST_TEST(!held[k].lost(), "k" << k);
        // With one node refusing "k0", it held only where a quorum extended it: lost with one node, not with more.
        BOOST_TEST(held[0].lost() == (n == 1));
    });
}

// Defect: an extension re-running the acquire script (SET if absent) re-creates a key that expired or was
// released, so a late extension resurrects a lock nobody owns. Extensions must send the extend script (which
// only prolongs keys still holding our token), also from the watchdog, and nothing after the release.
BOOST_DATA_TEST_CASE(extensions_send_the_extend_script_never_acquire, bdata::make(sizes), n)
{
    rig r(n);
    auto o = opts(600ms);
    o.watchdog = true;
    o.extend_interval = 50ms;
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, o, diag);
        BOOST_REQUIRE(!ec);
        const auto token = l.token();
        std::function<bool()> extended = [&] {
            for (std::size_t i = 0; i < n; ++i)
                if (r.fakes[i].received(script_kind::extend).size() < 2) return false;
            return true;
        };
        BOOST_REQUIRE(co_await eventually(extended));
        // A user's extension still in flight when the lease is released: its late reply must not matter.
        r.on(0, n, script_kind::extend, action::hold());
        bool done = false;
        error_code got;
        l.async_extend(r.bind([&](error_code e) {
            done = true;
            got = e;
        }));
        // (a watchdog extension may be held too)
        std::function<bool()> all_held = [&] {
            for (std::size_t i = 0; i < n; ++i)
                if (r.fakes[i].held() < 1) return false;
            return true;
        };
        BOOST_REQUIRE(co_await eventually(all_held));
        auto [rec] = co_await l.async_release(use);
        BOOST_TEST(!rec);
        for (std::size_t i = 0; i < n; ++i)
            while (r.fakes[i].deliver_held(integer(1))) {
            }
        std::function<bool()> is_done = [&] { return done; };
        BOOST_REQUIRE(co_await eventually(is_done));
        BOOST_TEST(got == error::not_owner);
        std::vector<std::size_t> counts;
        for (std::size_t i = 0; i < n; ++i) counts.push_back(r.fakes[i].received().size());
        co_await pause_for(200ms);  // several watchdog intervals: nothing more is sent
        for (std::size_t i = 0; i < n; ++i) {
            const auto all = r.fakes[i].received();
            BOOST_TEST(all.size() == counts[i]);
            BOOST_TEST(r.fakes[i].received(script_kind::acquire).size() == 1u);
            for (auto& x : r.fakes[i].received(script_kind::extend)) {
                BOOST_TEST(x.keys == std::vector<std::string>{"res"});
                BOOST_TEST(x.args.at(0) == token);
                BOOST_TEST(x.args.at(1) == "600");
            }
            // The acquire is first; the release is last; every other request is an extension.
            BOOST_TEST((all.front().kind == script_kind::acquire));
            for (std::size_t k = 1; k < all.size(); ++k)
                BOOST_TEST((all[k].kind == script_kind::extend || all[k].kind == script_kind::release));
        }
    });
}

// Defect: every release of one lock call carried the same release id. Waiters de-duplicate the release
// messages of the N nodes by that id, so after a failed attempt's clean-up they dropped the holder's real
// release as a duplicate and slept out their retry delay. Two failed attempts (each failed by a node error: a
// clean-up goes out) and the lease's own release must send three different ids (ARGV[2]), the same on every
// node for one release.
BOOST_DATA_TEST_CASE(each_release_carries_its_own_release_id, bdata::make(sizes), n)
{
    rig r(n);
    for (std::size_t i = 0; i < n; ++i)
        r.fakes[i].on_sequence(script_kind::acquire,
                               {action::fail(error::connection_lost), action::fail(error::connection_lost)},
                               action::granted());
    auto o = opts();
    o.wait = 3000ms;
    o.retry_delay = 10ms;
    o.retry_jitter = 0ms;
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex m(*r.c, "res", o);
        auto [ec, l] = co_await m.async_lock(use);
        BOOST_REQUIRE(!ec);
        for (std::size_t i = 0; i < n; ++i) BOOST_TEST(r.fakes[i].received(script_kind::acquire).size() == 3u);
        auto [rec] = co_await l.async_release(use);
        BOOST_TEST(!rec);
        std::function<bool()> three = [&] {
            for (std::size_t i = 0; i < n; ++i)
                if (r.fakes[i].received(script_kind::release).size() < 3) return false;
            return true;
        };
        BOOST_REQUIRE(co_await eventually(three));
        std::set<std::string> ids0;
        for (std::size_t i = 0; i < n; ++i) {
            const auto rel = r.fakes[i].received(script_kind::release);
            BOOST_TEST(rel.size() == 3u);
            std::set<std::string> ids;
            for (auto& x : rel) {
                BOOST_TEST(x.args.at(0) == l.token());
                ids.insert(x.args.at(1));
            }
            BOOST_TEST(ids.size() == 3u);
            if (i == 0) ids0 = ids;
            BOOST_TEST((ids == ids0));  // one release, one id on all N nodes
        }
    });
}

}  // namespace

// The repair step: after an extension reached a quorum, the acquire script goes to exactly the nodes that
// answered "our key is missing and nobody else's" (0), never to a node another owner holds (-1), and never
// once the lease was released. Catches a repair sent to every node (it would overwrite nothing but costs a
// write everywhere), to a node held by another owner, or sent after the release (a key nobody owns).
BOOST_AUTO_TEST_CASE(a_quorum_extension_repairs_only_the_nodes_that_lost_the_key)
{
    rig r(5);
    r.fakes[3].on(script_kind::extend, action::not_ours());          // lost the key (restart, lapse)
    r.fakes[4].on(script_kind::extend, action::reply(integer(-1)));  // another owner holds it
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [ec, l] = co_await try_lock(r, opts(), diag);
        BOOST_REQUIRE(!ec);
        auto [eec] = co_await l.async_extend(use);
        BOOST_TEST(!eec);
        std::function<bool()> repaired = [&r] { return r.fakes[3].received(script_kind::acquire).size() == 2u; };
        BOOST_TEST(co_await eventually(repaired));
        co_await pause_for(20ms);
        for (std::size_t i : {0u, 1u, 2u, 4u}) BOOST_TEST(r.fakes[i].received(script_kind::acquire).size() == 1u);
        const auto repair = r.fakes[3].received(script_kind::acquire).back();
        BOOST_TEST(repair.args.at(0) == l.token());

        // Released: a later extension answer changes nothing, and nothing is repaired any more.
        auto [rec] = co_await l.async_release(use);
        BOOST_TEST(!rec);
        co_await pause_for(20ms);
        BOOST_TEST(r.fakes[3].received(script_kind::acquire).size() == 2u);
    });
}
