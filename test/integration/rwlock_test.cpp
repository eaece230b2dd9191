// The read-write lock on 1 and 3 real nodes (and 3 with one down): readers overlap and a writer is never beside
// anyone, a steady stream of readers does not starve a writer, a dead reader frees its share at its own TTL and a
// dead waiting writer stops blocking readers within its waiter TTL, each side wakes the other by message,
// conversions, fencing for writers, the plain lock of the same name as a writer, and an idle lock leaves no key.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
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
using redlock::error;
using redlock::error_code;
using redlock::lease;
using redlock::shared_mutex;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::redis_rig;
using redlock::test::run_coro;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Who is inside, seen by every coroutine of a test (one thread). Not in the anonymous namespace: the data test cases
// that capture it are templates.
struct occupancy {
    int readers = 0;
    int writers = 0;
    int most_readers = 0;
    int violations = 0;  // a writer beside anyone
    long reads = 0, writes = 0;
    std::vector<std::string> failures;

    void enter_read()
    {
        ++readers;
        most_readers = std::max(most_readers, readers);
        if (writers != 0) ++violations;
        ++reads;
    }
    void enter_write()
    {
        ++writers;
        if (writers != 1 || readers != 0) ++violations;
        ++writes;
    }
};

namespace {

const auto& setups = redlock::test::one_three_and_three_with_one_down;
const std::string key = "rw";

redlock::lock_options options(ms ttl = 2000ms, ms wait = 30'000ms)
{
    redlock::lock_options o;
    o.ttl = ttl;
    o.wait = wait;
    o.node_timeout = 100ms;
    o.retry_delay = 20ms;
    o.retry_jitter = 10ms;
    return o;
}

asio::awaitable<void> reader_loop(redlock::client& c, occupancy& o, steady::time_point until, ms hold)
{
    shared_mutex m(c, key, options());
    while (steady::now() < until) {
        redlock::diagnostics diag;
        auto [ec, held] = co_await m.async_lock_shared(diag, use_tuple);
        if (ec) {
            o.failures.push_back("reader: " + ec.message() + ": " + std::string(diag.message()));
            co_return;
        }
        o.enter_read();
        co_await sleep_for(hold);
        if (o.writers != 0) ++o.violations;
        --o.readers;
        co_await held.async_release(use_tuple);
    }
}

asio::awaitable<void> writer_loop(redlock::client& c, occupancy& o, steady::time_point until, ms hold)
{
    shared_mutex m(c, key, options());
    while (steady::now() < until) {
        redlock::diagnostics diag;
        auto [ec, held] = co_await m.async_lock(diag, use_tuple);
        if (ec) {
            o.failures.push_back("writer: " + ec.message() + ": " + std::string(diag.message()));
            co_return;
        }
        o.enter_write();
        co_await sleep_for(hold);
        if (o.readers != 0 || o.writers != 1) ++o.violations;
        --o.writers;
        co_await held.async_release(use_tuple);
        co_await sleep_for(hold);
    }
}

std::string joined(const std::vector<std::string>& lines)
{
    std::string out;
    for (const auto& l : lines) out += l + "; ";
    return out;
}

// Every key of the lock on every node that runs.
std::string keys_left(const cluster& nodes, const redlock::test::node_setup& s)
{
    std::string out;
    for (std::size_t i = 0; i + static_cast<std::size_t>(s.down) < nodes.size(); ++i)
        for (const auto& k : {key, std::string("{rw}:readers"), std::string("{rw}:writers")})
            if (nodes[i].cli({"EXISTS", k}) != "0") out += "node " + std::to_string(i) + ": " + k + "; ";
    return out;
}

}  // namespace

// 3 clients, 6 readers and 2 writers each taking their side again and again for 3 s: readers hold together, a writer
// never holds beside anyone, and once all is released no key is left behind (the marker, the readers' set and the
// writers' marks go with the last holder or waiter).
BOOST_DATA_TEST_CASE(readers_overlap_and_a_writer_is_never_beside_anyone, setups, s)
{
    redis_rig rig(s, 3);
    occupancy o;
    rig.run([&]() -> asio::awaitable<void> {
        for (auto& c : rig.clients) co_await c->async_connect(asio::use_awaitable);
        const auto until = steady::now() + 3s;
        int running = 0;
        auto done = [&running](std::exception_ptr e) {
            --running;
            if (e) std::rethrow_exception(e);
        };
        for (std::size_t i = 0; i < 6; ++i, ++running)
            asio::co_spawn(rig.ctx, reader_loop(rig.client(i % 3), o, until, 40ms), done);
        for (std::size_t i = 0; i < 2; ++i, ++running)
            asio::co_spawn(rig.ctx, writer_loop(rig.client(i), o, until, 20ms), done);
        while (running > 0) co_await sleep_for(10ms);
    });
    BOOST_TEST(o.failures.empty(), joined(o.failures));
    BOOST_TEST(o.violations == 0);
    BOOST_TEST(o.most_readers >= 2, "readers never held together");
    BOOST_TEST(o.writes >= 2);
    BOOST_TEST(o.reads >= 10);
    BOOST_TEST(keys_left(rig.nodes, s).empty(), keys_left(rig.nodes, s));
}

// Four readers, each taking the read side again as soon as it let go, always overlapping: without writer preference
// the lock is never free of readers. A writer that asks meanwhile gets in (its mark holds new readers back until
// the ones inside leave), and the readers then go on.
BOOST_DATA_TEST_CASE(a_steady_stream_of_readers_does_not_starve_a_writer, setups, s)
{
    redis_rig rig(s, 2);
    occupancy o;
    std::optional<error_code> writer_ec;
    std::string writer_message;
    long reads_before_writer = 0, reads_after_writer = 0;
    rig.run([&]() -> asio::awaitable<void> {
        for (auto& c : rig.clients) co_await c->async_connect(asio::use_awaitable);
        const auto until = steady::now() + 6s;
        int running = 0;
        auto done = [&running](std::exception_ptr e) {
            --running;
            if (e) std::rethrow_exception(e);
        };
        for (std::size_t i = 0; i < 4; ++i, ++running) {
            asio::co_spawn(rig.ctx, reader_loop(rig.client(0), o, until, 200ms), done);
            co_await sleep_for(50ms);  // staggered: one of them always holds
        }
        co_await sleep_for(500ms);
        BOOST_TEST(o.readers > 0);
        reads_before_writer = o.reads;
        shared_mutex m(rig.client(1), key, options(2000ms, 5000ms));
        redlock::diagnostics diag;
        auto [ec, held] = co_await m.async_lock(diag, use_tuple);
        writer_ec = ec;
        writer_message = diag.message();
        if (!ec) {
            o.enter_write();
            co_await sleep_for(50ms);
            if (o.readers != 0) ++o.violations;
            --o.writers;
            co_await held.async_release(use_tuple);
        }
        const auto reads_at_release = o.reads;
        while (running > 0) co_await sleep_for(10ms);
        reads_after_writer = o.reads - reads_at_release;
    });
    BOOST_REQUIRE(writer_ec.has_value());
    BOOST_TEST(!*writer_ec, "the writer starved: " << writer_ec->message() << ": " << writer_message);
    BOOST_TEST(o.failures.empty(), joined(o.failures));
    BOOST_TEST(o.violations == 0);
    BOOST_TEST(reads_before_writer >= 2);
    BOOST_TEST(reads_after_writer >= 2, "the readers did not go on after the writer");
}

// Each side wakes the other by message, not by a timer: the TTLs are 30 s and a waiting writer's heartbeats 20 s
// apart, so a waiter that slept until either would not be granted within the test's 10 s.
BOOST_DATA_TEST_CASE(a_writers_release_wakes_the_readers_and_the_last_readers_wakes_the_writer, setups, s)
{
    redis_rig rig(s, 2);
    rig.run([&]() -> asio::awaitable<void> {
        for (auto& c : rig.clients) co_await c->async_connect(asio::use_awaitable);
        auto o = options(30'000ms, 60'000ms);  // no last attempt at the end of the wait within the test either
        o.waiter_ttl = 60'000ms;
        shared_mutex first(rig.client(0), key, o), second(rig.client(1), key, o);

        auto [ec, writer] = co_await first.async_lock(use_tuple);
        BOOST_REQUIRE(!ec);
        std::vector<std::optional<error_code>> read_ecs(3);
        std::vector<lease> readers(3);
        std::vector<redlock::diagnostics> diags(3);
        for (std::size_t i = 0; i < 3; ++i)
            second.async_lock_shared(diags[i], [&, i](error_code e, lease l) {
                read_ecs[i] = e;
                readers[i] = std::move(l);
            });
        co_await sleep_for(500ms);
        for (const auto& r : read_ecs) BOOST_TEST(!r.has_value());
        co_await writer.async_release(use_tuple);
        const auto released = steady::now();
        while (std::any_of(read_ecs.begin(), read_ecs.end(), [](const auto& r) { return !r; }) &&
               steady::now() - released < 10s)
            co_await sleep_for(5ms);
        for (std::size_t i = 0; i < 3; ++i) {
            BOOST_REQUIRE(read_ecs[i].has_value());
            BOOST_TEST(!*read_ecs[i], read_ecs[i]->message());
            BOOST_TEST(diags[i].waiting().woken_by_release >= 1u);
        }

        std::optional<error_code> write_ec;
        lease writer2;
        redlock::diagnostics write_diag;
        first.async_lock(write_diag, [&](error_code e, lease l) {
            write_ec = e;
            writer2 = std::move(l);
        });
        co_await sleep_for(500ms);
        BOOST_TEST(!write_ec.has_value());
        for (auto& r : readers) co_await r.async_release(use_tuple);
        const auto last_left = steady::now();
        while (!write_ec && steady::now() - last_left < 10s) co_await sleep_for(5ms);
        BOOST_REQUIRE(write_ec.has_value());
        BOOST_TEST(!*write_ec, write_ec->message());
        BOOST_TEST(write_diag.waiting().woken_by_release >= 1u);
        co_await writer2.async_release(use_tuple);
    });
}

// A reader whose process stopped (its client's context stopped: it neither extends nor releases) holds its share
// until its own TTL, and no longer, although another reader keeps extending beside it: a writer waiting for both
// gets in when the live one leaves, once the dead one's TTL has passed.
BOOST_DATA_TEST_CASE(a_dead_readers_share_ends_at_its_own_ttl, setups, s)
{
    redis_rig rig(s, 1);
    asio::io_context dead_ctx;
    redlock::client dead_client(dead_ctx.get_executor(), configs(rig.nodes));
    lease dead;
    run_coro(dead_ctx, [&]() -> asio::awaitable<void> {
        co_await dead_client.async_connect(asio::use_awaitable);
        auto [ec, held] = co_await shared_mutex(dead_client, key, options(1000ms)).async_lock_shared(use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        dead = std::move(held);
    });
    dead_ctx.stop();  // from now on nothing of that client reaches the nodes
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        auto o = options(1000ms);
        o.watchdog = true;
        shared_mutex m(rig.client(), key, o);
        auto [ec, live] = co_await m.async_lock_shared(use_tuple);
        BOOST_REQUIRE(!ec);
        auto [refused, none] = co_await m.async_try_lock(use_tuple);
        BOOST_TEST(refused == error::not_acquired);
        co_await sleep_for(3000ms);  // three of the dead reader's TTLs; the live one extends meanwhile
        BOOST_TEST(!live.lost());
        co_await live.async_release(use_tuple);
        auto [free, writer] = co_await m.async_try_lock(use_tuple);
        BOOST_TEST(!free, "the dead reader still holds: " << free.message());
        co_await writer.async_release(use_tuple);
    });
}

