// The stored form of a cached value: one string, header then bytes, read back exactly; anything else is a miss.
#include "recipes/cache/cache_entry.hpp"

#include <boost/test/unit_test.hpp>

using redlock::detail::cache_entry;
using redlock::detail::decode_entry;
using redlock::detail::encode_entry;
using namespace std::chrono_literals;

namespace {

cache_entry sample()
{
    cache_entry e;
    e.token = 42;
    e.refresh_at = cache_entry::time_point(1'700'000'030'000ms);
    e.expires_at = cache_entry::time_point(1'700'000'060'000ms);
    e.delta = 1234us;
    return e;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_value_reads_back_with_every_field_and_its_bytes)
{
    const std::string bytes("line one\nline two\0binary\xff", 26);
    const auto stored = encode_entry(sample(), bytes);
    BOOST_TEST(stored.starts_with("rlc1 v 42 1700000030000 1700000060000 1234\n"));
    const auto e = decode_entry(stored);
    BOOST_REQUIRE(e);
    BOOST_TEST(!e->null);
    BOOST_TEST(e->token == 42u);
    BOOST_TEST(e->refresh_at.time_since_epoch().count() == 1'700'000'030'000);
    BOOST_TEST(e->expires_at.time_since_epoch().count() == 1'700'000'060'000);
    BOOST_TEST(e->delta.count() == 1234);
    BOOST_TEST(e->value == bytes);
    BOOST_TEST(stored.substr(e->header_size) == bytes);
}

BOOST_AUTO_TEST_CASE(a_null_marker_has_no_bytes)
{
    auto n = sample();
    n.null = true;
    const auto stored = encode_entry(n, "ignored");
    BOOST_TEST(stored == "rlc1 n 42 1700000030000 1700000060000 1234\n");
    const auto e = decode_entry(stored);
    BOOST_REQUIRE(e);
    BOOST_TEST(e->null);
    BOOST_TEST(e->value.empty());
}

BOOST_AUTO_TEST_CASE(an_empty_value_is_not_a_null_marker)
{
    const auto e = decode_entry(encode_entry(sample(), ""));
    BOOST_REQUIRE(e);
    BOOST_TEST(!e->null);
    BOOST_TEST(e->value.empty());
}

BOOST_AUTO_TEST_CASE(the_largest_token_round_trips)
{
    auto big = sample();
    big.token = std::uint64_t(INT64_MAX);
    const auto e = decode_entry(encode_entry(big, "x"));
    BOOST_REQUIRE(e);
    BOOST_TEST(e->token == std::uint64_t(INT64_MAX));
}

BOOST_AUTO_TEST_CASE(anything_not_in_the_format_is_a_miss)
{
    for (const std::string bad : {
             "", "plain value", "rlc1",
             "rlc1 v 42 1 2 3",                      // no newline
             "rlc1 x 42 1 2 3\nv",                   // unknown kind
             "rlc2 v 42 1 2 3\nv",                   // another version
             "rlc1 v 042 1 2 3\nv",                  // leading zero
             "rlc1 v -1 1 2 3\nv",                   // negative
             "rlc1 v 4a 1 2 3\nv",                   // not a number
             "rlc1 v 42 1 2\nv",                     // a field missing
             "rlc1 v 42  1 2 3\nv",                  // an empty field
             "rlc1 v 9223372036854775808 1 2 3\nv",  // past INT64_MAX
             "rlc1 n 42 1 2 3\nbytes",               // a null marker with bytes
             "rlc1 v 42 1 9999999999999 3\nv",       // past the system clock's range (2262)
         })
        BOOST_TEST(!decode_entry(bad), bad);
}
