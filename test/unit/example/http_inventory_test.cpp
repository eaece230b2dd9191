// example/http_inventory without I/O: the command line, the routes, the PUT body, the rate-limit headers of a
// limiter's decision, and the metrics text.
#include "config.hpp"
#include "metrics.hpp"
#include "order_id.hpp"
#include "replies.hpp"
#include "route.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace http_inventory;
using namespace std::chrono_literals;

namespace {
std::vector<std::string> urls(const std::vector<redlock::node_config>& nodes)
{
    std::vector<std::string> out;
    for (const auto& n : nodes) out.push_back(n.to_string());
    return out;
}
}  // namespace
namespace http = boost::beast::http;

BOOST_AUTO_TEST_SUITE(http_inventory_config)

BOOST_AUTO_TEST_CASE(flags_take_values_after_a_space_or_an_equals_sign)
{
    const auto c = parse_config(
        {"--listen", "0.0.0.0:0", "--nodes=redis://a:1,redis://b:2,,redis://c:3", "--store", "redis://s:9", "--rate",
         "5/100ms", "--burst=0", "--drain-timeout", "30s", "--idle-timeout", "2m", "--body-limit", "0"},
        nullptr);
    BOOST_TEST(c.listen_host == "0.0.0.0");
    BOOST_TEST(c.listen_port == 0);
    BOOST_TEST(urls(c.lock_nodes) == (std::vector<std::string>{"redis://a:1", "redis://b:2", "redis://c:3"}),
               boost::test_tools::per_element());
    BOOST_TEST(c.store == "redis://s:9");
    BOOST_TEST(c.rate == 5);
    BOOST_TEST(c.rate_period.count() == 100);
    BOOST_TEST(c.burst == 0);
    BOOST_TEST(c.drain_timeout.count() == 30'000);
    BOOST_TEST(c.idle_timeout.count() == 120'000);
    BOOST_TEST(c.body_limit == 0u);
}

BOOST_AUTO_TEST_CASE(the_nodes_come_from_redlock_nodes_unless_given_and_the_defaults_are_production_ones)
{
    const auto c = parse_config({"--store", "redis://s:9", "--listen", ":8081"}, "redis://x:1,redis://y:2");
    BOOST_TEST(c.lock_nodes.size() == 2u);
    BOOST_TEST(c.listen_host == "127.0.0.1");
    BOOST_TEST(c.listen_port == 8081);
    BOOST_TEST(c.header_timeout.count() == 10'000);
    BOOST_TEST(c.idle_timeout.count() == 120'000);
    BOOST_TEST(c.rate == 20);
    BOOST_TEST(c.rate_period.count() == 1000);
    const auto given = parse_config({"--store", "redis://s:9", "--nodes", "redis://z:1", "--rate", "0"}, "redis://x:1");
    BOOST_TEST(urls(given.lock_nodes) == std::vector<std::string>{"redis://z:1"}, boost::test_tools::per_element());
    BOOST_TEST(given.rate == 0);
}

BOOST_AUTO_TEST_CASE(unusable_command_lines_say_why)
{
    auto fails = [](std::vector<std::string_view> args, const char* env, const std::string& expected) {
        try {
            parse_config(args, env);
        } catch (const config_error& e) {
            BOOST_TEST_CONTEXT(e.what()) BOOST_TEST(std::string(e.what()).find(expected) != std::string::npos);
            return;
        }
        BOOST_ERROR("accepted: " << expected);
    };
    fails({"--store", "redis://s"}, nullptr, "no lock nodes");
    fails({"--store", "redis://s"}, " , ", "no lock nodes");
    fails({"--nodes", "redis://a,redis://b:0", "--store", "redis://s"}, nullptr,
          "--nodes: node 2 of 2: invalid node URL 'redis://b:0'");
    fails({"--store", "redis://s"}, "http://a", "$REDLOCK_NODES: invalid node URL 'http://a'");
    fails({"--nodes", "redis://a"}, nullptr, "no store");
    fails({"--nodes", "redis://a", "--store", "redis://s", "--bogus", "1"}, nullptr, "unknown argument '--bogus'");
    fails({"--nodes", "redis://a", "--store"}, nullptr, "--store: missing value");
    fails({"--nodes", "redis://a", "--store", "s", "--rate", "20"}, nullptr, "--rate");
    fails({"--nodes", "redis://a", "--store", "s", "--rate", "x/s"}, nullptr, "--rate");
    fails({"--nodes", "redis://a", "--store", "s", "--listen", "8080"}, nullptr, "--listen");
    fails({"--nodes", "redis://a", "--store", "s", "--listen", "h:70000"}, nullptr, "--listen port");
    fails({"--nodes", "redis://a", "--store", "s", "--lock-ttl", "0s"}, nullptr, "--lock-ttl");
    fails({"--nodes", "redis://a", "--store", "s", "--idle-timeout", "10 s"}, nullptr, "duration");
    fails({"--nodes", "redis://a", "--store", "s", "--request-timeout", "30s", "--drain-timeout", "20s"}, nullptr,
          "--request-timeout must be below --drain-timeout");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(http_inventory_routes)

BOOST_AUTO_TEST_CASE(each_endpoint_has_its_route_and_other_methods_get_405_with_allow)
{
    auto r = parse_route(http::verb::post, "/items/apple-1_B/reserve");
    BOOST_TEST((r.kind == endpoint::reserve));
    BOOST_TEST(r.item_id == "apple-1_B");
    BOOST_TEST((parse_route(http::verb::get, "/items/apple?x=1").kind == endpoint::get_item));
    BOOST_TEST((parse_route(http::verb::put, "/items/apple").kind == endpoint::put_item));
    BOOST_TEST((parse_route(http::verb::get, "/metrics").kind == endpoint::metrics));
    BOOST_TEST((parse_route(http::verb::get, "/healthz").kind == endpoint::healthz));
    BOOST_TEST((parse_route(http::verb::get, "/readyz").kind == endpoint::readyz));

    r = parse_route(http::verb::get, "/items/apple/reserve");
    BOOST_TEST((r.kind == endpoint::bad_method));
    BOOST_TEST(r.allow == "POST");
    r = parse_route(http::verb::delete_, "/items/apple");
    BOOST_TEST((r.kind == endpoint::bad_method));
    BOOST_TEST(r.allow == "GET, PUT");
    BOOST_TEST((parse_route(http::verb::post, "/metrics").kind == endpoint::bad_method));
}

BOOST_AUTO_TEST_CASE(unknown_paths_are_not_found_and_ids_outside_the_plain_alphabet_are_refused)
{
    BOOST_TEST((parse_route(http::verb::get, "/").kind == endpoint::not_found));
    BOOST_TEST((parse_route(http::verb::get, "/items").kind == endpoint::not_found));
    BOOST_TEST((parse_route(http::verb::get, "/items/a/b").kind == endpoint::not_found));
    BOOST_TEST((parse_route(http::verb::get, "/items/a/reserve/x").kind == endpoint::not_found));
    BOOST_TEST((parse_route(http::verb::get, "/items/").kind == endpoint::bad_item_id));
    BOOST_TEST((parse_route(http::verb::get, "/items/a}b").kind == endpoint::bad_item_id));
    BOOST_TEST((parse_route(http::verb::get, "/items/" + std::string(65, 'a')).kind == endpoint::bad_item_id));
    BOOST_TEST((parse_route(http::verb::get, "/items/" + std::string(64, 'a')).kind == endpoint::get_item));
    BOOST_TEST(valid_order_id("c-12:x.y_Z"));
    BOOST_TEST(!valid_order_id("a b"));
    BOOST_TEST(!valid_order_id(std::string(129, 'a')));
    BOOST_TEST(new_order_id().size() == 32u);
    BOOST_TEST(new_order_id() != new_order_id());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(http_inventory_replies)

BOOST_AUTO_TEST_CASE(a_put_body_is_a_json_object_with_one_non_negative_stock)
{
    BOOST_TEST(parse_stock_body(R"({"stock":100})").value_or(-1) == 100);
    BOOST_TEST(parse_stock_body(" {\n \"stock\" : 0 }\n").value_or(-1) == 0);
    BOOST_TEST(!parse_stock_body(R"({"stock":-1})"));
    BOOST_TEST(!parse_stock_body(R"({"stock":1.5})"));
    BOOST_TEST(!parse_stock_body(R"({"stock":"1"})"));
    BOOST_TEST(!parse_stock_body(R"({"stock":1,"x":2})"));
    BOOST_TEST(!parse_stock_body(R"({"stock":1}x)"));
    BOOST_TEST(!parse_stock_body(R"({"stock":10000000000000})"));
    BOOST_TEST(!parse_stock_body(""));
}

BOOST_AUTO_TEST_CASE(a_refusal_maps_onto_retry_after_and_ratelimit_headers_in_whole_seconds_rounded_up)
{
    redlock::rate_decision d{.result = redlock::rate_decision::outcome::limited,
                             .limit = 41,
                             .remaining = 0,
                             .retry_after = 1001ms,
                             .reset_after = 1999ms};
    response res = error_reply(http::status::too_many_requests, "rate_limited", "slow down");
    set_rate_limit_headers(res, d);
    BOOST_TEST(res[http::field::retry_after] == "2");
    BOOST_TEST(res["RateLimit-Limit"] == "41");
    BOOST_TEST(res["RateLimit-Remaining"] == "0");
    BOOST_TEST(res["RateLimit-Reset"] == "2");

    d.retry_after = 1ms;  // never "Retry-After: 0", which invites an immediate retry
    set_rate_limit_headers(res, d);
    BOOST_TEST(res[http::field::retry_after] == "1");

    response ok = reply(http::status::ok, "{}");
    d = {.result = redlock::rate_decision::outcome::allowed, .limit = 41, .remaining = 40, .reset_after = 50ms};
    set_rate_limit_headers(ok, d);
    BOOST_TEST(ok.count(http::field::retry_after) == 0u);
    BOOST_TEST(ok["RateLimit-Remaining"] == "40");
    BOOST_TEST(ok["RateLimit-Reset"] == "1");
}

BOOST_AUTO_TEST_CASE(error_bodies_are_escaped_json)
{
    const auto res = error_reply(http::status::bad_request, "bad", "a \"quoted\"\\ line\n\x01");
    BOOST_TEST(res.body() == R"({"error":"bad","message":"a \"quoted\"\\ line\n\u0001"})");
    BOOST_TEST(res[http::field::content_type] == "application/json");
    BOOST_TEST(res[http::field::content_length] == std::to_string(res.body().size()));
}

BOOST_AUTO_TEST_CASE(request_metrics_are_counted_by_route_and_code_with_a_cumulative_histogram)
{
    metrics m;
    m.observe_request(endpoint::reserve, 201, 3ms);
    m.observe_request(endpoint::reserve, 201, 30ms);
    m.observe_request(endpoint::reserve, 409, 10s);
    m.count_reservation("reserved");
    const auto text = m.to_prometheus(true);
    auto has = [&](const std::string& line) {
        BOOST_TEST_CONTEXT(line) BOOST_TEST(text.find(line + "\n") != std::string::npos);
    };
    has(R"(inventory_http_requests_total{route="reserve",code="201"} 2)");
    has(R"(inventory_http_requests_total{route="reserve",code="409"} 1)");
    has(R"(inventory_http_request_duration_seconds_bucket{route="reserve",le="0.0025"} 0)");
    has(R"(inventory_http_request_duration_seconds_bucket{route="reserve",le="0.005"} 1)");
    has(R"(inventory_http_request_duration_seconds_bucket{route="reserve",le="0.05"} 2)");
    has(R"(inventory_http_request_duration_seconds_bucket{route="reserve",le="5"} 2)");
    has(R"(inventory_http_request_duration_seconds_bucket{route="reserve",le="+Inf"} 3)");
    has(R"(inventory_http_request_duration_seconds_count{route="reserve"} 3)");
    has(R"(inventory_reservations_total{result="reserved"} 1)");
    has("inventory_draining 1");
    has("# TYPE inventory_http_request_duration_seconds histogram");
}

BOOST_AUTO_TEST_SUITE_END()
