// The rate limiter's pure parts, without a server: how a script's reply reads as a decision, what acquire does
// after each answer, GCRA's exact integer units, and which arguments are refused before any I/O.
#include "primitives/rate_limit/rate_arguments.hpp"
#include "primitives/rate_limit/rate_scripts.hpp"
#include "primitives/rate_limit/rate_wait.hpp"

#include <boost/test/unit_test.hpp>

#include <common/fakes/resp_values.hpp>
#include <common/models/rate_models.hpp>
#include <limits>

namespace scripts = redlock::detail::rate_scripts;
using namespace std::chrono_literals;
using redlock::rate_decision;
using redlock::rate_limit;
using redlock::rate_strategy;
using redlock::detail::vote;
using redlock::test::array;
using redlock::test::error_reply;
using redlock::test::integer;
using outcome = rate_decision::outcome;
using step = redlock::detail::rate_wait_step::kind;

namespace {

redlock::response reply(std::int64_t limited, std::int64_t limit, std::int64_t remaining, std::int64_t retry,
                        std::int64_t reset, std::int64_t now = 1'700'000'000'123'456)
{
    return {
        array({integer(limited), integer(limit), integer(remaining), integer(retry), integer(reset), integer(now)})};
}

rate_limit gcra(std::int64_t rate, std::chrono::milliseconds period, std::int64_t burst)
{
    rate_limit l;
    l.rate = rate;
    l.period = period;
    l.burst = burst;
    return l;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_reply_reads_as_allowed_limited_or_never)
{
    const auto allowed = scripts::parse_decision(reply(0, 6, 5, -1, 100));
    BOOST_REQUIRE(allowed);
    BOOST_TEST((allowed->result == outcome::allowed));
    BOOST_TEST(allowed->allowed());
    BOOST_TEST(!allowed->limited());
    BOOST_TEST(allowed->limit == 6);
    BOOST_TEST(allowed->remaining == 5);
    BOOST_TEST(allowed->retry_after.count() == -1);
    BOOST_TEST(allowed->reset_after.count() == 100);
    BOOST_TEST(allowed->server_time.count() == 1'700'000'000'123'456);

    const auto limited = scripts::parse_decision(reply(1, 6, 0, 17, 600));
    BOOST_REQUIRE(limited);
    BOOST_TEST((limited->result == outcome::limited));
    BOOST_TEST(limited->limited());
    BOOST_TEST(limited->retry_after.count() == 17);

    // Limited with no retry: the cost is above the limit, and no wait helps (CL.THROTTLE's -1).
    const auto never = scripts::parse_decision(reply(1, 6, 3, -1, 300));
    BOOST_REQUIRE(never);
    BOOST_TEST((never->result == outcome::never));
    BOOST_TEST(never->limited());
    BOOST_TEST(never->remaining == 3);  // what other calls still have

    BOOST_TEST((scripts::classify_decision({}, reply(0, 6, 5, -1, 100)) == vote::yes));
    BOOST_TEST((scripts::classify_decision({}, reply(1, 6, 0, 17, 600)) == vote::no));
    BOOST_TEST((scripts::classify_decision({}, reply(1, 6, 3, -1, 300)) == vote::no));
}

BOOST_AUTO_TEST_CASE(anything_but_a_well_formed_decision_is_a_failed_call)
{
    using redlock::response;
    BOOST_TEST(!scripts::parse_decision(response{}));
    BOOST_TEST(!scripts::parse_decision(response{integer(1)}));
    BOOST_TEST(!scripts::parse_decision(response{error_reply("ERR Error running script")}));
    BOOST_TEST(!scripts::parse_decision(response{array({integer(0), integer(6), integer(5), integer(-1)})}));
    BOOST_TEST(!scripts::parse_decision(reply(2, 6, 5, -1, 100)));   // limited is 0 or 1
    BOOST_TEST(!scripts::parse_decision(reply(0, 0, 5, -1, 100)));   // a limit below 1
    BOOST_TEST(!scripts::parse_decision(reply(0, 6, -1, -1, 100)));  // negative remaining
    BOOST_TEST(!scripts::parse_decision(reply(0, 6, 5, 20, 100)));   // allowed with a retry
    BOOST_TEST(!scripts::parse_decision(reply(1, 6, 0, -2, 100)));
    BOOST_TEST(!scripts::parse_decision(reply(0, 6, 5, -1, -1)));      // negative reset
    BOOST_TEST(!scripts::parse_decision(reply(0, 6, 5, -1, 100, 0)));  // no server time
    auto text = reply(0, 6, 5, -1, 100);
    text[0].elements[2] = redlock::test::bulk("five");
    BOOST_TEST(!scripts::parse_decision(text));
    BOOST_TEST((scripts::classify_decision({}, text) == vote::error));
    BOOST_TEST(
        (scripts::classify_decision(make_error_code(redlock::error::timeout), reply(0, 6, 5, -1, 100)) == vote::error));
}

BOOST_AUTO_TEST_CASE(acquire_sleeps_the_retry_after_when_the_wait_covers_it_and_gives_up_at_once_otherwise)
{
    rate_decision d;
    d.result = outcome::allowed;
    BOOST_TEST((redlock::detail::after_decision(d, 0ms).what == step::admitted));

    d.result = outcome::limited;
    d.retry_after = 40ms;
    auto s = redlock::detail::after_decision(d, 1000ms);
    BOOST_TEST((s.what == step::pause));
    BOOST_TEST(s.pause.count() == 40);
    BOOST_TEST((redlock::detail::after_decision(d, 40ms).what == step::pause));  // just covered
    BOOST_TEST((redlock::detail::after_decision(d, 39ms).what == step::give_up));
    BOOST_TEST((redlock::detail::after_decision(d, 0ms).what == step::give_up));
    BOOST_TEST((redlock::detail::after_decision(d, std::chrono::milliseconds::max()).what == step::pause));

    // A node's retry_after of ages (or a malformed one) never reaches a timer unbounded.
    d.retry_after = std::chrono::milliseconds::max();
    s = redlock::detail::after_decision(d, std::chrono::milliseconds::max());
    BOOST_TEST((s.what == step::pause));
    BOOST_TEST((s.pause == redlock::detail::longest_pause));

    d.result = outcome::never;
    d.retry_after = -1ms;
    BOOST_TEST((redlock::detail::after_decision(d, std::chrono::milliseconds::max()).what == step::give_up));
}

BOOST_AUTO_TEST_CASE(a_failed_call_is_asked_again_every_100_ms_while_the_wait_lasts)
{
    auto s = redlock::detail::after_failure(1000ms);
    BOOST_TEST((s.what == step::pause));
    BOOST_TEST(s.pause.count() == 100);
    s = redlock::detail::after_failure(30ms);
    BOOST_TEST((s.what == step::pause));
    BOOST_TEST(s.pause.count() == 30);  // not past the deadline
    BOOST_TEST((redlock::detail::after_failure(0ms).what == step::give_up));
    BOOST_TEST((redlock::detail::after_failure(-5ms).what == step::give_up));
}

// The interval (period / rate) is a whole number of units, whatever the rate: exact sums in the script.
BOOST_AUTO_TEST_CASE(gcra_units_make_the_interval_a_whole_number)
{
    auto u = redlock::detail::gcra_units_of(gcra(10, 1000ms, 5));
    BOOST_REQUIRE(u);
    BOOST_TEST(u->per_us == 1);  // 100 ms per unit: microseconds suffice
    BOOST_TEST(u->interval == 100'000);
    BOOST_TEST(u->capacity == 6);

    u = redlock::detail::gcra_units_of(gcra(3, 1000ms, 0));  // 333333.33... us
    BOOST_REQUIRE(u);
    BOOST_TEST(u->per_us == 3);
    BOOST_TEST(u->interval == 1'000'000);

    u = redlock::detail::gcra_units_of(gcra(10'000'000, 1000ms, 1'000'000));  // bytes per second: 0.1 us each
    BOOST_REQUIRE(u);
    BOOST_TEST(u->per_us == 10);
    BOOST_TEST(u->interval == 1);

    BOOST_TEST(!redlock::detail::gcra_units_of(gcra(1, std::chrono::hours(24 * 30), 1'000'000)));  // beyond 2^50
    BOOST_TEST(!redlock::detail::gcra_units_of(gcra(1, 1000ms, std::numeric_limits<std::int64_t>::max())));
    BOOST_TEST(!redlock::detail::gcra_units_of(gcra(0, 1000ms, 0)));
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_named)
{
    using redlock::detail::invalid_rate_arguments;
    const auto ok = gcra(10, 1000ms, 5);
    BOOST_TEST(invalid_rate_arguments("k", ok, 1, true).empty());
    BOOST_TEST(invalid_rate_arguments("k", ok, 6, true).empty());   // burst + 1: the most one call may take
    BOOST_TEST(invalid_rate_arguments("k", ok, 7, false).empty());  // asked at once: the answer says "never"
    BOOST_TEST(invalid_rate_arguments("k", ok, 7, true).find("no wait can admit it") != std::string::npos);

    BOOST_TEST(invalid_rate_arguments("", ok, 1, false) == "the limiter's key is empty");
    BOOST_TEST(invalid_rate_arguments("k", gcra(0, 1000ms, 5), 1, false) == "rate must be positive");
    BOOST_TEST(invalid_rate_arguments("k", gcra(-3, 1000ms, 5), 1, false) == "rate must be positive");
    BOOST_TEST(!invalid_rate_arguments("k", gcra(rate_limit::max_rate + 1, 1000ms, 0), 1, false).empty());
    BOOST_TEST(invalid_rate_arguments("k", gcra(10, 0ms, 5), 1, false) == "period must be positive");
    BOOST_TEST(!invalid_rate_arguments("k", gcra(10, rate_limit::max_period + 1ms, 0), 1, false).empty());
    BOOST_TEST(invalid_rate_arguments("k", gcra(10, 1000ms, -1), 1, false) == "burst must not be negative");
    BOOST_TEST(invalid_rate_arguments("k", gcra(1, std::chrono::hours(24 * 30), 1'000'000), 1, false)
                   .starts_with("burst too large"));
    BOOST_TEST(invalid_rate_arguments("k", ok, 0, false) == "cost must be positive");
    BOOST_TEST(invalid_rate_arguments("k", ok, -1, false) == "cost must be positive");

    auto window = gcra(100, 60'000ms, 0);
    window.strategy = rate_strategy::fixed_window;
    BOOST_TEST(invalid_rate_arguments("k", window, 100, true).empty());
    BOOST_TEST(!invalid_rate_arguments("k", window, 101, true).empty());
    window.burst = 5;
    BOOST_TEST(invalid_rate_arguments("k", window, 1, false) == "burst is for GCRA only: a window's burst is its rate");
    window.burst = 0;
    window.strategy = rate_strategy::sliding_window;
    window.wait = -1ms;
    BOOST_TEST(invalid_rate_arguments("k", window, 1, false) == "wait must not be negative");
    window.wait = 0ms;
    window.node_timeout = 0ms;
    BOOST_TEST(invalid_rate_arguments("k", window, 1, false) == "node_timeout must be positive");
}

BOOST_AUTO_TEST_CASE(each_strategy_sends_one_script_call_with_its_keys_in_one_slot)
{
    auto l = gcra(10, 1000ms, 5);
    auto req = scripts::decision_request("api:{user}:42", l, 2);
    BOOST_TEST(req.commands() == 1u);
    BOOST_TEST(req.script_calls().size() == 1u);
    BOOST_TEST(req.timeout().count() == 100);
    // numkeys, the key, then interval, units per us, capacity, cost
    BOOST_TEST((req.script_params(req.script_calls()[0]) ==
                std::vector<std::string>{"1", "api:{user}:42", "100000", "1", "6", "2"}));

    l.strategy = rate_strategy::fixed_window;
    l.burst = 0;
    req = scripts::decision_request("k", l, 3);
    BOOST_TEST((req.script_params(req.script_calls()[0]) == std::vector<std::string>{"1", "k", "10", "1000", "3"}));

    l.strategy = rate_strategy::sliding_window;
    req = scripts::decision_request("k", l, 1);
    BOOST_TEST((req.script_params(req.script_calls()[0]) ==
                std::vector<std::string>{"2", "k", "{k}:total", "10", "1000000", "1"}));
    BOOST_TEST(scripts::log_total_key("a{b}c") == "a{b}c:total");
}

// The reference the integration tests hold the scripts to, anchored to redis-cell's documented example:
// CL.THROTTLE user123 15 30 60 1 -> 0, 16, 15, -1, 2 (seconds there, milliseconds here).
BOOST_AUTO_TEST_CASE(the_gcra_model_gives_cl_throttles_documented_answers)
{
    redlock::test::gcra_model model(30, 60'000ms, 15);
    const std::int64_t now = 1'700'000'000'000'000;
    auto d = model.decide(now, 1);
    BOOST_TEST((d.result == outcome::allowed));
    BOOST_TEST(d.limit == 16);
    BOOST_TEST(d.remaining == 15);
    BOOST_TEST(d.retry_after.count() == -1);
    BOOST_TEST(d.reset_after.count() == 2000);
    for (int i = 0; i < 15; ++i) BOOST_TEST(model.decide(now, 1).allowed());
    d = model.decide(now, 1);  // the 17th at once: one interval later
    BOOST_TEST((d.result == outcome::limited));
    BOOST_TEST(d.remaining == 0);
    BOOST_TEST(d.retry_after.count() == 2000);
    BOOST_TEST(d.reset_after.count() == 32'000);
    BOOST_TEST(model.decide(now + 2'000'000, 1).allowed());
    d = model.decide(now + 2'000'000, 17);  // above burst + 1: never, and nothing taken
    BOOST_TEST((d.result == outcome::never));
    BOOST_TEST(d.retry_after.count() == -1);
    BOOST_TEST(d.reset_after.count() == 32'000);
}
