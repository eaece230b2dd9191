// The read-write lock's requests against fake nodes, through the quorum layer's node seam: what each side sends and
// gives back, the waiting writer's marks and heartbeats, which release messages wake which side, and the
// conversions (an upgrade tried once and given back on failure, a downgrade that carries the hold over or releases
// it). The scripts themselves run on real servers (integration_rwlock_test).
#include "common/embedded_script.hpp"
#include "common/fakes/fake_rig.hpp"
#include "lua/rwlock.hpp"

#include <redlock/key_layout.hpp>
#include <redlock/mutex.hpp>
#include <redlock/shared_mutex.hpp>

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
const std::string key = "res";

// The lock's scripts, told apart by their keys and arguments (the name, {name}:readers, {name}:writers first).
bool rw_keys(const exec_record& r)
{
    return r.keys.size() >= 3 && r.keys[1].ends_with(":readers") && r.keys[2].ends_with(":writers");
}
// ARGV: token, ttl.
bool read_acquire(const exec_record& r)
{
    return rw_keys(r) && r.args.size() == 2;
}
// ARGV: token, ttl, waiter ttl, '1' to mark the wait, fence step.
bool write_acquire(const exec_record& r)
{
    return rw_keys(r) && r.args.size() == 5;
}
// ARGV: token, release id, channel, what goes ('all', 'hold', 'write').
bool rw_release(const exec_record& r)
{
    return rw_keys(r) && r.args.size() == 4;
}

// The watchdog's batch of readers' extensions (one per reader: its name and readers' set; its token and ttl), which
// reads like one extension when it holds one reader: told by its script.
bool read_extend_batch(const exec_record& r)
{
    return r.payload.find(detail::embedded_script<detail::lua::rwlock_read_extend_many>().sha1()) != std::string::npos;
}

std::vector<exec_record> only(const std::vector<exec_record>& records, bool (*which)(const exec_record&))
{
    std::vector<exec_record> out;
    for (const auto& r : records)
        if (which(r)) out.push_back(r);
    return out;
}

// Every node answers the lock's acquires with `read` and `write` and grants everything else.
void answer(rig& r, action read, action write)
{
    for (std::size_t i = 0; i < r.n(); ++i)
        r.fakes[i].set_policy([read, write](const exec_record& rec) {
            if (read_extend_batch(rec)) {
                std::vector<resp::value> each(rec.args.size() / 2, integer(1));
                return action::reply(array(std::move(each)));
            }
            if (read_acquire(rec)) return read;
            if (write_acquire(rec)) return write;
            return action::released();
        });
}

lock_options quick()
{
    lock_options o;
    o.ttl = 2000ms;
    o.wait = 1000ms;
    o.retry_delay = 10'000ms;  // a timed retry would show as a missing message
    o.retry_jitter = 0ms;
    return o;
}

}  // namespace

// Each reader's lease is its own: its acquire and its release name its token, on every node, and it carries no
// fencing token even when the lock's options ask writers for one.
BOOST_DATA_TEST_CASE(a_reader_takes_the_read_side_on_a_quorum_and_releases_it_everywhere, bdata::make({1, 3}), n)
{
    rig r(static_cast<std::size_t>(n));
    answer(r, action::granted(), action::refused());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = quick();
        o.fencing = true;
        shared_mutex m(*r.c, key, o);
        auto [ec, held] = co_await m.async_lock_shared(use);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_TEST(held.fencing_token() == 0u);
        co_await held.async_release(asio::use_awaitable);
        for (std::size_t i = 0; i < r.n(); ++i) {
            const auto acquires = only(r.fakes[i].received(), read_acquire);
            BOOST_REQUIRE(acquires.size() == 1u);
            BOOST_TEST(acquires[0].args[0] == held.token());
            BOOST_TEST(acquires[0].args[1] == "2000");
            const auto releases = only(r.fakes[i].received(), rw_release);
            BOOST_REQUIRE(releases.size() == 1u);
            BOOST_TEST(releases[0].args[0] == held.token());
            BOOST_TEST(releases[0].args[2] == release_channel(key));
            BOOST_TEST(releases[0].args[3] == "all");
        }
    });
}

