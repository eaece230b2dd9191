// The reentrant lock on 1 and 3 real nodes, and on 3 with one down: counted holds, the owner's re-entry at
// once, other owners refused until the last hold ends, one fencing token across re-entry, and a non-owner's
// release or extend that changes nothing.
#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the aligned_alloc of an Asio coroutine frame with the frame's own operator delete (which frees
// it correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/node_setups.hpp>
#include <common/servers/redis_rig.hpp>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::test::redis_rig;
using redlock::test::run_coro;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

const auto& setups = redlock::test::one_three_and_three_with_one_down;

// A reentrant lock on "job" for `owner`, one attempt per call.
redlock::mutex job_of(const redlock::client& c, std::string owner, bool fencing = false)
{
    redlock::lock_options o;
    o.ttl = 10'000ms;
    o.wait = 0ms;
    o.node_timeout = 300ms;
    o.fencing = fencing;
    return redlock::mutex(c, "job", o).owned_by(std::move(owner));
}

}  // namespace

BOOST_DATA_TEST_CASE(an_owner_takes_the_lock_again_and_others_wait_for_its_last_hold, setups, s)
{
    redis_rig rig(s);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        auto seven = job_of(rig.client(), "request-7", true);
        auto eight = job_of(rig.client(), "request-8", true);
        auto [e1, outer] = co_await seven.async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        redlock::diagnostics diag;
        auto [e2, inner] = co_await seven.async_lock(diag, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e2, e2.message() << ": " << diag.message());
        BOOST_TEST(diag.waiting().attempts == 1u);  // at once, not after the first hold
        BOOST_TEST(outer.fencing_token() > 0u);
        BOOST_TEST(inner.fencing_token() == outer.fencing_token());   // one token for the owner's holds
        BOOST_TEST(inner.token() != outer.token());                   // each hold is its own lease
        BOOST_TEST(rig.nodes[0].cli({"GET", "job"}) == "request-7");  // the key names the owner

        auto [e3, other] = co_await eight.async_lock(use_tuple);
        BOOST_TEST(e3 == error::not_acquired);

        // Extending one hold keeps the lock (and so every hold) alive.
        auto [ext] = co_await inner.async_extend(use_tuple);
        BOOST_TEST(!ext, ext.message());

        auto [r1] = co_await inner.async_release(use_tuple);
        BOOST_TEST(!r1, r1.message());
        BOOST_TEST(rig.nodes[0].cli({"GET", "job"}) == "request-7");  // the outer hold remains
        auto [e4, still] = co_await eight.async_lock(use_tuple);
        BOOST_TEST(e4 == error::not_acquired);

        auto [r2] = co_await outer.async_release(use_tuple);
        BOOST_TEST(!r2, r2.message());
        auto [e5, next] = co_await eight.async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e5, e5.message());
        BOOST_TEST(next.fencing_token() > outer.fencing_token());  // a new owner: a new token
        co_await next.async_release(use_tuple);
        BOOST_TEST(rig.nodes[0].cli({"EXISTS", "job", "{job}:holds"}) == "0");
    });
}

BOOST_DATA_TEST_CASE(a_hold_whose_lock_another_owner_took_changes_nothing_and_says_not_owner, setups, s)
{
    redis_rig rig(s);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        auto [e1, held] = co_await job_of(rig.client(), "request-7").async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        // The keys change hands behind the lease's back (say a failover lost them and another owner came).
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            if (!rig.nodes[i].running()) continue;
            rig.nodes[i].cli({"DEL", "{job}:holds"});
            rig.nodes[i].cli({"SET", "job", "request-8", "PX", "60000"});
            rig.nodes[i].cli({"HSET", "{job}:holds", "=request-8", "0", "another-hold", "1"});
        }
        auto [ext] = co_await held.async_extend(use_tuple);
        BOOST_TEST(ext == error::not_owner);
        auto [rel] = co_await held.async_release(use_tuple);
        BOOST_TEST((rel == error::not_owner || rel == error::lost), rel.message());
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            if (!rig.nodes[i].running()) continue;
            BOOST_TEST(rig.nodes[i].cli({"GET", "job"}) == "request-8");
            BOOST_TEST(rig.nodes[i].cli({"HLEN", "{job}:holds"}) == "2");  // the owner and its one hold
        }
    });
}