// A reader whose token holds the name as a write key on a node (a conversion's request that landed there after its
// clean-up, over a reset connection) turns it into its reader's entry at its next extension: the watchdog must not
// keep such a key alive, which would refuse every other reader on that node for the whole read hold.
BOOST_DATA_TEST_CASE(a_readers_extension_turns_a_write_key_of_its_own_token_into_its_entry, setups, s)
{
    redis_rig rig(s, 1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        shared_mutex m(rig.client(), key, options(5000ms));
        auto [ec, read] = co_await m.async_lock_shared(use_tuple);
        BOOST_REQUIRE(!ec);
        rig.nodes[0].cli({"SET", key, read.token(), "PX", "5000"});  // the stray write key, in the marker's place
        auto [extended] = co_await read.async_extend(use_tuple);
        BOOST_TEST(!extended, extended.message());
        BOOST_TEST(rig.nodes[0].cli({"GET", key}) == std::string(redlock::readers_marker));
        BOOST_TEST(!rig.nodes[0].cli({"ZSCORE", redlock::aux_name(key, "readers"), read.token()}).empty());
        // Another reader gets in on node 0 too: on one node only there, and over 3 (one down) it needs node 0.
        auto [other_ec, other] = co_await m.async_try_lock_shared(use_tuple);
        BOOST_TEST(!other_ec, other_ec.message());
        co_await other.async_release(use_tuple);
        co_await read.async_release(use_tuple);
    });
    BOOST_TEST(keys_left(rig.nodes, s).empty(), keys_left(rig.nodes, s));
}