// A waiting writer marks its wait with every attempt, and the attempts are its heartbeats: at most waiter_ttl / 3
// apart, although the refusals say the readers hold for a minute (and a waiter that may rely on release messages
// would otherwise sleep that long). Giving up, it takes its mark away on every node. A try marks nothing and, refused
// everywhere, leaves nothing to take back.
BOOST_DATA_TEST_CASE(a_waiting_writer_marks_its_wait_with_every_attempt_and_takes_it_away_when_it_gives_up,
                     bdata::make({1, 3}), n)
{
    rig r(static_cast<std::size_t>(n));
    answer(r, action::granted(), action::refused(60'000));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = quick();
        o.waiter_ttl = 300ms;
        shared_mutex m(*r.c, key, o);
        auto [ec, held] = co_await m.async_lock(use);
        BOOST_TEST(ec == error::not_acquired, ec.message());
        co_await pause_for(100ms);  // the leave, sent without waiting
        for (std::size_t i = 0; i < r.n(); ++i) {
            const auto attempts = only(r.fakes[i].received(), write_acquire);
            BOOST_TEST(attempts.size() >= 6u, "attempts in 1 s with heartbeats every 100 ms: " << attempts.size());
            for (const auto& a : attempts) {
                BOOST_TEST(a.args[2] == "300");
                BOOST_TEST(a.args[3] == "1");
            }
            const auto releases = only(r.fakes[i].received(), rw_release);
            BOOST_REQUIRE(releases.size() == 1u);
            BOOST_TEST(releases[0].args[1].ends_with(":left"));
            BOOST_TEST(releases[0].args[3] == "all");
        }

        for (std::size_t i = 0; i < r.n(); ++i) r.fakes[i].set_policy({});
        answer(r, action::granted(), action::refused(60'000));
        const auto before = r.fakes[0].received().size();
        auto [tried, none] = co_await m.async_try_lock(use);
        BOOST_TEST(tried == error::not_acquired);
        co_await pause_for(100ms);
        const auto records = r.fakes[0].received();
        BOOST_REQUIRE(records.size() == before + 1);
        BOOST_TEST(write_acquire(records.back()));
        BOOST_TEST(records.back().args[3] == "0");
    });
}

// Over 3 nodes: granted on one, refused on two. The clean-up goes to the node that granted and keeps the mark there
// ('hold'): a writer that split the nodes still holds readers back everywhere it reached.
BOOST_AUTO_TEST_CASE(a_writers_failed_attempt_gives_back_its_grant_and_keeps_its_mark)
{
    rig r(3);
    for (std::size_t i = 0; i < r.n(); ++i)
        r.fakes[i].set_policy([i](const exec_record& rec) {
            if (write_acquire(rec)) return i == 0 ? action::granted() : action::refused(60'000);
            return action::released();
        });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        shared_mutex m(*r.c, key, quick());
        auto [ec, held] = co_await m.async_try_lock(use);
        BOOST_TEST(ec == error::not_acquired);
        co_await pause_for(100ms);
        const auto cleaned = only(r.fakes[0].received(), rw_release);
        BOOST_REQUIRE(cleaned.size() == 1u);
        BOOST_TEST(cleaned[0].args[1].starts_with("~"), "a clean-up id: " << cleaned[0].args[1]);
        BOOST_TEST(cleaned[0].args[3] == "hold");
        for (std::size_t i = 1; i < r.n(); ++i) BOOST_TEST(only(r.fakes[i].received(), rw_release).empty());
    });
}

// The messages of the lock's releases: "=w" (the node is free but writers wait), a holder's or a clean-up's, wakes a
// waiting writer and leaves a waiting reader asleep; "+*" (free, no mark left) wakes the reader. The refusals say a
// minute, and the timed retries are 10 s apart: only a message can make them try again within the test.
BOOST_DATA_TEST_CASE(a_release_only_writers_can_pass_wakes_a_writer_and_not_a_reader, bdata::make({1, 3}), n)
{
    rig r(static_cast<std::size_t>(n));
    answer(r, action::refused(60'000), action::refused(60'000));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = quick();
        o.wait = 10'000ms;
        o.waiter_ttl = 60'000ms;  // the writer's heartbeats do not come within the test
        shared_mutex m(*r.c, key, o);
        std::optional<error_code> read_ec, write_ec;
        lease reader, writer;
        m.async_lock_shared(r.bind([&](error_code e, lease l) {
            read_ec = e;
            reader = std::move(l);
        }));
        co_await pause_for(300ms);  // refused, subscribed, checked again, asleep
        m.async_lock(r.bind([&](error_code e, lease l) {
            write_ec = e;
            writer = std::move(l);
        }));
        co_await pause_for(300ms);
        const auto reads = only(r.fakes[0].received(), read_acquire).size();
        const auto writes = only(r.fakes[0].received(), write_acquire).size();

        // A clean-up that freed every node but leaves writers waiting ("~id\n=w") leaves the reader asleep as well.
        for (std::size_t i = 0; i < r.n(); ++i) r.fakes[i].publish(release_channel(key), "~c:1\n=w");
        co_await pause_for(200ms);
        BOOST_TEST(only(r.fakes[0].received(), read_acquire).size() == reads, "a reader woken by a writers' clean-up");

        answer(r, action::granted(), action::granted());
        for (std::size_t i = 0; i < r.n(); ++i) r.fakes[i].publish(release_channel(key), "r1\n=w");
        BOOST_REQUIRE(co_await eventually([&] { return write_ec.has_value(); }, 2000ms));
        BOOST_TEST(!*write_ec, write_ec->message());
        co_await pause_for(200ms);
        BOOST_TEST(!read_ec.has_value(), "a reader woken by a release only writers can pass");
        BOOST_TEST(only(r.fakes[0].received(), read_acquire).size() == reads);
        BOOST_TEST(only(r.fakes[0].received(), write_acquire).size() > writes);

        for (std::size_t i = 0; i < r.n(); ++i) r.fakes[i].publish(release_channel(key), "r2\n+*");
        BOOST_REQUIRE(co_await eventually([&] { return read_ec.has_value(); }, 2000ms));
        BOOST_TEST(!*read_ec, read_ec->message());
        co_await writer.async_release(use);
        co_await reader.async_release(use);
    });
}