// Defect: a re-entry read the key's fence counter, which outlives every hold: it held the previous owner's token.
// Owner P locks with fencing and releases; owner O locks without fencing and re-enters with it: O's token must
// be above P's (a stalled P's late write must fail the guard), and O's later re-entries keep that token.
BOOST_DATA_TEST_CASE(a_reentry_never_carries_an_earlier_owners_token, setups, s)
{
    redis_rig rig(s);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        auto [e1, previous] = co_await job_of(rig.client(), "request-p", true).async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        const auto p_token = previous.fencing_token();
        BOOST_TEST(p_token > 0u);
        co_await previous.async_release(use_tuple);

        auto [e2, unfenced] = co_await job_of(rig.client(), "request-o").async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e2, e2.message());
        BOOST_TEST(unfenced.fencing_token() == 0u);
        redlock::diagnostics diag;
        auto [e3, fenced] = co_await job_of(rig.client(), "request-o", true).async_lock(diag, use_tuple);
        BOOST_REQUIRE_MESSAGE(!e3, e3.message() << ": " << diag.message());
        BOOST_TEST(fenced.fencing_token() > p_token);
        auto [e4, again] = co_await job_of(rig.client(), "request-o", true).async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e4, e4.message());
        BOOST_TEST(again.fencing_token() == fenced.fencing_token());  // the hold remembers its token
        co_await again.async_release(use_tuple);
        co_await fenced.async_release(use_tuple);
        co_await unfenced.async_release(use_tuple);
    });
}

// The owner's holds come from two clients (two processes serving one request): the second client's re-entry
// keeps the token the first committed.
BOOST_DATA_TEST_CASE(a_reentry_from_another_client_keeps_the_committed_token, setups, s)
{
    redis_rig rig(s, 2);
    auto& first = rig.client(0);
    auto& second = rig.client(1);
    rig.run([&]() -> asio::awaitable<void> {
        auto [e1, outer] = co_await job_of(first, "request-7", true).async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        auto [e2, inner] = co_await job_of(second, "request-7", true).async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e2, e2.message());
        BOOST_TEST(inner.fencing_token() == outer.fencing_token());
        co_await inner.async_release(use_tuple);
        co_await outer.async_release(use_tuple);
    });
}

// The owner's first hold was granted on every node but has not committed its token yet (another client of the
// owner is between its two phases); the counters hold the previous owner's token 5. A re-entry now must not
// take 5: it commits a token of its own.
BOOST_AUTO_TEST_CASE(a_reentry_before_the_first_hold_committed_takes_a_new_token)
{
    redis_rig rig(3);
    for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
        rig.nodes[i].cli({"SET", "job", "request-7", "PX", "60000"});
        rig.nodes[i].cli({"HSET", "{job}:holds", "=request-7", "0", "first-hold", "1"});
        rig.nodes[i].cli({"PEXPIRE", "{job}:holds", "60000"});
        rig.nodes[i].cli({"SET", "{job}:fence", "5"});
    }
    rig.run([&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        auto [ec, held] = co_await job_of(rig.client(), "request-7", true).async_lock(diag, use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
        BOOST_TEST(held.fencing_token() > 5u);
        co_await held.async_release(use_tuple);
    });
}

// A release whose first copy landed but whose answer was lost is sent again: the hold is gone while the owner's
// other holds keep the key. That is "released", never "another owner holds it".
BOOST_DATA_TEST_CASE(a_release_of_a_hold_already_gone_while_the_owner_holds_is_released, setups, s)
{
    redis_rig rig(s);
    rig.run([&]() -> asio::awaitable<void> {
        auto [e1, outer] = co_await job_of(rig.client(), "request-7").async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        auto [e2, inner] = co_await job_of(rig.client(), "request-7").async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e2, e2.message());
        for (std::size_t i = 0; i < rig.nodes.size(); ++i)
            if (rig.nodes[i].running()) rig.nodes[i].cli({"HDEL", "{job}:holds", inner.token()});
        redlock::diagnostics diag;
        auto [rel] = co_await inner.async_release(diag, use_tuple);
        BOOST_TEST(!rel, rel.message() << ": " << diag.message());
        BOOST_TEST(rig.nodes[0].cli({"GET", "job"}) == "request-7");  // the outer hold keeps the lock
        auto [r2] = co_await outer.async_release(use_tuple);
        BOOST_TEST(!r2, r2.message());
        BOOST_TEST(rig.nodes[0].cli({"EXISTS", "job"}) == "0");
    });
}