// A writer whose process stopped while it waited leaves its mark on the nodes: new readers wait behind it, until its
// heartbeat ends (its waiter TTL after its last attempt), and then get in.
BOOST_DATA_TEST_CASE(a_dead_waiting_writer_stops_blocking_readers_within_its_waiter_ttl, setups, s)
{
    redis_rig rig(s, 1);
    asio::io_context dead_ctx;
    redlock::client dead_client(dead_ctx.get_executor(), configs(rig.nodes));
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        shared_mutex m(rig.client(), key, options(5000ms));
        auto [ec, reader] = co_await m.async_lock_shared(use_tuple);
        BOOST_REQUIRE(!ec);
        auto o = options(5000ms);
        o.waiter_ttl = 1000ms;
        // The dead writer's first attempt (refused by the reader: marked), then its context stops.
        run_coro(dead_ctx, [&]() -> asio::awaitable<void> {
            co_await dead_client.async_connect(asio::use_awaitable);
            shared_mutex w(dead_client, key, o);
            w.async_lock([](error_code, lease) {});
            co_await sleep_for(200ms);
        });
        dead_ctx.stop();
        const auto marked = steady::now();
        auto [blocked, none] = co_await m.async_try_lock_shared(use_tuple);
        BOOST_TEST(blocked == error::not_acquired, "a new reader passed a waiting writer: " << blocked.message());
        redlock::diagnostics diag;
        auto [late, second] = co_await m.with_options(options(5000ms, 10'000ms)).async_lock_shared(diag, use_tuple);
        BOOST_TEST(!late, late.message() << ": " << diag.message());
        const auto took = steady::now() - marked;
        BOOST_TEST((took >= 500ms), "the mark ended before the dead writer's heartbeat could");
        // Its waiter TTL (1 s) after its last attempt, plus a margin for a loaded machine: not the lock's TTL (5 s)
        // nor the marks key's expiry (two waiter TTLs after it was last renewed).
        BOOST_TEST((took < 1900ms), "the dead writer's mark outlived its waiter TTL: "
                                        << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                                        << " ms");
        co_await second.async_release(use_tuple);
        co_await reader.async_release(use_tuple);
    });
}

