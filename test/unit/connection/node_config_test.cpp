// Node URLs: what parses, and what is rejected with a message naming the problem.
#include <redlock/error.hpp>
#include <redlock/node_config.hpp>

#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

using redlock::node_config;

namespace {
std::string why_invalid(std::string_view url)
{
    redlock::diagnostics diag;
    auto result = redlock::parse_url(url, diag);
    BOOST_TEST(!result.has_value());
    if (!result) BOOST_TEST(result.error() == redlock::error::invalid_argument);
    return std::string(diag.client_message());
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_plain_url_gives_host_port_and_defaults)
{
    auto c = redlock::parse_url("redis://localhost:7001");
    BOOST_TEST((c.kind == node_config::transport::tcp));
    BOOST_TEST(c.host == "localhost");
    BOOST_TEST(c.port == 7001);
    BOOST_TEST(c.db == 0);
    BOOST_TEST(c.password.empty());
    BOOST_TEST(redlock::parse_url("redis://10.0.0.1").port == 6379);
}

BOOST_AUTO_TEST_CASE(user_password_and_database_are_read_and_percent_decoded)
{
    auto c = redlock::parse_url("redis://locker:p%40ss%3Aword@127.0.0.1:6380/3");
    BOOST_TEST(c.username == "locker");
    BOOST_TEST(c.password == "p@ss:word");
    BOOST_TEST(c.db == 3);
    auto only_password = redlock::parse_url("redis://:secret@host");
    BOOST_TEST(only_password.username.empty());
    BOOST_TEST(only_password.password == "secret");
    BOOST_TEST(c.to_string() == "redis://locker@127.0.0.1:6380/3");  // never the password
}

BOOST_AUTO_TEST_CASE(tls_and_unix_urls)
{
    auto tls = redlock::parse_url("rediss://redis.example:6390?ca_file=/etc/ca.pem&verify=false&server_name=r1");
    BOOST_TEST((tls.kind == node_config::transport::tls));
    BOOST_TEST(tls.tls.ca_file == "/etc/ca.pem");
    BOOST_TEST(!tls.tls.verify_peer);
    BOOST_TEST(tls.tls.server_name == "r1");
    auto unix_socket = redlock::parse_url("unix:///run/redis/redis.sock?db=2");
    BOOST_TEST((unix_socket.kind == node_config::transport::unix_socket));
    BOOST_TEST(unix_socket.path == "/run/redis/redis.sock");
    BOOST_TEST(unix_socket.db == 2);
    auto v6 = redlock::parse_url("redis://[::1]:7000");
    BOOST_TEST(v6.host == "::1");
    BOOST_TEST(v6.to_string() == "redis://[::1]:7000");
}

BOOST_AUTO_TEST_CASE(malformed_urls_say_what_is_wrong)
{
    BOOST_TEST(why_invalid("http://host:1").find("unknown scheme 'http'") != std::string::npos);
    BOOST_TEST(why_invalid("redis://host:0").find("port '0'") != std::string::npos);
    BOOST_TEST(why_invalid("redis://host:99999").find("port '99999'") != std::string::npos);
    BOOST_TEST(why_invalid("redis://host:12/abc").find("database 'abc'") != std::string::npos);
    BOOST_TEST(why_invalid("redis://host?colour=blue").find("unknown parameter 'colour'") != std::string::npos);
    BOOST_TEST(why_invalid("rediss://host?verify=maybe").find("verify='maybe'") != std::string::npos);
    BOOST_TEST(why_invalid("unix://").find("path is missing") != std::string::npos);
    BOOST_TEST(why_invalid("not a url").find("not a URL") != std::string::npos);
    BOOST_TEST(why_invalid("redis://").find("host is missing") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_cluster_url_names_one_member_and_more_seeds)
{
    auto c = redlock::parse_url("redis+cluster://locker:pw@10.0.0.1:7000?seed=10.0.0.2:7001&seed=db-3.example:7002");
    BOOST_TEST(c.cluster);
    BOOST_TEST((c.kind == node_config::transport::tcp));
    BOOST_TEST(c.host == "10.0.0.1");
    BOOST_TEST(c.port == 7000);
    BOOST_TEST(c.username == "locker");
    BOOST_TEST(c.password == "pw");
    BOOST_TEST((c.cluster_seeds == std::vector<redlock::cluster_seed>{{"10.0.0.2", 7001}, {"db-3.example", 7002}}));
    BOOST_TEST(c.to_string() == "redis+cluster://locker@10.0.0.1:7000?seed=10.0.0.2:7001&seed=db-3.example:7002");

    auto tls = redlock::parse_url("rediss+cluster://cache.example?ca_file=/etc/ca.pem");
    BOOST_TEST(tls.cluster);
    BOOST_TEST((tls.kind == node_config::transport::tls));
    BOOST_TEST(tls.port == 6379);
    BOOST_TEST(tls.tls.ca_file == "/etc/ca.pem");
    BOOST_TEST(tls.to_string() == "rediss+cluster://cache.example:6379");

    BOOST_TEST(!redlock::parse_url("redis://h:1").cluster);
}

BOOST_AUTO_TEST_CASE(cluster_seeds_take_ipv6_bare_or_in_encoded_brackets_and_round_trip)
{
    auto c = redlock::parse_url("redis+cluster://[::1]:7000?seed=::1:7001&seed=%5Bfe80::2%5D:7002");
    BOOST_TEST(c.host == "::1");
    BOOST_TEST((c.cluster_seeds == std::vector<redlock::cluster_seed>{{"::1", 7001}, {"fe80::2", 7002}}));
    const auto text = c.to_string();
    BOOST_TEST(text == "redis+cluster://[::1]:7000?seed=::1:7001&seed=fe80::2:7002");
    auto again = redlock::parse_url(text);
    BOOST_TEST(again.host == c.host);
    BOOST_TEST(again.port == c.port);
    BOOST_TEST((again.cluster_seeds == c.cluster_seeds));
}

BOOST_AUTO_TEST_CASE(malformed_cluster_urls_say_what_is_wrong)
{
    BOOST_TEST(why_invalid("redis+cluster://h:1?seed=nohost").find("seed 'nohost' is not host:port") !=
               std::string::npos);
    BOOST_TEST(why_invalid("redis+cluster://h:1?seed=h:0").find("seed 'h:0'") != std::string::npos);
    BOOST_TEST(why_invalid("redis+cluster://h:1?seed=:7000").find("seed ':7000'") != std::string::npos);
    BOOST_TEST(why_invalid("redis+cluster://h:1/2").find("database 0 only") != std::string::npos);
    BOOST_TEST(why_invalid("redis://h:1?seed=h:2").find("redis+cluster") != std::string::npos);
    BOOST_TEST(why_invalid("redis+sentinels://h:1/m").find("unknown scheme 'redis+sentinels'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_sentinel_url_names_a_sentinel_more_seeds_and_the_masters_name)
{
    auto c = redlock::parse_url(
        "redis+sentinel://locker:pw@10.0.0.1:26380/orders?seed=10.0.0.2:26379&seed=db-3.example:26381&db=2");
    BOOST_TEST(c.sentinel);
    BOOST_TEST(!c.cluster);
    BOOST_TEST((c.kind == node_config::transport::tcp));
    BOOST_TEST(c.host == "10.0.0.1");
    BOOST_TEST(c.port == 26380);
    BOOST_TEST(c.sentinel_master == "orders");
    BOOST_TEST(
        (c.sentinel_seeds == std::vector<redlock::server_address>{{"10.0.0.2", 26379}, {"db-3.example", 26381}}));
    BOOST_TEST(c.cluster_seeds.empty());
    BOOST_TEST(c.db == 2);
    // The URL's user and password are the master's; the Sentinels get none unless the parameters say.
    BOOST_TEST(c.username == "locker");
    BOOST_TEST(c.password == "pw");
    BOOST_TEST(c.sentinel_username.empty());
    BOOST_TEST(c.sentinel_password.empty());
    BOOST_TEST(c.to_string() ==
               "redis+sentinel://locker@10.0.0.1:26380/orders?seed=10.0.0.2:26379&seed=db-3.example:26381&db=2");

    // Port 26379 by default; TLS for the Sentinels and the master alike.
    auto tls = redlock::parse_url("rediss+sentinel://sentinel.example/cache?ca_file=/etc/ca.pem");
    BOOST_TEST(tls.sentinel);
    BOOST_TEST((tls.kind == node_config::transport::tls));
    BOOST_TEST(tls.port == 26379);
    BOOST_TEST(tls.sentinel_master == "cache");
    BOOST_TEST(tls.tls.ca_file == "/etc/ca.pem");
    BOOST_TEST(tls.db == 0);
    BOOST_TEST(tls.to_string() == "rediss+sentinel://sentinel.example:26379/cache");

    BOOST_TEST(!redlock::parse_url("redis://h:1").sentinel);
    BOOST_TEST(!redlock::parse_url("redis+cluster://h:1").sentinel);
}

BOOST_AUTO_TEST_CASE(sentinel_credentials_are_parameters_apart_from_the_masters)
{
    auto c = redlock::parse_url(
        "redis+sentinel://:masterpw@h:26379/m?sentinel_user=watcher&sentinel_password=s%26cret&client_name=app");
    BOOST_TEST(c.password == "masterpw");
    BOOST_TEST(c.username.empty());
    BOOST_TEST(c.sentinel_username == "watcher");
    BOOST_TEST(c.sentinel_password == "s&cret");
    BOOST_TEST(c.client_name == "app");
    // Never a password in the text; the Sentinels' user is kept.
    BOOST_TEST(c.to_string() == "redis+sentinel://h:26379/m?sentinel_user=watcher");
    auto only_password = redlock::parse_url("redis+sentinel://h/m?sentinel_password=x");
    BOOST_TEST(only_password.sentinel_password == "x");
    BOOST_TEST(only_password.sentinel_username.empty());
}

BOOST_AUTO_TEST_CASE(a_masters_name_is_percent_decoded_and_round_trips)
{
    auto c = redlock::parse_url("redis+sentinel://h:1/my%20master%2Fa?seed=::1:26380");
    BOOST_TEST(c.sentinel_master == "my master/a");
    BOOST_TEST((c.sentinel_seeds == std::vector<redlock::server_address>{{"::1", 26380}}));
    const auto text = c.to_string();
    BOOST_TEST(text == "redis+sentinel://h:1/my%20master%2Fa?seed=::1:26380");
    auto again = redlock::parse_url(text);
    BOOST_TEST(again.sentinel_master == c.sentinel_master);
    BOOST_TEST((again.sentinel_seeds == c.sentinel_seeds));
}

BOOST_AUTO_TEST_CASE(malformed_sentinel_urls_say_what_is_wrong)
{
    BOOST_TEST(why_invalid("redis+sentinel://h:26379").find("master's name is missing") != std::string::npos);
    BOOST_TEST(why_invalid("redis+sentinel://h:26379/").find("master's name is missing") != std::string::npos);
    BOOST_TEST(why_invalid("redis+sentinel://h:26379/a/b").find("the master's name alone") != std::string::npos);
    BOOST_TEST(why_invalid("redis+sentinel://h/m?seed=nohost").find("seed 'nohost' is not host:port") !=
               std::string::npos);
    BOOST_TEST(why_invalid("redis+sentinel://h/m?db=x").find("database 'x'") != std::string::npos);
    BOOST_TEST(why_invalid("redis+sentinel://h/m?sentinel_user=u").find("sentinel_user needs sentinel_password") !=
               std::string::npos);
    BOOST_TEST(why_invalid("redis://h:1?sentinel_password=x").find("redis+sentinel://") != std::string::npos);
    BOOST_TEST(why_invalid("redis+cluster://h:1?sentinel_user=u").find("redis+sentinel://") != std::string::npos);
    BOOST_TEST(why_invalid("redis+sentinel://:0/m").find("host is missing") != std::string::npos);
    BOOST_TEST(why_invalid("unix+sentinel:///run/s.sock").find("unknown scheme") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_node_list_takes_sentinel_urls)
{
    const auto nodes = redlock::parse_node_list(
        "redis+sentinel://s1:26379/a?seed=s2:26379, redis://b:2 rediss+sentinel://s3/c?sentinel_password=p%2Cq");
    BOOST_TEST_REQUIRE(nodes.size() == 3u);
    BOOST_TEST(nodes[0].sentinel);
    BOOST_TEST(nodes[0].sentinel_master == "a");
    BOOST_TEST(nodes[0].sentinel_seeds.size() == 1u);
    BOOST_TEST(!nodes[1].sentinel);
    BOOST_TEST(nodes[2].sentinel);
    BOOST_TEST(nodes[2].sentinel_password == "p,q");
}

BOOST_AUTO_TEST_CASE(the_throwing_form_carries_the_message)
{
    try {
        redlock::parse_url("redis://host:99999");
        BOOST_FAIL("expected an exception");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == redlock::error::invalid_argument);
        BOOST_TEST(std::string(e.what()).find("port '99999'") != std::string::npos);
    }
}

// A node list: commas and/or whitespace between URLs, empty entries skipped, each URL read by parse_url.
BOOST_AUTO_TEST_CASE(a_node_list_is_split_on_commas_and_whitespace)
{
    const auto nodes = redlock::parse_node_list("redis://a:1,redis://b:2, redis://c:3\tunix:///run/r.sock\n");
    BOOST_TEST_REQUIRE(nodes.size() == 4u);
    BOOST_TEST(nodes[0].to_string() == "redis://a:1");
    BOOST_TEST(nodes[1].to_string() == "redis://b:2");
    BOOST_TEST(nodes[2].to_string() == "redis://c:3");
    BOOST_TEST((nodes[3].kind == node_config::transport::unix_socket));
    BOOST_TEST(redlock::parse_node_list(",redis://a:1,,  ,redis://b:2,").size() == 2u);
    // Percent-encoded, a comma stays in its URL.
    const auto tls = redlock::parse_node_list("rediss://h:1?ca_file=/etc/a%2Cb.pem,redis://g:2");
    BOOST_TEST_REQUIRE(tls.size() == 2u);
    BOOST_TEST(tls[0].tls.ca_file == "/etc/a,b.pem");
}

BOOST_AUTO_TEST_CASE(a_list_without_urls_gives_no_node)
{
    BOOST_TEST(redlock::parse_node_list("").empty());
    BOOST_TEST(redlock::parse_node_list(" , ,\n").empty());
    redlock::diagnostics diag;
    auto result = redlock::parse_node_list(",", diag);
    BOOST_TEST_REQUIRE(result.has_value());
    BOOST_TEST(result->empty());
}

BOOST_AUTO_TEST_CASE(a_bad_entry_fails_the_list_and_is_named)
{
    redlock::diagnostics diag;
    auto result = redlock::parse_node_list("redis://a:1, redis://b:99999 ,redis://c:3", diag);
    BOOST_TEST_REQUIRE(!result.has_value());
    BOOST_TEST(result.error() == redlock::error::invalid_argument);
    BOOST_TEST(std::string(diag.client_message()) ==
               "node 2 of 3: invalid node URL 'redis://b:99999': port '99999' is not in 1..65535");
    // One entry: parse_url's message as it is.
    result = redlock::parse_node_list("http://a:1", diag);
    BOOST_TEST_REQUIRE(!result.has_value());
    BOOST_TEST(std::string(diag.client_message()).starts_with("invalid node URL 'http://a:1': unknown scheme"));
    try {
        redlock::parse_node_list("redis://a:1,redis://");
        BOOST_FAIL("expected an exception");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == redlock::error::invalid_argument);
        BOOST_TEST(std::string(e.what()).find("node 2 of 2: invalid node URL 'redis://'") != std::string::npos);
    }
}