// An old hold of the owner left its key on node 0 only (its release never reached it); meanwhile another owner
// held the lock on nodes 1 and 2 with fencing token 10. The owner's next lock is re-entered on node 0 alone: a
// first hold, not a re-entry, so its token must be above 10 (a re-entry keeps its token only on a quorum).
BOOST_AUTO_TEST_CASE(a_reentry_on_a_minority_only_is_a_first_hold_with_a_new_token)
{
    redis_rig rig(3);
    rig.nodes[0].cli({"SET", "job", "request-7", "PX", "60000"});
    rig.nodes[0].cli({"HSET", "{job}:holds", "=request-7", "0", "old-hold", "1"});
    rig.nodes[0].cli({"PEXPIRE", "{job}:holds", "60000"});
    rig.nodes[0].cli({"SET", "{job}:fence", "3"});
    for (std::size_t i = 1; i < 3; ++i) rig.nodes[i].cli({"SET", "{job}:fence", "10"});
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::diagnostics diag;
        auto [ec, held] = co_await job_of(rig.client(), "request-7", true).async_lock(diag, use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
        BOOST_TEST(held.fencing_token() > 10u);
        co_await held.async_release(use_tuple);
    });
}

// A hold's set that outlived its key (the key deleted by hand, or a failover that kept one but not the
// other) holds nothing: extend and release say the hold is gone instead of succeeding.
BOOST_AUTO_TEST_CASE(a_hold_without_its_key_is_gone)
{
    redis_rig rig(1);
    rig.run([&]() -> asio::awaitable<void> {
        auto [e1, held] = co_await job_of(rig.client(), "request-7").async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        rig.nodes[0].cli({"DEL", "job"});
        auto [ext] = co_await held.async_extend(use_tuple);
        BOOST_TEST((ext == error::lost || ext == error::not_owner), ext.message());
        auto [rel] = co_await held.async_release(use_tuple);
        BOOST_TEST(rel == error::lost, rel.message());  // the extension found it gone: the lease was lost
        BOOST_TEST(rig.nodes[0].cli({"EXISTS", "job", "{job}:holds"}) == "0");
    });
}

// The set outlived its key, and another owner took the key since with a plain lock (which does not touch the
// set): the stale hold must neither prolong nor delete that owner's key.
BOOST_AUTO_TEST_CASE(a_stale_hold_never_touches_a_key_another_owner_took)
{
    redis_rig rig(1);
    rig.run([&]() -> asio::awaitable<void> {
        auto [e1, held] = co_await job_of(rig.client(), "request-7").async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        rig.nodes[0].cli({"DEL", "job"});
        rig.nodes[0].cli({"SET", "job", "plain-token", "PX", "2000"});
        auto [ext] = co_await held.async_extend(use_tuple);
        BOOST_TEST(ext == error::not_owner, ext.message());
        BOOST_TEST(std::stoi(rig.nodes[0].cli({"PTTL", "job"})) <= 2000);
        auto [rel] = co_await held.async_release(use_tuple);
        BOOST_TEST(rel != error_code{}, rel.message());
        BOOST_TEST(rig.nodes[0].cli({"GET", "job"}) == "plain-token");
    });
}

BOOST_AUTO_TEST_CASE(reentrant_options_are_checked_before_any_io)
{
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), {redlock::node_config{}});
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        auto two = redlock::mutex(c, std::vector<std::string>{"a", "b"}).owned_by("owner");
        auto [e1, l1] = co_await two.async_lock(use_tuple);
        BOOST_TEST(e1 == error::invalid_argument);
        auto both = redlock::mutex(c, "a", {.fair = true}).owned_by("owner");
        auto [e2, l2] = co_await both.async_lock(use_tuple);
        BOOST_TEST(e2 == error::invalid_argument);
    });
}
