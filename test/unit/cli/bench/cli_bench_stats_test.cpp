// The two renderings of `redlock bench` (src/cli/bench/stats.cpp): the JSON keys and their order as
// documented in stats.hpp and doc/cli.md, the per-operation figures (CPU user / system, allocations), their
// nulls, and the table's lines; and the columns each scenario adds (src/cli/bench/<scenario>.cpp).
#include <boost/json/src.hpp>  // header-only Boost.JSON, to parse the output
#include <boost/test/unit_test.hpp>

#include <cli/bench/alloc_count.hpp>
#include <cli/bench/scenarios.hpp>
#include <cli/bench/server_calls.hpp>
#include <cli/bench/stats.hpp>
#include <string>
#include <vector>

// The scenarios link the bench driver, which reads the allocation counter of the `redlock` executable
// (src/cli/bench/alloc_count.cpp, which replaces operator new): here nothing is counted.
namespace redlock::cli {
bool counting_allocations() noexcept
{
    return false;
}
std::uint64_t allocation_count() noexcept
{
    return 0;
}
}  // namespace redlock::cli

using redlock::cli::bench_result;
using redlock::cli::percentile;
using redlock::cli::to_json;
using redlock::cli::to_table;

namespace {

bench_result sample_result()
{
    bench_result r;
    r.scenario = "uncontended";
    r.nodes = 5;
    r.clients = 1;
    r.workers = 64;
    r.ops = 1000;
    r.seconds = 2.0;
    r.user_seconds = 0.012;    // 12 us per op
    r.system_seconds = 0.003;  // 3 us per op
    r.allocations = 37'500;    // 37.5 per op
    for (std::int64_t v = 1; v <= 100; ++v) r.acquire_us.push_back(v);
    return r;
}

boost::json::object parse_object(const std::string& text)
{
    boost::json::error_code ec;
    auto doc = boost::json::parse(text, ec);
    BOOST_REQUIRE_MESSAGE(!ec, "not JSON: " << text);
    BOOST_REQUIRE(doc.is_object());
    return doc.as_object();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(bench_stats)

// The handoff scenario adds how the lock calls waited and what the nodes ran, before errors.
BOOST_AUTO_TEST_CASE(handoff_json_adds_waiting_and_server_calls)
{
    auto r = sample_result();
    r.scenario = "handoff";
    r.handoff_us = {300, 400, 500};
    redlock::cli::lock_waits waits;
    waits.lock_kind = "fair";
    waits.attempts = 12;
    waits.woken_by_release = 9;
    waits.server_calls = {{"evalsha", 24}, {"publish", 3}};
    r.columns = redlock::cli::lock_columns(true, 4, r.handoff_us, waits);
    const auto o = parse_object(to_json(r));
    std::vector<std::string> keys;
    for (const auto& kv : o) keys.emplace_back(kv.key());
    const std::vector<std::string> tail{
        "lock",          "handoffs",     "handoff_max_us", "attempts", "woken_by_release",
        "timed_retries", "server_calls", "errors"};
    BOOST_REQUIRE(keys.size() > tail.size());
    BOOST_TEST(std::vector<std::string>(keys.end() - static_cast<std::ptrdiff_t>(tail.size()), keys.end()) == tail,
               boost::test_tools::per_element());
    BOOST_TEST(o.at("handoffs").as_int64() == 3);
    BOOST_TEST(o.at("handoff_max_us").as_int64() == 500);
    BOOST_TEST(o.at("timed_retries").as_int64() == 0);
    BOOST_TEST(o.at("server_calls").as_object().at("evalsha").as_int64() == 24);
    const auto text = to_table(r);
    BOOST_TEST(text.find("handoffs     3 of 4 grants went to another worker") != std::string::npos, text);
    BOOST_TEST(text.find("waiting      3.00 attempts per grant; retries woken by a release 9, by a timer 0") !=
                   std::string::npos,
               text);
    BOOST_TEST(text.find("server/grant evalsha 6.00 publish 0.75 (calls over every node)") != std::string::npos, text);
    BOOST_TEST(text.find("\nhandoff ") != std::string::npos, text);
}

// The semaphore scenario: its keys after handoff_us, and two more latency rows.
BOOST_AUTO_TEST_CASE(semaphore_json_adds_the_permits_after_handoff)
{
    auto r = sample_result();
    r.scenario = "semaphore";
    redlock::cli::semaphore_totals t;
    t.limit = 4;
    t.max_held = 4;
    t.first_try = 2;
    t.waited = 1;
    t.first_try_us = {10, 20};
    t.waited_us = {300};
    t.attempts = 5;
    r.columns = redlock::cli::semaphore_columns(t);
    const auto o = parse_object(to_json(r));
    std::vector<std::string> keys;
    for (const auto& kv : o) keys.emplace_back(kv.key());
    const std::vector<std::string> tail{"handoff_us",    "limit",  "fair",      "max_held", "first_try",
                                        "first_try_us",  "waited", "waited_us", "attempts", "woken_by_release",
                                        "timed_retries", "errors"};
    BOOST_REQUIRE(keys.size() > tail.size());
    BOOST_TEST(std::vector<std::string>(keys.end() - static_cast<std::ptrdiff_t>(tail.size()), keys.end()) == tail,
               boost::test_tools::per_element());
    BOOST_TEST(o.at("waited_us").as_object().at("max").as_int64() == 300);
    const auto text = to_table(r);
    BOOST_TEST(text.find("operations   1000 (permit acquire + release)") != std::string::npos, text);
    BOOST_TEST(text.find("acquires     2 found room at once, 1 waited; 1.67 attempts per permit") != std::string::npos,
               text);
    BOOST_TEST(text.find("\n  at once ") != std::string::npos, text);
    BOOST_TEST(text.find("\n  waited ") != std::string::npos, text);
}

// The limiter scenario: ops are decisions; the limit and the outcomes come before errors.
BOOST_AUTO_TEST_CASE(limiter_json_adds_the_limit_and_the_outcomes)
{
    auto r = sample_result();
    r.scenario = "limiter";
    r.columns = redlock::cli::limiter_columns({"gcra", "1000/s", 100, 700, 300});
    const auto o = parse_object(to_json(r));
    std::vector<std::string> keys;
    for (const auto& kv : o) keys.emplace_back(kv.key());
    const std::vector<std::string> tail{"handoff_us", "strategy", "rate", "burst", "admitted", "limited", "errors"};
    BOOST_REQUIRE(keys.size() > tail.size());
    BOOST_TEST(std::vector<std::string>(keys.end() - static_cast<std::ptrdiff_t>(tail.size()), keys.end()) == tail,
               boost::test_tools::per_element());
    BOOST_TEST(o.at("ops_per_sec").as_double() == 500.0);  // decisions per second
    BOOST_TEST(o.at("rate").as_string() == "1000/s");
    BOOST_TEST(o.at("admitted").as_int64() == 700);
    BOOST_TEST(o.at("limited").as_int64() == 300);
    const auto text = to_table(r);
    BOOST_TEST(text.find("decisions/s  500.0") != std::string::npos, text);
    BOOST_TEST(text.find("limiter      gcra 1000/s, burst 100 per worker's key: 700 admitted, 300 limited") !=
                   std::string::npos,
               text);
    BOOST_TEST(text.find("decision ") != std::string::npos, text);
}

// INFO commandstats, as Redis 7 writes it (subcommands as "config|resetstat"): calls per command, summed over
// nodes, without the benchmark's own bookkeeping.
BOOST_AUTO_TEST_CASE(command_stats_are_summed_over_nodes_without_bookkeeping)
{
    const std::string node_a =
        "# Commandstats\r\ncmdstat_evalsha:calls=10,usec=50,usec_per_call=5.00\r\n"
        "cmdstat_config|resetstat:calls=1,usec=3,usec_per_call=3.00\r\n"
        "cmdstat_publish:calls=2,usec=4,usec_per_call=2.00\r\n";
    const std::string node_b =
        "# Commandstats\r\ncmdstat_evalsha:calls=7,usec=30,usec_per_call=4.00\r\n"
        "cmdstat_info:calls=1,usec=9,usec_per_call=9.00\r\n";
    redlock::cli::command_calls calls;
    redlock::cli::add_command_stats(node_a, calls);
    redlock::cli::add_command_stats(node_b, calls);
    const redlock::cli::command_calls expected{{"evalsha", 17}, {"publish", 2}};
    BOOST_TEST((calls == expected));
}

BOOST_AUTO_TEST_CASE(json_has_the_documented_keys_in_order)
{
    const auto o = parse_object(to_json(sample_result()));
    std::vector<std::string> keys;
    for (const auto& kv : o) keys.emplace_back(kv.key());
    BOOST_TEST(keys == (std::vector<std::string>{"scenario", "fencing", "nodes", "clients", "workers", "ops",
                                                 "ops_per_sec", "cpu_us_per_op", "user_us_per_op", "sys_us_per_op",
                                                 "allocs_per_op", "acquire_us", "handoff_us", "errors"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(json_per_operation_figures)
{
    const auto o = parse_object(to_json(sample_result()));
    BOOST_TEST(o.at("scenario").as_string() == "uncontended");
    BOOST_TEST(o.at("clients").as_int64() == 1);
    BOOST_TEST(o.at("workers").as_int64() == 64);
    BOOST_TEST(o.at("ops").as_int64() == 1000);
    BOOST_TEST(o.at("ops_per_sec").as_double() == 500.0);
    BOOST_TEST(o.at("cpu_us_per_op").as_double() == 15.0);
    BOOST_TEST(o.at("user_us_per_op").as_double() == 12.0);
    BOOST_TEST(o.at("sys_us_per_op").as_double() == 3.0);
    BOOST_TEST(o.at("allocs_per_op").as_double() == 37.5);
    const auto& acquire = o.at("acquire_us").as_object();
    BOOST_TEST(acquire.at("p50").as_int64() == 50);
    BOOST_TEST(acquire.at("p90").as_int64() == 90);
    BOOST_TEST(acquire.at("p99").as_int64() == 99);
    BOOST_TEST(acquire.at("max").as_int64() == 100);
    BOOST_TEST(o.at("handoff_us").as_object().at("p50").is_null());
    BOOST_TEST(o.at("errors").as_int64() == 0);
}

BOOST_AUTO_TEST_CASE(json_nulls_without_operations_or_counted_allocations)
{
    auto r = sample_result();
    r.allocations.reset();  // a sanitizer build counts nothing
    auto o = parse_object(to_json(r));
    BOOST_TEST(o.at("allocs_per_op").is_null());
    BOOST_TEST(o.at("cpu_us_per_op").as_double() == 15.0);

    r = sample_result();
    r.ops = 0;
    r.acquire_us.clear();
    o = parse_object(to_json(r));
    for (const char* k : {"cpu_us_per_op", "user_us_per_op", "sys_us_per_op", "allocs_per_op"})
        BOOST_TEST(o.at(k).is_null(), k);
    BOOST_TEST(o.at("acquire_us").as_object().at("p50").is_null());
    BOOST_TEST(o.at("ops_per_sec").as_double() == 0.0);
}

BOOST_AUTO_TEST_CASE(table_shows_cpu_split_and_allocations)
{
    auto text = to_table(sample_result());
    BOOST_TEST(text.find("clients      1 x 64 worker(s)") != std::string::npos, text);
    BOOST_TEST(text.find("cpu/op       15.00 us (this process: user 12.00 + system 3.00)") != std::string::npos, text);
    BOOST_TEST(text.find("allocs/op    37.50") != std::string::npos, text);

    auto r = sample_result();
    r.allocations.reset();
    text = to_table(r);
    BOOST_TEST(text.find("allocs/op") == std::string::npos, text);
    r.ops = 0;
    text = to_table(r);
    BOOST_TEST(text.find("cpu/op") == std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(nearest_rank_percentiles)
{
    std::vector<std::int64_t> none;
    BOOST_TEST(!percentile(none, 50).has_value());
    std::vector<std::int64_t> v{30, 10, 20};
    BOOST_TEST(*percentile(v, 50) == 20);
    BOOST_TEST(*percentile(v, 100) == 30);
    BOOST_TEST(*percentile(v, 1) == 10);
}

BOOST_AUTO_TEST_SUITE_END()
