// client::stats() counts what the client did (acquires, failures by reason, latency, handoffs, wake-ups by
// message and by timer, extensions, releases, losses, per-node errors, subscriptions restored after a node
// restart), to_prometheus renders it in the text format a real parser
// (Debian's python3-prometheus-client) accepts with the same values, and the log handler hears a lease lost.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <common/processes/subprocess.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_rig.hpp>
#include <fstream>
#include <map>
#include <sstream>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::test::redis_rig;
using redlock::test::sleep_for;
using redlock::test::soon_holding;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// Parses `text` with prometheus_client and returns "name{labels} value" per sample, one per line, sorted.
std::map<std::string, double> parsed_by_prometheus_client(const std::string& text)
{
    const auto dir = redlock::test::make_temp_dir("stats-");
    std::ofstream(dir + "/metrics.txt") << text;
    const std::string program = R"py(
import sys
from prometheus_client.parser import text_string_to_metric_families
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in family.samples:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
        print(f"{s.name}{{{labels}}} {s.value!r}")
)py";
    // Debian's interpreter: the package installs there, not into a python3 that may come first on PATH.
    auto r = redlock::test::run_command({"/usr/bin/python3", "-c", program, dir + "/metrics.txt"}, 10s);
    BOOST_TEST_REQUIRE(r.exit_code == 0, "prometheus_client rejected the text: " << r.err << "\n" << text);
    std::map<std::string, double> samples;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        const auto space = line.rfind(' ');
        samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
    return samples;
}

// One sample of `text` as prometheus_client reads it; fails the test when it is missing.
double sample(const std::string& text, const std::string& key)
{
    const auto samples = parsed_by_prometheus_client(text);
    auto it = samples.find(key);
    BOOST_TEST_REQUIRE((it != samples.end()), "no sample " << key << " in\n" << text);
    return it->second;
}

}  // namespace

