// Lease loss known at once, by client tracking, on real nodes: a lease whose keys are deleted, flushed, evicted or
// lost with a restart on a quorum of nodes is declared lost within a round trip or two, long before its next
// extension (every lease here has ttl 30 s: its first extension is 10 s away, and each bound is well below that);
// one node of three losing them is repaired at once and the lease holds. The same signal wakes a waiter whose holder's
// keys vanished without a release message. Without tracking (track_keys=false, or an ACL user refused CLIENT
// TRACKING) the loss waits for the extension: the negative controls.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_rig.hpp>
#include <memory>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::error;
using redlock::test::nodes_holding;
using redlock::test::redis_rig;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

const redlock::lock_options held_long{.ttl = 30'000ms, .node_timeout = 500ms, .watchdog = true};

// Far below the first extension (ttl / 3 = 10 s): a loss seen within this was not the watchdog's.
constexpr auto at_once = 3000ms;

long ms_since(steady::time_point t)
{
    return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count());
}

// How a quorum of nodes loses a key, done through redis-cli (another client, as an operator or the server would).
enum class loss { del, flushall, restart };
std::ostream& operator<<(std::ostream& os, loss l)
{
    return os << (l == loss::del ? "DEL" : l == loss::flushall ? "FLUSHALL" : "restart");
}

void lose(redlock::test::redis_node& node, loss how, const std::string& key)
{
    switch (how) {
        case loss::del:
            node.cli({"DEL", key});
            break;
        case loss::flushall:
            node.cli({"FLUSHALL"});
            break;
        case loss::restart:
            node.restart();  // no persistence: it comes back empty
            break;
    }
}

// How many keys the node tracks for its clients (INFO stats: tracking_total_keys).
long tracked_keys(const redlock::test::redis_node& node)
{
    const auto info = node.cli({"INFO", "stats"});
    const auto at = info.find("tracking_total_keys:");
    return at == std::string::npos ? -1 : std::stol(info.substr(at + 20));
}

// What the client logged at warning or above.
struct warnings {
    std::shared_ptr<std::vector<std::string>> lines = std::make_shared<std::vector<std::string>>();
    void attach(redlock::client& c) const
    {
        c.set_log_handler([w = lines](redlock::log_level level, std::string_view message) {
            if (level >= redlock::log_level::warning) w->emplace_back(message);
        });
    }
    bool mention(std::string_view text) const
    {
        for (const auto& l : *lines)
            if (l.find(text) != std::string::npos) return true;
        return false;
    }
};

}  // namespace

BOOST_DATA_TEST_CASE(keys_lost_on_a_quorum_lose_the_lease_at_once,
                     data::make({loss::del, loss::flushall, loss::restart}) * data::make({1, 3}), how, n)
{
    redis_rig rig(static_cast<std::size_t>(n));
    redlock::mutex m(rig.client(), "tracked", held_long);
    rig.run([&]() -> asio::awaitable<void> {
        auto l = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(co_await redlock::test::soon_holding(rig.nodes, "tracked", l.token(), rig.nodes.size()));
        const auto quorum = rig.client().quorum();
        const auto start = steady::now();
        for (std::size_t i = 0; i < quorum; ++i) lose(rig.nodes[i], how, "tracked");
        redlock::diagnostics diag;
        auto [ec] = co_await l.async_wait_lost(diag, use_tuple);
        const auto took = ms_since(start);
        BOOST_TEST(ec == error::lost);
        BOOST_TEST_MESSAGE(how << " on " << quorum << " of " << n << ": lost after " << took << " ms");
        BOOST_TEST(took < at_once.count(), "lost " << took << " ms after the keys went");
        BOOST_TEST(diag.client_message().find("missing") != std::string::npos, diag.client_message());
        BOOST_TEST(l.lost());
    });
}

