// Auxiliary names land in the lock key's hash slot.
#include <redlock/key_layout.hpp>

#include <boost/test/unit_test.hpp>

using redlock::aux_name;
using redlock::has_hash_tag;

BOOST_AUTO_TEST_CASE(a_name_without_a_hash_tag_is_wrapped)
{
    BOOST_TEST(aux_name("orders", "released") == "{orders}:released");
    BOOST_TEST(aux_name("a:b:c", "fence") == "{a:b:c}:fence");
}

BOOST_AUTO_TEST_CASE(a_name_with_a_hash_tag_gets_a_suffix)
{
    BOOST_TEST(aux_name("{user:7}:lock", "released") == "{user:7}:lock:released");
    BOOST_TEST(has_hash_tag("x{y}z"));
}

BOOST_AUTO_TEST_CASE(an_empty_or_unclosed_tag_is_no_tag)
{
    // Redis Cluster hashes the whole name in these cases.
    BOOST_TEST(!has_hash_tag("a{}b"));
    BOOST_TEST(!has_hash_tag("a{b"));
    BOOST_TEST(!has_hash_tag("a}b{"));
}