BOOST_AUTO_TEST_CASE(stats_count_what_the_client_did_and_render_for_prometheus)
{
    redis_rig rig(3, 2);
    auto& c = rig.client(0);
    auto& other = rig.client(1);
    rig.nodes[2].kill();  // its answers are errors: counted per node
    std::vector<std::string> warnings;
    c.set_log_handler([&](redlock::log_level level, std::string_view message) {
        if (level == redlock::log_level::warning) warnings.emplace_back(message);
    });
    rig.run([&]() -> asio::awaitable<void> {
        co_await c.async_connect(asio::use_awaitable);
        co_await other.async_connect(asio::use_awaitable);
        redlock::mutex m(c, "stats", {.ttl = 5000ms, .wait = 5000ms, .node_timeout = 100ms});
        // 1: granted at once, extended, released.
        auto [e1, l1] = co_await m.async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e1, e1.message());
        auto [x1] = co_await l1.async_extend(use_tuple);
        BOOST_TEST(!x1);
        // 2: refused at once (try) while held.
        auto [e2, l2] = co_await m.async_try_lock(use_tuple);
        BOOST_TEST(e2 == error::not_acquired);
        co_await l1.async_release(asio::use_awaitable);
        // 3: a waiter of this client takes over when `other` releases: a handoff, woken by a message.
        auto [e3, theirs] = co_await redlock::mutex(other, "stats").async_lock(use_tuple);
        BOOST_REQUIRE(!e3);
        std::optional<error_code> waited;
        redlock::lease mine;
        m.async_lock([&](error_code e, redlock::lease l) {
            waited = e;
            mine = std::move(l);
        });
        co_await sleep_for(300ms);
        co_await theirs.async_release(asio::use_awaitable);
        while (!waited) co_await sleep_for(2ms);
        BOOST_TEST(!*waited);
        co_await mine.async_release(asio::use_awaitable);
        // 4: invalid arguments; 5: a lease lost (its keys taken away on the quorum).
        auto [e4, l4] = co_await redlock::mutex(c, "").async_lock(use_tuple);
        BOOST_TEST(e4 == error::invalid_argument);
        auto [e5, l5] =
            co_await redlock::mutex(c, "doomed", {.ttl = 300ms, .node_timeout = 50ms}).async_lock(use_tuple);
        BOOST_REQUIRE(!e5);
        co_await sleep_for(500ms);
        BOOST_TEST(l5.lost());
    });

    const auto s = c.stats();
    BOOST_TEST(s.acquires == 3u);
    BOOST_TEST(s.failures.not_acquired == 1u);
    BOOST_TEST(s.failures.invalid_argument == 1u);
    BOOST_TEST(s.acquire_latency.count() == 3u);
    BOOST_TEST(s.acquire_latency.counts.front() <= s.acquire_latency.counts.back());
    BOOST_TEST(s.acquire_latency.sum_seconds > 0.2);  // the waiter waited ~300 ms
    BOOST_TEST(s.handoffs == 1u);
    BOOST_TEST(s.wakeups_by_message >= 1u);
    BOOST_TEST(s.extensions == 1u);
    BOOST_TEST(s.releases == 2u);
    BOOST_TEST(s.losses == 1u);
    BOOST_REQUIRE(s.nodes.size() == 3u);
    BOOST_TEST(s.nodes[2].errors > 0u);
    BOOST_TEST(s.nodes[0].errors == 0u);
    BOOST_TEST(s.nodes[0].connection.connects >= 1u);
    BOOST_REQUIRE(warnings.size() == 1u);
    BOOST_TEST(warnings[0].find("lost") != std::string::npos, warnings[0]);

    const auto text = redlock::to_prometheus(s, "redlock", R"(service="orders")");
    const auto samples = parsed_by_prometheus_client(text);
    auto value = [&](const std::string& key) {
        auto it = samples.find(key);
        BOOST_TEST_REQUIRE((it != samples.end()), "no sample " << key << " in\n" << text);
        return it->second;
    };
    BOOST_TEST(value(R"(redlock_acquires_total{service="orders"})") == 3.0);
    BOOST_TEST(value(R"(redlock_acquire_failures_total{reason="not_acquired",service="orders"})") == 1.0);
    BOOST_TEST(value(R"(redlock_acquire_duration_seconds_count{service="orders"})") == 3.0);
    BOOST_TEST(value(R"(redlock_acquire_duration_seconds_bucket{le="+Inf",service="orders"})") == 3.0);
    BOOST_TEST(value(R"(redlock_acquire_duration_seconds_sum{service="orders"})") > 0.2);
    BOOST_TEST(value(R"(redlock_handoffs_total{service="orders"})") == 1.0);
    BOOST_TEST(value(R"(redlock_leases_lost_total{service="orders"})") == 1.0);
    BOOST_TEST(value(R"(redlock_extensions_total{result="ok",service="orders"})") == 1.0);
    BOOST_TEST(value("redlock_node_errors_total{node=\"" + s.nodes[2].node + "\",service=\"orders\"}") ==
               static_cast<double>(s.nodes[2].errors));
    // Each node's server as its HELLO said (the fixture's redis-server or valkey-server); the killed node never
    // connected: unknown.
    const auto server = redlock::test::server_of_info(rig.nodes[0].cli({"INFO", "server"}));
    BOOST_TEST((s.nodes[0].server == server), redlock::to_string(s.nodes[0].server));
    BOOST_TEST(!s.nodes[2].server.known());
    BOOST_TEST(value("redlock_node_server_info{node=\"" + s.nodes[0].node + "\",server=\"" +
                     std::string(redlock::to_string(server.kind)) + "\",service=\"orders\",version=\"" +
                     redlock::version_text(server.version) + "\"}") == 1.0);
    BOOST_TEST(value("redlock_node_server_info{node=\"" + s.nodes[2].node +
                     "\",server=\"unknown\",service=\"orders\",version=\"\"}") == 1.0);
    const auto plain = redlock::to_text(s);
    BOOST_TEST(plain.find("acquires 3  failures 2 (not_acquired 1, invalid_argument 1)") == 0u, plain);
    BOOST_TEST(plain.find("node " + s.nodes[0].node + "  server " + redlock::to_string(server) + "  errors 0") !=
                   std::string::npos,
               plain);
    BOOST_TEST(plain.find("node " + s.nodes[2].node + "  server unknown  errors ") != std::string::npos, plain);
}

