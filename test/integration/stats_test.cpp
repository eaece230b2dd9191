// client::stats() counts what the client did (acquires, failures by reason, latency, handoffs, wake-ups,
// extensions, releases, losses, per-node errors), to_prometheus renders it in the text format a real parser
// (Debian's python3-prometheus-client) accepts with the same values, and the log handler hears a lease lost.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <common/lock_checks.hpp>
#include <common/redis_node.hpp>
#include <common/run_coro.hpp>
#include <common/subprocess.hpp>
#include <fstream>
#include <map>
#include <sstream>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::run_coro;
using redlock::test::sleep_for;
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

}  // namespace

BOOST_AUTO_TEST_CASE(stats_count_what_the_client_did_and_render_for_prometheus)
{
    cluster nodes(3);
    nodes[2].kill();  // its answers are errors: counted per node
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), configs(nodes));
    redlock::client other(ctx.get_executor(), configs(nodes));
    std::vector<std::string> warnings;
    c.set_log_handler([&](redlock::log_level level, std::string_view message) {
        if (level == redlock::log_level::warning) warnings.emplace_back(message);
    });
    run_coro(ctx, [&]() -> asio::awaitable<void> {
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
}