// An upgrade is the write acquire of the reader's own token, without a mark, sent once. Refused by a quorum (other
// readers), it gives the write key back where it was granted ('write': the reader's entry stays there), and the read
// lease comes back, held: its release later still names its token.
BOOST_AUTO_TEST_CASE(a_refused_upgrade_gives_back_the_write_key_and_the_read_lease)
{
    rig r(3);
    answer(r, action::granted(), action::granted());
    for (std::size_t i = 1; i < r.n(); ++i)
        r.fakes[i].set_policy([](const exec_record& rec) {
            if (write_acquire(rec)) return action::refused(60'000);
            return action::released();
        });
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        shared_mutex m(*r.c, key, quick());
        auto [ec, read] = co_await m.async_lock_shared(use);
        BOOST_REQUIRE(!ec);
        const auto token = read.token();
        auto [up, back] = co_await m.async_try_upgrade(std::move(read), use);
        BOOST_TEST(up == error::not_acquired, up.message());
        BOOST_REQUIRE(back);
        BOOST_TEST(back.token() == token);
        BOOST_TEST(!back.lost());
        co_await pause_for(100ms);
        for (std::size_t i = 0; i < r.n(); ++i) {
            const auto tries = only(r.fakes[i].received(), write_acquire);
            BOOST_REQUIRE(tries.size() == 1u);
            BOOST_TEST(tries[0].args[0] == token);
            BOOST_TEST(tries[0].args[3] == "0");
            const auto releases = only(r.fakes[i].received(), rw_release);
            if (i == 0) {
                BOOST_REQUIRE(releases.size() == 1u);
                BOOST_TEST(releases[0].args[3] == "write");
            } else {
                BOOST_TEST(releases.empty());
            }
        }
        co_await back.async_release(use);
        const auto releases = only(r.fakes[1].received(), rw_release);
        BOOST_REQUIRE(releases.size() == 1u);
        BOOST_TEST(releases[0].args[0] == token);
        BOOST_TEST(releases[0].args[3] == "all");
    });
}