// A holder that never releases (its process gone): no release message comes, and the waiter wakes when the
// holder's key expires. That wake-up is the timer's, not a message's. (With client tracking the nodes' news of the
// expiry races the timer, and counts as a message: lease_tracking_test. The waiter here does not track.)
BOOST_AUTO_TEST_CASE(a_waiter_woken_by_the_holders_ttl_counts_a_timer_wakeup)
{
    redis_rig rig(3, 1);
    auto untracked = redlock::test::configs(rig.nodes);
    for (auto& c : untracked) c.track_keys = false;
    auto& holder = rig.client(0);
    redlock::client waiter(rig.ctx.get_executor(), untracked);
    rig.run([&]() -> asio::awaitable<void> {
        co_await holder.async_connect(asio::use_awaitable);
        co_await waiter.async_connect(asio::use_awaitable);
        // No watchdog, never released: its keys lapse after 600 ms.
        auto [e1, abandoned] = co_await redlock::mutex(holder, "expiring", {.ttl = 600ms}).async_lock(use_tuple);
        BOOST_REQUIRE(!e1);
        const auto start = std::chrono::steady_clock::now();
        auto [e2, mine] =
            co_await redlock::mutex(waiter, "expiring", {.ttl = 5000ms, .wait = 5000ms}).async_lock(use_tuple);
        BOOST_REQUIRE_MESSAGE(!e2, e2.message());
        BOOST_TEST((std::chrono::steady_clock::now() - start >= 450ms));  // it waited out the holder's TTL
        co_await mine.async_release(asio::use_awaitable);
    });
    const auto s = waiter.stats();
    BOOST_TEST(s.acquires == 1u);
    BOOST_TEST(s.wakeups_by_timer >= 1u);  // once, or again if it woke a moment before a node dropped the key
    BOOST_TEST(s.wakeups_by_message == 0u);
    BOOST_TEST(s.handoffs == 0u);
    const auto text = redlock::to_prometheus(s);
    BOOST_TEST(sample(text, R"(redlock_wakeups_total{cause="timer"})") == static_cast<double>(s.wakeups_by_timer));
    BOOST_TEST(sample(text, R"(redlock_wakeups_total{cause="message"})") == 0.0);
    holder.close();
    waiter.close();
}

// A waiter's release-channel subscription on a node that restarts is made again on the new connection, counted
// per client and per node; the release that follows still wakes the waiter by message.
BOOST_AUTO_TEST_CASE(a_node_restarted_under_a_subscribed_waiter_counts_a_restored_subscription)
{
    redis_rig rig(3, 2);
    auto& holder = rig.client(0);
    auto& waiter = rig.client(1);
    rig.run([&]() -> asio::awaitable<void> {
        co_await holder.async_connect(asio::use_awaitable);
        co_await waiter.async_connect(asio::use_awaitable);
        // A generous node_timeout, then every node holding the key: the lock completes at the quorum, and under load
        // the third node's 50 ms deadline may pass first; then the restart below takes a quorum's second node.
        auto [e1, held] =
            co_await redlock::mutex(holder, "restored", {.ttl = 10s, .node_timeout = 2s}).async_lock(use_tuple);
        BOOST_REQUIRE(!e1);
        BOOST_REQUIRE(co_await soon_holding(rig.nodes, "restored", held.token(), 3));
        std::optional<error_code> waited;
        redlock::lease mine;
        redlock::mutex(waiter, "restored", {.ttl = 5000ms, .wait = 10s})
            .async_lock([&](error_code e, redlock::lease l) {
                waited = e;
                mine = std::move(l);
            });
        const bool subscribed =
            co_await all_listening(rig.nodes, "restored", "1", 10s);  // refused, subscribed everywhere
        BOOST_REQUIRE_MESSAGE(subscribed, "the waiter did not subscribe on every node");
        BOOST_TEST(waiter.stats().subscriptions_restored == 0u);
        rig.nodes[0].restart();  // the holder's key there is gone; nodes 1 and 2 still refuse the waiter
        for (int i = 0; i < 300 && waiter.stats().subscriptions_restored == 0; ++i) co_await sleep_for(10ms);
        BOOST_TEST(!waited.has_value());
        co_await held.async_release(asio::use_awaitable);
        for (int i = 0; i < 300 && !waited; ++i) co_await sleep_for(10ms);
        BOOST_TEST_REQUIRE(waited.has_value());
        BOOST_TEST(!*waited);
        co_await mine.async_release(asio::use_awaitable);
    });
    const auto s = waiter.stats();
    BOOST_TEST(s.subscriptions_restored == 1u);
    BOOST_REQUIRE(s.nodes.size() == 3u);
    BOOST_TEST(s.nodes[0].connection.resubscribes == 1u);
    BOOST_TEST(s.nodes[1].connection.resubscribes == 0u);
    BOOST_TEST(s.wakeups_by_message >= 1u);  // the release after the restart reached it
    const auto text = redlock::to_prometheus(s, "redlock", R"(service="orders")");
    BOOST_TEST(sample(text, R"(redlock_subscriptions_restored_total{service="orders"})") == 1.0);
    holder.close();
    waiter.close();
}