// A writer that waited (marking with a long waiter TTL), was granted, and died holding: its mark goes with its key
// (the grant shortened it to the key's TTL), so readers get in once the key's TTL ran out, not its waiter TTL.
BOOST_DATA_TEST_CASE(a_writer_that_dies_holding_blocks_readers_only_until_its_keys_ttl, setups, s)
{
    redis_rig rig(s, 1);
    asio::io_context dead_ctx;
    redlock::client dead_client(dead_ctx.get_executor(), configs(rig.nodes));
    lease dead_write;  // never released: its context stops first
    run_coro(dead_ctx, [&]() -> asio::awaitable<void> {
        co_await dead_client.async_connect(asio::use_awaitable);
        auto [ec, read] = co_await shared_mutex(dead_client, key, options()).async_lock_shared(use_tuple);
        BOOST_REQUIRE(!ec);
        auto o = options(1000ms);
        o.waiter_ttl = 20'000ms;
        std::optional<error_code> granted;
        shared_mutex(dead_client, key, o).async_lock([&](error_code e, lease l) {
            granted = e;
            dead_write = std::move(l);
        });
        co_await sleep_for(200ms);  // refused by the reader: marked for 20 s
        co_await read.async_release(use_tuple);
        const auto released = steady::now();
        while (!granted && steady::now() - released < 5s) co_await sleep_for(5ms);
        BOOST_REQUIRE(granted.has_value());
        BOOST_REQUIRE(!*granted);
    });
    dead_ctx.stop();
    const auto died = steady::now();
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        shared_mutex m(rig.client(), key, options(5000ms, 30'000ms));
        auto [ec, reader] = co_await m.async_lock_shared(use_tuple);
        BOOST_TEST(!ec, ec.message());
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - died);
        BOOST_TEST_MESSAGE("a reader got in " << took.count() << " ms after a holding writer died (TTL 1 s)");
        BOOST_TEST(took.count() < 3000, "the dead holder's mark outlived its key");
        co_await reader.async_release(use_tuple);
    });
}

