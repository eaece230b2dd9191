// `redlock bench --scenario cache`: hit latency beside a plain GET, in JSON with its documented keys.
#include <boost/json/src.hpp>  // header-only Boost.JSON, to parse `bench --json`
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/servers/redis_node.hpp>
#include <sstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock::test::cluster;
using redlock::test::comma_joined;

BOOST_AUTO_TEST_CASE(bench_cache_measures_hits_and_plain_gets)
{
    cluster nodes(3);
    const auto r =
        redlock::test::run_command({REDLOCK_CLI_PATH, "bench", "--nodes", comma_joined(nodes.urls()), "--scenario",
                                    "cache", "--clients", "2", "--workers", "4", "--duration", "500ms", "--json"},
                                   30s);
    BOOST_TEST_REQUIRE(r.exit_code == 0, "stderr: " << r.err);
    boost::json::error_code ec;
    auto doc = boost::json::parse(r.out, ec);
    BOOST_REQUIRE_MESSAGE(!ec && doc.is_object(), "not a JSON object: " << r.out);
    const auto& o = doc.as_object();
    std::vector<std::string> keys;
    for (const auto& kv : o) keys.emplace_back(kv.key());
    BOOST_TEST(keys == (std::vector<std::string>{"scenario", "nodes", "clients", "workers", "value_bytes", "hit", "get",
                                                 "errors"}),
               boost::test_tools::per_element());
    BOOST_TEST(o.at("errors").as_int64() == 0);
    for (const char* phase : {"hit", "get"}) {
        const auto& p = o.at(phase).as_object();
        BOOST_TEST(p.at("ops").as_int64() > 0, phase);
        BOOST_TEST(p.at("latency_us").as_object().at("p50").as_int64() > 0, phase);
    }
    // On the store (node 0): the 8 values, and beside them on every lock node the 8 rebuild locks' fencing
    // counters (they never expire); the locks themselves are released.
    std::size_t values = 0, counters = 0, others = 0;
    std::istringstream listed(nodes[0].cli({"KEYS", "*"}));
    for (std::string key; std::getline(listed, key);)
        (key.ends_with(":rebuild:fence") ? counters : key.starts_with("redlock-bench-cache:") ? values : others)++;
    BOOST_TEST(values == 8u);
    BOOST_TEST(counters == 8u);
    BOOST_TEST(others == 0u);
    // Every measured read was a hit: each key's rebuild lock was taken once (its fencing counter is 1), by the
    // first read; a miss later would have taken it again.
    std::istringstream fences(nodes[0].cli({"KEYS", "*:rebuild:fence"}));
    for (std::string key; std::getline(fences, key);) BOOST_TEST(nodes[0].cli({"GET", key}) == "1", key);
}
