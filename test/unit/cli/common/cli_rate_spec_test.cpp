// --rate N/PERIOD as `redlock throttle` and `redlock bench --scenario limiter` read it.
#include "cli/common/rate_spec.hpp"

#include <boost/test/unit_test.hpp>

using redlock::cli::format_rate;
using redlock::cli::parse_rate;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(a_rate_is_a_count_per_unit_or_per_duration)
{
    auto r = parse_rate("10/s");
    BOOST_REQUIRE(r);
    BOOST_TEST(r->count == 10);
    BOOST_TEST(r->period.count() == 1000);
    BOOST_TEST(parse_rate("100/m")->period.count() == 60'000);
    BOOST_TEST(parse_rate("5000/h")->period.count() == 3'600'000);
    BOOST_TEST(parse_rate("20000/d")->period.count() == 86'400'000);
    BOOST_TEST(parse_rate("3/1500ms")->period.count() == 1500);
    BOOST_TEST(parse_rate("7/10s")->period.count() == 10'000);
    BOOST_TEST(parse_rate("7/250")->period.count() == 250);  // plain milliseconds, as every DURATION
    BOOST_TEST(parse_rate("1000000000000/s")->count == 1'000'000'000'000);
}

BOOST_AUTO_TEST_CASE(anything_else_is_not_a_rate)
{
    for (const char* bad : {"", "10", "/s", "10/", "0/s", "-1/s", "+1/s", "1.5/s", "10/x", "10/0ms", "10/-1s", "10 /s",
                            "1000000000001/s", "99999999999999999999/s", "1/31d", "1/721h", "s/10"})
        BOOST_TEST(!parse_rate(bad), "'" << bad << "'");
}

BOOST_AUTO_TEST_CASE(a_rate_is_printed_as_it_is_read)
{
    for (const char* text : {"10/s", "100/m", "5/h", "1/d", "3/1500ms", "7/10s", "2/2m"})
        BOOST_TEST(format_rate(*parse_rate(text)) == text);
}
