// The Redis Cluster hash slot: CRC16 (XMODEM) values and slots as Redis documents and computes them.
#include <boost/test/unit_test.hpp>

#include <common/key_slot.hpp>

using redlock::detail::crc16;
using redlock::detail::key_slot;

BOOST_AUTO_TEST_CASE(crc16_is_xmodem)
{
    static_assert(crc16("123456789") == 0x31C3);  // the check value of CRC-16/XMODEM
    BOOST_TEST(crc16("") == 0);
}

BOOST_AUTO_TEST_CASE(slots_follow_the_cluster_spec)
{
    // Values from `CLUSTER KEYSLOT` on Redis 7.0.
    BOOST_TEST(key_slot("foo") == 12182);
    BOOST_TEST(key_slot("bar") == 5061);
    BOOST_TEST(key_slot("somekey") == 11058);
    // A hash tag: only the part in braces counts.
    BOOST_TEST(key_slot("{user1000}.following") == key_slot("{user1000}.followers"));
    BOOST_TEST(key_slot("{user1000}.following") == key_slot("user1000"));
    // The first '{' and the first '}' after it; an empty tag hashes the whole key.
    BOOST_TEST(key_slot("foo{}{bar}") == key_slot("foo{}{bar}"));
    BOOST_TEST(key_slot("foo{{bar}}zap") == key_slot("{bar"));
    BOOST_TEST(key_slot("foo{bar}{zap}") == key_slot("bar"));
    BOOST_TEST(key_slot("{}") == crc16("{}") % 16384);
}
