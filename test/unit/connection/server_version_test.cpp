// The server version from HELLO: what decides whether SET ... NX GET may be sent.
#include "common/fakes/resp_values.hpp"
#include "connection/server_version.hpp"

#include <boost/test/unit_test.hpp>

using redlock::detail::parse_server_version;
using redlock::detail::server_version_of_hello;
using namespace redlock::test;

BOOST_AUTO_TEST_CASE(versions_parse_into_comparable_numbers)
{
    BOOST_TEST(parse_server_version("7.0.15") == 70015u);
    BOOST_TEST(parse_server_version("6.2.14") == 60214u);
    BOOST_TEST(parse_server_version("7.2.0") == 70200u);
    BOOST_TEST(parse_server_version("255.255.255") == 0u);  // minor and patch above 99 are not versions
    BOOST_TEST(parse_server_version("7.0") == 0u);
    BOOST_TEST(parse_server_version("7.0.1-rc1") == 0u);
    BOOST_TEST(parse_server_version("") == 0u);
    BOOST_TEST(parse_server_version("x.y.z") == 0u);
    BOOST_TEST(parse_server_version("99999999999.0.0") == 0u);
}

BOOST_AUTO_TEST_CASE(the_version_field_of_a_hello_map)
{
    auto hello = aggregate(redlock::resp::type::map,
                           {bulk("server"), bulk("redis"), bulk("version"), bulk("7.0.15"), bulk("proto"), integer(3)});
    BOOST_TEST(server_version_of_hello(hello) == 70015u);
    BOOST_TEST(server_version_of_hello(array({bulk("version"), bulk("7.0.15")})) == 0u);  // not a map
    BOOST_TEST(server_version_of_hello(aggregate(redlock::resp::type::map, {bulk("server"), bulk("redis")})) == 0u);
}