// A successful upgrade carries the hold over: the write lease has the reader's token and nothing of the read lease
// reaches the nodes after it (no release, no extension, although its watchdog was due while the upgrade was on its
// way); a downgrade back is the read acquire of that token, and the write lease sends nothing either. One release
// ends it all.
BOOST_DATA_TEST_CASE(conversions_carry_the_hold_over_under_one_token, bdata::make({1, 3}), n)
{
    rig r(static_cast<std::size_t>(n));
    // Slow acquires: each conversion is on its way for three watchdog intervals.
    answer(r, action::delayed(150ms, integer(1)), action::delayed(150ms, integer(1)));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto o = quick();
        o.watchdog = true;
        o.extend_interval = 50ms;
        shared_mutex m(*r.c, key, o);
        auto [ec, read] = co_await m.async_lock_shared(use);
        BOOST_REQUIRE(!ec);
        const auto token = read.token();
        auto [up, write] = co_await m.async_try_upgrade(std::move(read), use);
        BOOST_REQUIRE_MESSAGE(!up, up.message());
        BOOST_TEST(write.token() == token);
        co_await pause_for(200ms);  // the write lease's watchdog runs: token_lease extensions of the write key
        auto [down, again] = co_await m.async_downgrade(std::move(write), use);
        BOOST_REQUIRE_MESSAGE(!down, down.message());
        BOOST_TEST(again.token() == token);
        co_await pause_for(200ms);
        co_await again.async_release(use);
        for (std::size_t i = 0; i < r.n(); ++i) {
            const auto records = r.fakes[i].received();
            const auto releases = only(records, rw_release);
            BOOST_REQUIRE(releases.size() == 1u);  // the last lease's, nothing of the two before it
            BOOST_TEST(releases[0].args[3] == "all");
            // In order: read acquire, write acquire (the upgrade), write extensions, read acquire (the downgrade),
            // read extensions, the release.
            std::vector<std::string> steps;
            for (const auto& rec : records) {
                const auto step = read_acquire(rec)                 ? "read"
                                  : write_acquire(rec)              ? "write"
                                  : rw_release(rec)                 ? "release"
                                  : rec.kind == script_kind::extend ? "extend-write"
                                  : read_extend_batch(rec)          ? "extend-read"
                                                                    : "other";
                if (steps.empty() || steps.back() != step) steps.push_back(step);
            }
            const std::vector<std::string> expected{"read", "extend-read", "write",  "extend-write",
                                                    "read", "extend-read", "release"};
            // The first read lease may not have extended before its upgrade.
            auto got = steps;
            if (got.size() > 1 && got[1] != "extend-read") got.insert(got.begin() + 1, "extend-read");
            BOOST_TEST(got == expected, boost::test_tools::per_element());
            const auto upgrade = only(records, write_acquire);
            BOOST_REQUIRE(upgrade.size() == 1u);
            BOOST_TEST(upgrade[0].args[0] == token);
            BOOST_TEST(only(records, read_acquire).back().args[0] == token);
        }
    });
}

