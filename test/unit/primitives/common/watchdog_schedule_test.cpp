// When the keeper of a lease extends it, retries, stops, or declares it lost.
#include "primitives/common/watchdog_schedule.hpp"

#include <boost/test/unit_test.hpp>

using namespace std::chrono_literals;
using redlock::detail::next_watchdog_step;
using redlock::detail::watchdog_plan;
using redlock::detail::watchdog_step;
using action = watchdog_step::action;
using time_point = std::chrono::steady_clock::time_point;

namespace {
const time_point t0 = time_point(std::chrono::seconds(100));
watchdog_plan plan_for(std::chrono::milliseconds ttl)
{
    watchdog_plan p;
    p.enabled = true;
    p.interval = ttl / 3;
    p.retry = 50ms;
    return p;
}
}  // namespace

BOOST_AUTO_TEST_CASE(without_the_watchdog_the_lease_just_runs_out)
{
    watchdog_plan off;
    auto step = next_watchdog_step(off, t0, false, t0, t0 + 9898ms);
    BOOST_TEST((step.what == action::lose));
    BOOST_TEST((step.at == t0 + 9898ms));
}

BOOST_AUTO_TEST_CASE(extensions_come_every_third_of_the_ttl_from_the_last_grant)
{
    auto step = next_watchdog_step(plan_for(9000ms), t0, false, t0 + 1ms, t0 + 8908ms);
    BOOST_TEST((step.what == action::extend));
    BOOST_TEST((step.at == t0 + 3000ms));
}

BOOST_AUTO_TEST_CASE(a_failed_extension_is_retried_soon_until_the_validity_ends)
{
    auto step = next_watchdog_step(plan_for(9000ms), t0, true, t0 + 3010ms, t0 + 8908ms);
    BOOST_TEST((step.what == action::extend));
    BOOST_TEST((step.at == t0 + 3060ms));
    // Too close to the end for another try: the lease is lost at its validity deadline.
    auto last = next_watchdog_step(plan_for(9000ms), t0, true, t0 + 8880ms, t0 + 8908ms);
    BOOST_TEST((last.what == action::lose));
    BOOST_TEST((last.at == t0 + 8908ms));
}

BOOST_AUTO_TEST_CASE(after_a_pause_the_deadline_is_already_past)
{
    // The process slept through its extensions: the next step is the loss, at a time already gone.
    auto step = next_watchdog_step(plan_for(3000ms), t0, false, t0 + 60s, t0 + 2968ms);
    BOOST_TEST((step.what == action::extend || step.at <= t0 + 60s));
    BOOST_TEST((step.at <= t0 + 2968ms));
}

BOOST_AUTO_TEST_CASE(the_maximum_hold_time_stops_extensions)
{
    auto plan = plan_for(3000ms);
    plan.stop_extending_at = t0 + 5000ms;
    auto before = next_watchdog_step(plan, t0 + 3000ms, false, t0 + 3001ms, t0 + 5968ms);
    BOOST_TEST((before.what == action::extend));  // at t0 + 4000 ms, still before the limit
    auto after = next_watchdog_step(plan, t0 + 4000ms, false, t0 + 4001ms, t0 + 6968ms);
    BOOST_TEST((after.what == action::lose));  // t0 + 5000 ms would be at the limit
    BOOST_TEST((after.at == t0 + 6968ms));
}
