// Reading MOVED, ASK, TRYAGAIN and CLUSTERDOWN from error replies.
#include "cluster/refusal.hpp"

#include <boost/test/unit_test.hpp>

#include <common/fakes/resp_values.hpp>

using redlock::detail::cluster_refusal;
using redlock::detail::read_refusal;
using kind = cluster_refusal::kind;

BOOST_AUTO_TEST_CASE(moved_and_ask_name_the_slot_and_the_master)
{
    auto moved = read_refusal("MOVED 3999 127.0.0.1:6381", "asked");
    BOOST_TEST_REQUIRE(moved.has_value());
    BOOST_TEST((moved->what == kind::moved));
    BOOST_TEST(moved->slot == 3999);
    BOOST_TEST(moved->target.host == "127.0.0.1");
    BOOST_TEST(moved->target.port == 6381);
    auto ask = read_refusal("ASK 16383 redis-2.example.com:7000", "asked");
    BOOST_TEST_REQUIRE(ask.has_value());
    BOOST_TEST((ask->what == kind::ask));
    BOOST_TEST(ask->slot == 16383);
    BOOST_TEST(ask->target.text() == "redis-2.example.com:7000");
}

BOOST_AUTO_TEST_CASE(ipv6_targets_bare_or_in_brackets_and_an_empty_host_is_the_server_asked)
{
    auto bare = read_refusal("MOVED 1 fe80::1:7000", "x");
    BOOST_TEST_REQUIRE(bare.has_value());
    BOOST_TEST(bare->target.host == "fe80::1");
    BOOST_TEST(bare->target.port == 7000);
    BOOST_TEST(bare->target.text() == "[fe80::1]:7000");
    auto bracketed = read_refusal("ASK 1 [::1]:7001", "x");
    BOOST_TEST_REQUIRE(bracketed.has_value());
    BOOST_TEST(bracketed->target.host == "::1");
    auto unknown_endpoint = read_refusal("MOVED 12 :7002", "10.0.0.3");
    BOOST_TEST_REQUIRE(unknown_endpoint.has_value());
    BOOST_TEST(unknown_endpoint->target.text() == "10.0.0.3:7002");
}

BOOST_AUTO_TEST_CASE(tryagain_and_clusterdown_ask_for_a_later_retry)
{
    BOOST_TEST((read_refusal("TRYAGAIN Multiple keys request during rehashing of slot", "h")->what == kind::try_again));
    BOOST_TEST((read_refusal("CLUSTERDOWN The cluster is down", "h")->what == kind::cluster_down));
    BOOST_TEST((read_refusal("CLUSTERDOWN Hash slot not served", "h")->what == kind::cluster_down));
}

BOOST_AUTO_TEST_CASE(other_errors_and_malformed_redirects_are_no_refusal)
{
    for (const char* text : {"ERR unknown command", "WRONGTYPE Operation", "MOVED", "MOVED 3999", "MOVED x 1.2.3.4:5",
                             "MOVED 16384 1.2.3.4:5", "MOVED -1 1.2.3.4:5", "MOVED 1 1.2.3.4", "MOVED 1 1.2.3.4:0",
                             "MOVED 1 1.2.3.4:70000", "MOVED 1 1.2.3.4:ab", "ASK 1 [::1:5", "MOVEDX 1 a:1", ""}) {
        BOOST_TEST(!read_refusal(text, "h").has_value(), text);
    }
}

BOOST_AUTO_TEST_CASE(a_request_is_refused_when_its_first_reply_is_a_refusal)
{
    using namespace redlock::test;
    BOOST_TEST(read_refusal(redlock::response{error_reply("MOVED 1 a:1"), integer(0)}, "h").has_value());
    BOOST_TEST(!read_refusal(redlock::response{bulk("OK"), error_reply("MOVED 1 a:1")}, "h").has_value());
    BOOST_TEST(!read_refusal(redlock::response{}, "h").has_value());
    BOOST_TEST(!read_refusal(redlock::response{error_reply("NOSCRIPT No matching script")}, "h").has_value());
}