// A downgrade lets no writer in between: a writer that waits while the write lease is held is still waiting once
// it is a read lease, and gets in only when that is released. New readers wait behind that writer too.
BOOST_DATA_TEST_CASE(a_downgrade_lets_no_writer_in_between, setups, s)
{
    redis_rig rig(s, 2);
    rig.run([&]() -> asio::awaitable<void> {
        for (auto& c : rig.clients) co_await c->async_connect(asio::use_awaitable);
        shared_mutex m(rig.client(0), key, options()), other(rig.client(1), key, options());
        auto [ec, write] = co_await m.async_lock(use_tuple);
        BOOST_REQUIRE(!ec);
        std::optional<error_code> waiting_ec;
        lease waiting;
        other.async_lock([&](error_code e, lease l) {
            waiting_ec = e;
            waiting = std::move(l);
        });
        co_await sleep_for(300ms);
        redlock::diagnostics diag;
        auto [down, read] = co_await m.async_downgrade(std::move(write), diag, use_tuple);
        BOOST_REQUIRE_MESSAGE(!down, down.message() << ": " << diag.message());
        BOOST_TEST(!write);
        BOOST_TEST(read.fencing_token() == 0u);
        co_await sleep_for(300ms);
        BOOST_TEST(!waiting_ec.has_value(), "a writer got in beside the downgraded reader");
        auto [blocked, none] = co_await other.async_try_lock_shared(use_tuple);
        BOOST_TEST(blocked == error::not_acquired);
        co_await read.async_release(use_tuple);
        const auto released = steady::now();
        while (!waiting_ec && steady::now() - released < 10s) co_await sleep_for(5ms);
        BOOST_REQUIRE(waiting_ec.has_value());
        BOOST_TEST(!*waiting_ec, waiting_ec->message());
        co_await waiting.async_release(use_tuple);
    });
}