// A downgrade that does not reach a quorum releases both sides on every node that may have converted, and the lock
// is not held any more: the lease completed is empty.
BOOST_AUTO_TEST_CASE(a_failed_downgrade_releases_everything)
{
    rig r(3);
    answer(r, action::granted(), action::granted());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        shared_mutex m(*r.c, key, quick());
        auto [ec, write] = co_await m.async_lock(use);
        BOOST_REQUIRE(!ec);
        for (std::size_t i = 1; i < r.n(); ++i)
            r.fakes[i].set_policy([](const exec_record& rec) {
                if (read_acquire(rec)) return action::fail(error::closed);
                return action::released();
            });
        auto [down, none] = co_await m.async_downgrade(std::move(write), use);
        BOOST_TEST(down == error::no_quorum, down.message());
        BOOST_TEST(!none);
        co_await pause_for(100ms);
        for (std::size_t i = 0; i < r.n(); ++i) {
            const auto releases = only(r.fakes[i].received(), rw_release);
            BOOST_REQUIRE(releases.size() == 1u);
            BOOST_TEST(releases[0].args[1].starts_with("~"));
            BOOST_TEST(releases[0].args[3] == "all");
        }
    });
}

// Bad input fails before any I/O, and a conversion handed the wrong lease gives it back untouched.
BOOST_AUTO_TEST_CASE(bad_arguments_fail_before_any_request)
{
    rig r(3);
    answer(r, action::granted(), action::granted());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto fair = quick();
        fair.fair = true;
        auto [unfair, none] = co_await shared_mutex(*r.c, key, fair).async_lock_shared(diag, use);
        BOOST_TEST(unfair == error::invalid_argument);
        BOOST_TEST(std::string(diag.client_message()).find("fair") != std::string::npos, diag.client_message());
        auto short_heartbeat = quick();
        short_heartbeat.waiter_ttl = 50ms;
        auto [hb, none2] = co_await shared_mutex(*r.c, key, short_heartbeat).async_lock(use);
        BOOST_TEST(hb == error::invalid_argument);
        // A reentrant owner named as the readers' marker would take the readers' hold for its own.
        auto [marker, none4] = co_await redlock::mutex(*r.c, key, quick())
                                   .owned_by(std::string(redlock::readers_marker))
                                   .async_lock(diag, use);
        BOOST_TEST(marker == error::invalid_argument);
        BOOST_TEST(std::string(diag.client_message()).find("readers") != std::string::npos, diag.client_message());
        BOOST_TEST(r.fakes[0].received().empty());
        // Only a writer that may wait heartbeats a mark: a reader and a try do not need the waiter TTL.
        auto [reader_ok, reader] = co_await shared_mutex(*r.c, key, short_heartbeat).async_lock_shared(use);
        BOOST_TEST(!reader_ok, reader_ok.message());
        co_await reader.async_release(use);
        auto [try_ok, tried] = co_await shared_mutex(*r.c, key, short_heartbeat).async_try_lock(use);
        BOOST_TEST(!try_ok, try_ok.message());
        co_await tried.async_release(use);

        shared_mutex m(*r.c, key, quick());
        auto [ec, write] = co_await m.async_lock(use);
        BOOST_REQUIRE(!ec);
        const auto sent = r.fakes[0].received().size();  // from here on, bad conversions send nothing
        auto [up, same] = co_await m.async_try_upgrade(std::move(write), diag, use);
        BOOST_TEST(up == error::invalid_argument);
        BOOST_TEST(std::string(diag.client_message()).find("read lease") != std::string::npos);
        BOOST_REQUIRE(same);
        auto [other, back] = co_await shared_mutex(*r.c, "other", quick()).async_downgrade(std::move(same), use);
        BOOST_TEST(other == error::invalid_argument);
        BOOST_REQUIRE(back);
        auto [empty, nothing] = co_await m.async_downgrade(lease{}, use);
        BOOST_TEST(empty == error::invalid_argument);
        BOOST_TEST(r.fakes[0].received().size() == sent);
        co_await back.async_release(use);
    });
}