// One node of three losing the key leaves a quorum: the lease holds, and the next extension repairs it there.
BOOST_AUTO_TEST_CASE(a_key_deleted_on_one_node_of_three_leaves_the_lease_held_and_repaired)
{
    redis_rig rig(3);
    redlock::mutex m(rig.client(), "mended", {.ttl = 6000ms, .node_timeout = 500ms, .watchdog = true});
    rig.run([&]() -> asio::awaitable<void> {
        auto l = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(co_await redlock::test::soon_holding(rig.nodes, "mended", l.token(), 3));
        rig.nodes[0].cli({"DEL", "mended"});
        co_await sleep_for(300ms);
        BOOST_TEST(!l.lost());
        BOOST_TEST(nodes_holding(rig.nodes, "mended", l.token()) == 2u);
        // Then one node more: no quorum is left, and that is known at once.
        const auto start = steady::now();
        rig.nodes[1].cli({"DEL", "mended"});
        auto [ec] = co_await l.async_wait_lost(use_tuple);
        BOOST_TEST(ec == error::lost);
        BOOST_TEST(ms_since(start) < 700, "lost " << ms_since(start) << " ms after the second DEL");  // extension: ~2 s
    });
    redlock::mutex again(rig.client(), "mended:again", {.ttl = 6000ms, .node_timeout = 500ms, .watchdog = true});
    rig.run([&]() -> asio::awaitable<void> {
        auto l = co_await again.async_lock(asio::use_awaitable);
        rig.nodes[0].cli({"DEL", "mended:again"});
        // Repaired by the watchdog's extension, 2 s after the grant.
        BOOST_TEST(co_await redlock::test::soon_holding(rig.nodes, "mended:again", l.token(), 3));
        BOOST_TEST(!l.lost());
        co_await l.async_release(asio::use_awaitable);
    });
}

// The server forgets a key its own client writes (NOLOOP): each script that writes the lease's key reads it last, so
// that it stays tracked through the grant, a single extension and the watchdog's batched ones.
BOOST_AUTO_TEST_CASE(the_key_stays_tracked_through_grants_and_extensions)
{
    redis_rig rig(3);
    auto options = held_long;
    options.extend_interval = 100ms;
    redlock::mutex plain(rig.client(), "watched", options);
    auto by_script = options;
    by_script.fencing = true;  // acquired by a script, which reads the fence too
    redlock::mutex fenced(rig.client(), "watched:fenced", by_script);
    rig.run([&]() -> asio::awaitable<void> {
        auto all_track = [&](long keys) {
            for (std::size_t i = 0; i < rig.nodes.size(); ++i)
                if (tracked_keys(rig.nodes[i]) != keys) return false;
            return true;
        };
        auto l = co_await plain.async_lock(asio::use_awaitable);
        BOOST_TEST(all_track(1));  // the key, read by the PTTL after SET NX GET
        co_await l.async_extend(asio::use_awaitable);
        BOOST_TEST(all_track(1));
        co_await sleep_for(350ms);  // a few batched extensions by the watchdog
        BOOST_TEST(all_track(1));
        co_await l.async_release(asio::use_awaitable);
        auto f = co_await fenced.async_lock(asio::use_awaitable);
        co_await sleep_for(250ms);
        BOOST_TEST(all_track(1));  // its key; the fence counter, written last by the commit, is not
        for (std::size_t i = 0; i < 2; ++i) rig.nodes[i].cli({"DEL", "watched:fenced"});
        auto [ec] = co_await f.async_wait_lost(use_tuple);
        BOOST_TEST(ec == error::lost);
    });
}

