// The server's identity from HELLO (server_identity.hpp): which server (Redis, Valkey, another) and which version,
// and the feature gates read from both: what decides SSUBSCRIBE over SUBSCRIBE, SET ... NX GET over the acquire
// script and CLUSTER SHARDS over CLUSTER SLOTS.
#include "common/fakes/resp_values.hpp"
#include "connection/server_version.hpp"

#include <redlock/server_identity.hpp>

#include <boost/test/unit_test.hpp>

using redlock::server_identity;
using redlock::server_kind;
using redlock::detail::make_server_identity;
using redlock::detail::parse_server_version;
using redlock::detail::server_identity_of_hello;
using namespace redlock::test;

namespace {

redlock::resp::value hello(std::string server, std::string version)
{
    return aggregate(redlock::resp::type::map, {bulk("server"), bulk(std::move(server)), bulk("version"),
                                                bulk(std::move(version)), bulk("proto"), integer(3)});
}

// Every gate at once: they agree on the servers of today (all came with Redis 7.0).
void gates_are(const server_identity& s, bool expected)
{
    BOOST_TEST(s.has_sharded_pubsub() == expected, to_string(s));
    BOOST_TEST(s.has_set_nx_get() == expected, to_string(s));
    BOOST_TEST(s.has_cluster_shards() == expected, to_string(s));
}

}  // namespace

BOOST_AUTO_TEST_CASE(versions_parse_into_comparable_numbers)
{
    BOOST_TEST(parse_server_version("7.0.15") == 70015u);
    BOOST_TEST(parse_server_version("6.2.14") == 60214u);
    BOOST_TEST(parse_server_version("7.2.0") == 70200u);
    BOOST_TEST(parse_server_version("8.0.1") == 80001u);
    BOOST_TEST(parse_server_version("255.255.255") == 0u);  // minor and patch above 99 are not versions
    BOOST_TEST(parse_server_version("7.0") == 0u);
    BOOST_TEST(parse_server_version("7.0.1-rc1") == 0u);
    BOOST_TEST(parse_server_version("") == 0u);
    BOOST_TEST(parse_server_version("x.y.z") == 0u);
    BOOST_TEST(parse_server_version("99999999999.0.0") == 0u);
}

BOOST_AUTO_TEST_CASE(hello_names_the_server_and_its_own_version)
{
    BOOST_TEST((server_identity_of_hello(hello("redis", "7.0.15")) == server_identity{server_kind::redis, 70015}));
    // Valkey 8's HELLO: its own version, not INFO's redis_version:7.2.4.
    BOOST_TEST((server_identity_of_hello(hello("valkey", "8.0.1")) == server_identity{server_kind::valkey, 80001}));
    BOOST_TEST((server_identity_of_hello(hello("Valkey", "9.0.0")) == server_identity{server_kind::valkey, 90000}));
    BOOST_TEST((server_identity_of_hello(hello("dragonfly", "1.2.3")) == server_identity{server_kind::other, 10203}));
    // No server field, a version: judged by the version, as before servers had names here.
    const auto unnamed = aggregate(redlock::resp::type::map, {bulk("version"), bulk("7.2.4")});
    BOOST_TEST((server_identity_of_hello(unnamed) == server_identity{server_kind::other, 70204}));
    // Not a map, or a map that says neither: unknown.
    BOOST_TEST(
        !server_identity_of_hello(array({bulk("server"), bulk("redis"), bulk("version"), bulk("7.0.15")})).known());
    BOOST_TEST(!server_identity_of_hello(aggregate(redlock::resp::type::map, {bulk("proto"), integer(3)})).known());
    // A name without a parsable version keeps the name.
    BOOST_TEST((server_identity_of_hello(hello("redis", "255.255.255")) == server_identity{server_kind::redis, 0}));
}

BOOST_AUTO_TEST_CASE(redis_has_the_7_0_commands_from_7_0_on)
{
    gates_are(make_server_identity("redis", "6.2.14"), false);
    gates_are(make_server_identity("redis", "6.0.0"), false);
    gates_are(make_server_identity("redis", "7.0.0"), true);
    gates_are(make_server_identity("redis", "7.0.15"), true);
    gates_are(make_server_identity("redis", "7.2.4"), true);
}

BOOST_AUTO_TEST_CASE(valkey_has_them_whatever_its_version_number)
{
    // Valkey 7.2.x says `server redis`, version 7.2.x: a Redis 7.2 as far as the gates go.
    const auto valkey_7_2 = server_identity_of_hello(hello("redis", "7.2.5"));
    BOOST_TEST((valkey_7_2 == server_identity{server_kind::redis, 70205}));
    gates_are(valkey_7_2, true);
    gates_are(make_server_identity("valkey", "7.2.5"), true);
    gates_are(make_server_identity("valkey", "8.0.1"), true);
    // A Valkey whose version did not parse is still a Valkey: every Valkey has what Redis 7.2.4 has.
    gates_are(server_identity{server_kind::valkey, 0}, true);
    // Valkey 8 with extended-redis-compatibility says `redis 7.2.4`: still the gates of 7.2.
    gates_are(make_server_identity("redis", "7.2.4"), true);
}

BOOST_AUTO_TEST_CASE(other_servers_are_judged_by_their_version_and_unknown_ones_have_nothing)
{
    gates_are(make_server_identity("keydb", "6.3.4"), false);
    gates_are(make_server_identity("keydb", "7.0.0"), true);
    gates_are(make_server_identity("dragonfly", "df-v1.0"), false);  // no version to go by
    gates_are(server_identity{}, false);
    BOOST_TEST(!server_identity{}.known());
    BOOST_TEST((make_server_identity("", "").kind == server_kind::unknown));
}

BOOST_AUTO_TEST_CASE(an_identity_prints_as_server_and_version)
{
    BOOST_TEST(to_string(server_identity{server_kind::valkey, 80001}) == "valkey 8.0.1");
    BOOST_TEST(to_string(server_identity{server_kind::redis, 70015}) == "redis 7.0.15");
    BOOST_TEST(to_string(server_identity{server_kind::redis, 60209}) == "redis 6.2.9");
    BOOST_TEST(to_string(server_identity{server_kind::redis, 0}) == "redis");
    BOOST_TEST(to_string(server_identity{server_kind::other, 10203}) == "other 1.2.3");
    BOOST_TEST(to_string(server_identity{}) == "unknown");
    BOOST_TEST(redlock::version_text(0).empty());
    BOOST_TEST(redlock::version_text(90000) == "9.0.0");
}