// An upgrade succeeds only for the only reader, tried once: beside another reader it fails and the read lease comes
// back, held; alone it is the write side, which excludes readers and writers, with a fencing token.
BOOST_DATA_TEST_CASE(an_upgrade_succeeds_only_for_the_only_reader, setups, s)
{
    redis_rig rig(s, 1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        auto o = options();
        o.fencing = true;
        shared_mutex m(rig.client(), key, o);
        auto [e1, first] = co_await m.async_lock_shared(use_tuple);
        auto [e2, second] = co_await m.async_lock_shared(use_tuple);
        BOOST_REQUIRE(!e1 && !e2);
        const auto token = first.token();
        auto [refused, back] = co_await m.async_try_upgrade(std::move(first), use_tuple);
        BOOST_TEST(refused == error::not_acquired);
        BOOST_REQUIRE(back);
        BOOST_TEST(back.token() == token);
        // The refused upgrade gave its write key back and kept the reader's entry (on a quorum: the grant may not
        // have reached every node yet), and once `second` is gone `back`'s entry alone still refuses a writer.
        std::size_t entries = 0;
        for (std::size_t i = 0; i + static_cast<std::size_t>(s.down) < rig.nodes.size(); ++i) {
            BOOST_TEST(rig.nodes[i].cli({"GET", key}) != token, "node " << i << " kept the upgrade's write key");
            if (!rig.nodes[i].cli({"ZSCORE", redlock::aux_name(key, "readers"), token}).empty()) ++entries;
        }
        BOOST_TEST(entries >= rig.nodes.size() / 2 + 1);
        co_await second.async_release(use_tuple);
        auto [writer_refused, none] = co_await m.async_try_lock(use_tuple);
        BOOST_TEST(writer_refused == error::not_acquired, "the refused upgrade took the reader's entry away");
        auto [up, write] = co_await m.async_try_upgrade(std::move(back), use_tuple);
        BOOST_REQUIRE_MESSAGE(!up, up.message());
        BOOST_TEST(write.token() == token);
        BOOST_TEST(write.fencing_token() > 0u);
        auto [r, none2] = co_await m.async_try_lock_shared(use_tuple);
        BOOST_TEST(r == error::not_acquired);
        auto [w, none3] = co_await m.async_try_lock(use_tuple);
        BOOST_TEST(w == error::not_acquired);
        co_await write.async_release(use_tuple);
        auto [again, last] = co_await m.async_try_lock(use_tuple);
        BOOST_TEST(!again);
        BOOST_TEST(last.fencing_token() > write.fencing_token());
        co_await last.async_release(use_tuple);
    });
    BOOST_TEST(keys_left(rig.nodes, s).empty(), keys_left(rig.nodes, s));
}

// The write side's key is the plain lock's: a plain mutex of the same name is a writer. It is refused while readers
// hold (the marker), and readers and writers are refused while it holds.
BOOST_DATA_TEST_CASE(a_plain_lock_of_the_same_name_is_a_writer, setups, s)
{
    redis_rig rig(s, 1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        shared_mutex rw(rig.client(), key, options());
        redlock::mutex plain(rig.client(), key, options());
        auto [e1, reader] = co_await rw.async_lock_shared(use_tuple);
        BOOST_REQUIRE(!e1);
        auto [p1, none1] = co_await plain.async_try_lock(use_tuple);
        BOOST_TEST(p1 == error::not_acquired, "a plain lock beside a reader");
        co_await reader.async_release(use_tuple);
        auto [p2, held] = co_await plain.async_try_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!p2, p2.message());
        auto [r, none2] = co_await rw.async_try_lock_shared(use_tuple);
        BOOST_TEST(r == error::not_acquired, "a reader beside a plain lock");
        auto [w, none3] = co_await rw.async_try_lock(use_tuple);
        BOOST_TEST(w == error::not_acquired, "a writer beside a plain lock");
        co_await held.async_release(use_tuple);
    });
}

// Readers kept by the watchdog hold past several TTLs: the watchdog extends each one's own entry (in its batches),
// and a writer stays out meanwhile.
BOOST_DATA_TEST_CASE(the_watchdog_keeps_each_readers_own_lease, setups, s)
{
    redis_rig rig(s, 1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        auto o = options(600ms);
        o.watchdog = true;
        shared_mutex m(rig.client(), key, o);
        std::vector<lease> readers;
        for (int i = 0; i < 5; ++i) {
            auto [ec, held] = co_await m.async_lock_shared(use_tuple);
            BOOST_REQUIRE(!ec);
            readers.push_back(std::move(held));
        }
        co_await sleep_for(2000ms);
        for (const auto& r : readers) BOOST_TEST(!r.lost());
        auto [w, none] = co_await m.async_try_lock(use_tuple);
        BOOST_TEST(w == error::not_acquired);
        for (auto& r : readers) {
            auto [ec] = co_await r.async_release(use_tuple);
            BOOST_TEST(!ec, ec.message());
        }
    });
    BOOST_TEST(keys_left(rig.nodes, s).empty(), keys_left(rig.nodes, s));
}