// An eviction under maxmemory with allkeys-lru on a quorum: the server's own deletion is reported too.
BOOST_AUTO_TEST_CASE(keys_evicted_on_a_quorum_lose_the_lease_at_once)
{
    redis_rig rig(3);
    redlock::mutex m(rig.client(), "evicted", held_long);
    rig.run([&]() -> asio::awaitable<void> {
        auto l = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(co_await redlock::test::soon_holding(rig.nodes, "evicted", l.token(), 3));
        const auto start = steady::now();
        for (std::size_t i = 0; i < 2; ++i) {
            auto& node = rig.nodes[i];
            node.cli({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
            node.cli({"CONFIG", "SET", "maxmemory", "1"});  // below what it uses: each write evicts
            // A write makes the server evict until it fits: with 1 byte, every key goes, ours among them.
            for (int k = 0; k < 50 && node.cli({"EXISTS", "evicted"}) == "1"; ++k)
                node.cli({"SET", "filler:" + std::to_string(k), std::string(1000, 'x')});
            BOOST_TEST(node.cli({"EXISTS", "evicted"}) == "0");
        }
        auto [ec] = co_await l.async_wait_lost(use_tuple);
        const auto took = ms_since(start);
        BOOST_TEST(ec == error::lost);
        BOOST_TEST_MESSAGE("evicted: lost " << took << " ms after the evictions began");
        BOOST_TEST(took < at_once.count(), "lost " << took << " ms after the evictions began");
        for (std::size_t i = 0; i < 2; ++i) rig.nodes[i].cli({"CONFIG", "SET", "maxmemory", "0"});
    });
}

// The clock jump of the Redlock debate: two nodes of three run their clocks 10x fast, so a 2 s key expires there
// after ~200 ms. Without tracking the holder believes in its lease until its local validity (~2 s) ends; with it,
// the expiries are pushed and the lease is lost as soon as the second node expires it (fencing still guards the
// round trip in between: fencing_fault_test).
BOOST_AUTO_TEST_CASE(keys_expired_early_by_fast_node_clocks_lose_the_lease_before_its_validity_ends)
{
    redlock::test::node_options skewable;
    skewable.clock_shim = true;
    redis_rig rig(3, 1, skewable);
    rig.nodes[0].set_clock(0, 10.0);
    rig.nodes[1].set_clock(0, 10.0);
    redlock::mutex m(rig.client(), "skewed", {.ttl = 2000ms, .node_timeout = 500ms});
    rig.run([&]() -> asio::awaitable<void> {
        auto l = co_await m.async_lock(asio::use_awaitable);
        const auto granted = steady::now();
        auto [ec] = co_await l.async_wait_lost(use_tuple);
        const auto took = ms_since(granted);
        BOOST_TEST(ec == error::lost);
        BOOST_TEST_MESSAGE("lost " << took << " ms after the grant; its validity was " << 2000 - 2000 / 100 - 2
                                   << " ms");
        BOOST_TEST(took < 1200, "lost " << took << " ms after the grant: not before its validity ended");
    });
}

// The negative control: the same deletion without tracking is found only at the next extension.
BOOST_AUTO_TEST_CASE(without_tracking_the_loss_waits_for_the_next_extension)
{
    redis_rig rig(3, 0);
    auto configs = redlock::test::configs(rig.nodes);
    for (auto& c : configs) c.track_keys = false;
    redlock::client client(rig.ctx.get_executor(), configs);
    redlock::mutex m(client, "untracked", {.ttl = 3000ms, .node_timeout = 500ms, .watchdog = true});
    rig.run([&]() -> asio::awaitable<void> {
        auto l = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(co_await redlock::test::soon_holding(rig.nodes, "untracked", l.token(), 3));
        const auto start = steady::now();
        for (std::size_t i = 0; i < 2; ++i) rig.nodes[i].cli({"DEL", "untracked"});
        co_await sleep_for(400ms);
        BOOST_TEST(!l.lost());  // unheard of: the extension is ~1 s after the grant
        auto [ec] = co_await l.async_wait_lost(use_tuple);
        BOOST_TEST(ec == error::lost);
        BOOST_TEST(ms_since(start) < 2500);  // found by the first extension
    });
}

// Each kind of lease whose keys are its own is watched: the fair lock, the reentrant lock, a read-write lock's writer.
BOOST_DATA_TEST_CASE(every_lease_with_keys_of_its_own_is_watched, data::make({"fair", "reentrant", "writer"}), kind)
{
    redis_rig rig(3);
    rig.run([&]() -> asio::awaitable<void> {
        const std::string key = std::string("kind:") + kind;
        auto options = held_long;
        options.fair = std::string(kind) == "fair";
        redlock::lease l;
        if (std::string(kind) == "writer") {
            redlock::shared_mutex rw(rig.client(), key, options);
            l = co_await rw.async_lock(asio::use_awaitable);
        } else if (std::string(kind) == "reentrant") {
            redlock::mutex m(rig.client(), key, options);
            l = co_await m.owned_by("worker-1").async_lock(asio::use_awaitable);
        } else {
            redlock::mutex m(rig.client(), key, options);
            l = co_await m.async_lock(asio::use_awaitable);
        }
        const std::string value = std::string(kind) == "reentrant" ? "worker-1" : l.token();
        BOOST_TEST(co_await redlock::test::soon_holding(rig.nodes, key, value, 3));
        const auto start = steady::now();
        for (std::size_t i = 0; i < 2; ++i) rig.nodes[i].cli({"DEL", key});
        auto [ec] = co_await l.async_wait_lost(use_tuple);
        BOOST_TEST(ec == error::lost);
        BOOST_TEST(ms_since(start) < at_once.count(), "lost " << ms_since(start) << " ms after the keys went");
    });
}

// A holder (another client: another connection, as another process) whose keys vanish without a release message:
// its waiter hears it from the nodes at once instead of sleeping until the holder's TTL.
BOOST_AUTO_TEST_CASE(a_waiter_follows_a_holder_whose_keys_vanished)
{
    redis_rig rig(3, 2);
    redlock::mutex holder(rig.client(0), "vanishing", {.ttl = 30'000ms, .node_timeout = 500ms});
    redlock::mutex waiter(rig.client(1), "vanishing", {.ttl = 5000ms, .wait = 20'000ms, .node_timeout = 500ms});
    rig.run([&]() -> asio::awaitable<void> {
        auto held = co_await holder.async_lock(asio::use_awaitable);
        bool granted = false;
        steady::time_point deleted{};
        asio::co_spawn(
            co_await asio::this_coro::executor,
            [&]() -> asio::awaitable<void> {
                auto l = co_await waiter.async_lock(asio::use_awaitable);
                granted = true;
                BOOST_TEST(ms_since(deleted) < at_once.count(), "granted " << ms_since(deleted) << " ms after");
                co_await l.async_release(asio::use_awaitable);
            },
            asio::detached);
        co_await sleep_for(500ms);  // the waiter was refused and sleeps (the holder's TTL is 30 s)
        BOOST_TEST(!granted);
        deleted = steady::now();
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) rig.nodes[i].cli({"DEL", "vanishing"});
        while (!granted && steady::now() - deleted < 2 * at_once) co_await sleep_for(20ms);
        BOOST_TEST(granted);
    });
}

// An ACL user without `client|tracking`: the connection stands untracked, the client says so once per node, and the
// lock works (its loss is then the extension's to find).
BOOST_AUTO_TEST_CASE(a_user_refused_client_tracking_is_logged_once_per_node_and_locks_work)
{
    redis_rig rig(3, 0);
    std::vector<redlock::node_config> configs;
    for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
        rig.nodes[i].cli({"ACL", "SETUSER", "untracked", "on", ">pw", "~*", "&*", "+@all", "-client"});
        auto c = redlock::test::fast_reconnecting(rig.nodes[i].url());
        c.username = "untracked";
        c.password = "pw";
        configs.push_back(c);
    }
    redlock::client client(rig.ctx.get_executor(), configs);
    warnings log;
    log.attach(client);
    redlock::mutex m(client, "acl", {.ttl = 3000ms, .node_timeout = 500ms, .watchdog = true});
    rig.run([&]() -> asio::awaitable<void> {
        auto l = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(co_await redlock::test::soon_holding(rig.nodes, "acl", l.token(), 3));
        std::size_t refusals = 0;
        for (const auto& line : *log.lines)
            if (line.find("refused client tracking") != std::string::npos) ++refusals;
        BOOST_TEST(refusals == 3u);
        BOOST_TEST(log.mention("NOPERM"));
        for (std::size_t i = 0; i < 2; ++i) rig.nodes[i].cli({"DEL", "acl"});
        co_await sleep_for(300ms);
        BOOST_TEST(!l.lost());  // nobody told it
        auto [ec] = co_await l.async_wait_lost(use_tuple);
        BOOST_TEST(ec == error::lost);  // the extension did
    });
}
