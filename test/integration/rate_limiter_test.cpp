// The rate limiter on a real node: every field of each strategy's decisions against a reference model fed the
// node's own time, the burst, a cost above the limit, the fixed window's double burst across a window's end
// (which the sliding log does not allow), a TTL on every key, a node clock stepped back, waiting without polling.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <common/models/rate_models.hpp>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <sstream>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::rate_decision;
using redlock::rate_limit;
using redlock::rate_strategy;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::run_coro;
using redlock::test::sleep_for;
using ms = std::chrono::milliseconds;
using outcome = rate_decision::outcome;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

std::string describe(const rate_decision& d)
{
    std::ostringstream out;
    const char* what = d.result == outcome::allowed ? "allowed" : d.result == outcome::limited ? "limited" : "never";
    out << "{" << what << ", limit " << d.limit << ", remaining " << d.remaining << ", retry " << d.retry_after.count()
        << " ms, reset " << d.reset_after.count() << " ms, at " << d.server_time.count() << " us}";
    return out.str();
}

rate_limit make_limit(rate_strategy s, std::int64_t rate, ms period, std::int64_t burst = 0)
{
    rate_limit l;
    l.strategy = s;
    l.rate = rate;
    l.period = period;
    l.burst = burst;
    l.node_timeout = 1000ms;  // a loaded test machine must not turn calls into timeouts
    return l;
}

struct step {
    std::int64_t cost;
    ms pause_after;
};

// Whether `d` is `expected`, but for its two durations, which may each be off by up to `slack`.
bool same_within(const rate_decision& d, const rate_decision& expected, ms slack)
{
    auto near = [slack](ms a, ms b) { return a - b <= slack && b - a <= slack; };
    return d.result == expected.result && d.limit == expected.limit && d.remaining == expected.remaining &&
           d.server_time == expected.server_time && near(d.retry_after, expected.retry_after) &&
           near(d.reset_after, expected.reset_after);
}

// Runs `steps` as try_acquire calls and compares each decision with model.decide(its server time, cost); says
// how many of each outcome it saw. With a `slack`, retry_after and reset_after may be off by that much, and
// `inexact` counts the decisions that were.
template <class Model>
asio::awaitable<std::array<int, 3>> check_against(redlock::rate_limiter& limiter, Model& model,
                                                  const std::vector<step>& steps, ms slack = 0ms,
                                                  int* inexact = nullptr)
{
    std::array<int, 3> seen{};
    for (std::size_t i = 0; i < steps.size(); ++i) {
        redlock::diagnostics diag;
        auto [ec, d] = co_await limiter.async_try_acquire(steps[i].cost, diag, use_tuple);
        BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
        const auto expected = model.decide(d.server_time.count(), steps[i].cost);
        BOOST_TEST(same_within(d, expected, slack), "call " << i << " (cost " << steps[i].cost << "): " << describe(d)
                                                            << ", model " << describe(expected));
        if (inexact && d != expected) ++*inexact;
        ++seen[static_cast<std::size_t>(d.result)];
        if (steps[i].pause_after > 0ms) co_await sleep_for(steps[i].pause_after);
    }
    co_return seen;
}

// The largest number of units admitted in any span of `period` (times in microseconds, a span (t - period, t]).
std::int64_t most_in_any_period(const std::vector<std::pair<std::int64_t, std::int64_t>>& admitted, ms period)
{
    std::int64_t most = 0;
    for (const auto& [end, c] : admitted) {
        std::int64_t units = 0;
        for (const auto& [t, cost] : admitted)
            if (t <= end && t > end - period.count() * 1000) units += cost;
        most = std::max(most, units);
    }
    return most;
}

}  // namespace

BOOST_AUTO_TEST_CASE(gcra_decisions_match_the_reference_model_field_by_field)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await store.async_connect(asio::use_awaitable);
        // 7 per second: an interval of 142857.14... us, which no whole number of microseconds is.
        {
            const std::vector<step> steps{{1, 0ms},   {1, 0ms},   {2, 30ms}, {1, 0ms},   {4, 150ms}, {5, 0ms},
                                          {1, 60ms},  {3, 0ms},   {1, 0ms},  {1, 400ms}, {4, 0ms},   {1, 0ms},
                                          {2, 140ms}, {1, 145ms}, {1, 0ms},  {4, 700ms}, {4, 0ms},   {1, 10ms}};
            auto limit = make_limit(rate_strategy::gcra, 7, 1000ms, 3);
            redlock::rate_limiter limiter(store, "gcra:seven", limit);
            redlock::test::gcra_model model(7, 1000ms, 3);
            auto seen = co_await check_against(limiter, model, steps);
            BOOST_TEST(seen[0] > 0);  // each outcome came up
            BOOST_TEST(seen[1] > 0);
            BOOST_TEST(seen[2] > 0);
        }
        // Bytes: 10 MB/s with a 1 MB burst, 0.1 us per unit.
        {
            const std::vector<step> steps{{300'000, 0ms},   {500'000, 0ms},     {400'000, 20ms},
                                          {1'000'001, 0ms}, {250'000, 0ms},     {999'999, 30ms},
                                          {1, 0ms},         {1'000'000, 120ms}, {700'000, 0ms}};
            auto limit = make_limit(rate_strategy::gcra, 10'000'000, 1000ms, 999'999);
            redlock::rate_limiter limiter(store, "gcra:bytes", limit);
            redlock::test::gcra_model model(10'000'000, 1000ms, 999'999);
            co_await check_against(limiter, model, steps);
        }
        // One a minute, no burst.
        {
            const std::vector<step> steps{{1, 0ms}, {1, 5ms}, {2, 0ms}, {1, 0ms}};
            redlock::rate_limiter limiter(store, "gcra:slow", make_limit(rate_strategy::gcra, 1, 60'000ms));
            redlock::test::gcra_model model(1, 60'000ms, 0);
            co_await check_against(limiter, model, steps);
        }
    });
}

BOOST_AUTO_TEST_CASE(sliding_window_decisions_match_the_reference_model_field_by_field)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await store.async_connect(asio::use_awaitable);
        const std::vector<step> steps{{1, 0ms}, {2, 40ms},  {1, 0ms}, {1, 100ms}, {3, 0ms},
                                      {6, 0ms}, {2, 90ms},  {1, 0ms}, {2, 120ms}, {5, 0ms},
                                      {1, 0ms}, {1, 310ms}, {4, 0ms}, {2, 0ms},   {1, 0ms}};
        redlock::rate_limiter limiter(store, "log", make_limit(rate_strategy::sliding_window, 5, 300ms));
        redlock::test::sliding_log_model model(5, 300ms);
        auto seen = co_await check_against(limiter, model, steps);
        BOOST_TEST(seen[0] > 0);
        BOOST_TEST(seen[1] > 0);
        BOOST_TEST(seen[2] > 0);
    });
}

// The fixed window's durations are the counter's PTTL, read on the node's millisecond clock a few microseconds
// after TIME (Redis 7.0 reads the clock afresh for PEXPIRE and PTTL inside a script): when a millisecond
// boundary falls between the two, the window's end or its TTL reads 1 ms off the model's. That is allowed on
// retry_after and reset_after, on any call (how many cross a boundary depends on the machine's load: 7 of 18
// once under a full test run). A window whose expiry moves (a PEXPIRE on every admission) is tens of ms off.
BOOST_AUTO_TEST_CASE(fixed_window_decisions_match_the_reference_model_field_by_field)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await store.async_connect(asio::use_awaitable);
        // 5 a second. A window opened, filled, refused, overshot (never); then past its end (1100 ms) a cost
        // above the rate with no window open, a new window opened by a call of the whole rate, and so on.
        const std::vector<step> steps{{1, 0ms}, {1, 30ms},   {2, 0ms},    {3, 0ms}, {6, 0ms},  {1, 100ms},
                                      {1, 0ms}, {2, 200ms},  {1, 1100ms}, {6, 0ms}, {4, 50ms}, {2, 0ms},
                                      {1, 0ms}, {1, 1100ms}, {6, 0ms},    {5, 0ms}, {1, 0ms},  {1, 10ms}};
        redlock::rate_limiter limiter(store, "window", make_limit(rate_strategy::fixed_window, 5, 1000ms));
        redlock::test::fixed_window_model model(5, 1000ms);
        int inexact = 0;
        auto seen = co_await check_against(limiter, model, steps, 1ms, &inexact);
        BOOST_TEST_MESSAGE(inexact << " of " << steps.size() << " decisions 1 ms off the model");
        BOOST_TEST(seen[0] > 0);
        BOOST_TEST(seen[1] > 0);
        BOOST_TEST(seen[2] > 0);
    });
}

// GCRA's burst: burst + 1 at once after an idle spell, then one per interval; the limiter says when.
BOOST_AUTO_TEST_CASE(gcra_admits_burst_plus_one_at_once_then_one_per_interval)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        // One unit a second: the five calls of the burst fit in one interval even on a loaded machine.
        redlock::rate_limiter limiter(store, "burst", make_limit(rate_strategy::gcra, 1, 1000ms, 4));
        for (std::int64_t left = 4; left >= 0; --left) {
            auto [ec, d] = co_await limiter.async_try_acquire(1, use_tuple);
            BOOST_REQUIRE(!ec);
            BOOST_TEST(d.allowed(), describe(d));
            BOOST_TEST(d.limit == 5);
            BOOST_TEST(d.remaining == left);
        }
        auto [ec, d] = co_await limiter.async_try_acquire(1, use_tuple);
        BOOST_TEST((d.result == outcome::limited), describe(d));
        BOOST_TEST((d.retry_after > 0ms && d.retry_after <= 1000ms), describe(d));  // one interval at most
        co_await sleep_for(d.retry_after);
        auto [again_ec, again] = co_await limiter.async_try_acquire(1, use_tuple);
        BOOST_TEST(again.allowed(), describe(again));
    });
}

// A cost the limit can never admit: "never" at once, nothing taken; the whole limit from idle is admitted.
BOOST_AUTO_TEST_CASE(a_cost_above_the_limit_is_never_admitted_and_takes_nothing)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        for (auto s : {rate_strategy::gcra, rate_strategy::fixed_window, rate_strategy::sliding_window}) {
            const bool gcra = s == rate_strategy::gcra;
            const auto limit = make_limit(s, gcra ? 10 : 6, 10'000ms, gcra ? 5 : 0);  // 6 per call at most
            const std::string key = "never:" + std::to_string(static_cast<int>(s));
            redlock::rate_limiter limiter(store, key, limit);
            redlock::diagnostics diag;
            auto [ec, d] = co_await limiter.async_try_acquire(7, use_tuple);
            BOOST_REQUIRE(!ec);
            BOOST_TEST((d.result == outcome::never), describe(d));
            BOOST_TEST(d.retry_after.count() == -1);
            BOOST_TEST(d.limit == 6);
            BOOST_TEST(d.remaining == 6);  // nothing was taken
            BOOST_TEST(nodes[0].cli({"EXISTS", key}) == "0");
            auto [wait_ec, none] = co_await limiter.async_acquire(7, diag, use_tuple);
            BOOST_TEST(wait_ec == redlock::error::invalid_argument);
            BOOST_TEST(diag.client_message().find("no wait can admit it") != std::string_view::npos);
            auto [all_ec, all] = co_await limiter.async_try_acquire(6, use_tuple);  // the whole limit, from idle
            BOOST_TEST(all.allowed(), describe(all));
            BOOST_TEST(all.remaining == 0);
        }
    });
}

// The fixed window's known weakness, shown: its count resets when the window ends, so a client that used the
// end of one window and the start of the next passes nearly twice the rate within one period. The sliding log,
// run on the same schedule, never passes more than the rate in any period.
BOOST_AUTO_TEST_CASE(a_fixed_window_passes_up_to_twice_its_rate_across_a_window_end_and_a_sliding_log_does_not)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        constexpr std::int64_t rate = 5;
        constexpr ms period = 1000ms;
        std::map<rate_strategy, std::int64_t> most;
        for (auto s : {rate_strategy::fixed_window, rate_strategy::sliding_window}) {
            redlock::rate_limiter limiter(store, "window:" + std::to_string(static_cast<int>(s)),
                                          make_limit(s, rate, period));
            std::vector<std::pair<std::int64_t, std::int64_t>> admitted;
            // One call opens the window; near its end, take what is left; then everything the limiter lets through
            // as soon as it does, until half a period after the first window ended.
            auto [ec, first] = co_await limiter.async_try_acquire(1, use_tuple);
            BOOST_REQUIRE(first.allowed());
            admitted.emplace_back(first.server_time.count(), 1);
            co_await sleep_for(period - 150ms);
            const auto until = first.server_time.count() + (period + period / 2).count() * 1000;
            for (;;) {
                auto [ec2, d] = co_await limiter.async_try_acquire(1, use_tuple);
                BOOST_REQUIRE(!ec2);
                if (d.server_time.count() >= until) break;
                if (d.allowed())
                    admitted.emplace_back(d.server_time.count(), 1);
                else
                    co_await sleep_for(std::max(d.retry_after, 1ms));
            }
            most[s] = most_in_any_period(admitted, period);
        }
        BOOST_TEST_MESSAGE("most in one period: fixed window " << most[rate_strategy::fixed_window] << ", sliding log "
                                                               << most[rate_strategy::sliding_window]);
        BOOST_TEST(most[rate_strategy::fixed_window] >= 2 * rate - 1);
        BOOST_TEST(most[rate_strategy::sliding_window] == rate);
    });
}

BOOST_AUTO_TEST_CASE(every_key_the_limiter_writes_has_a_ttl_and_is_gone_once_idle_for_a_period)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        for (auto s : {rate_strategy::gcra, rate_strategy::fixed_window, rate_strategy::sliding_window}) {
            // GCRA: 3 units of 333 ms each, a TTL of about a second, as the windows' (redis-cli takes a while).
            const bool gcra = s == rate_strategy::gcra;
            redlock::rate_limiter limiter(store, "ttl:" + std::to_string(static_cast<int>(s)),
                                          make_limit(s, gcra ? 3 : 10, 1000ms, gcra ? 2 : 0));
            for (int i = 0; i < 4; ++i) co_await limiter.async_try_acquire(1, use_tuple);
        }
        std::istringstream keys(nodes[0].cli({"KEYS", "*"}));
        int count = 0;
        for (std::string key; std::getline(keys, key);) {
            const long pttl = std::stol(nodes[0].cli({"PTTL", key}));
            BOOST_TEST((pttl > 0 && pttl <= 1000), key << ": PTTL " << pttl);
            ++count;
        }
        BOOST_TEST(count == 4);  // gcra, fixed window, the log and its total
        co_await sleep_for(1100ms);
        BOOST_TEST(nodes[0].cli({"DBSIZE"}) == "0");
    });
}

// A counter some other writer left without an expiry would never reset: the fixed window gives it one.
BOOST_AUTO_TEST_CASE(a_fixed_window_counter_found_without_expiry_gets_one)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    nodes[0].cli({"SET", "legacy", "3"});
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::rate_limiter limiter(store, "legacy", make_limit(rate_strategy::fixed_window, 10, 5000ms));
        auto [ec, d] = co_await limiter.async_try_acquire(1, use_tuple);
        BOOST_TEST(d.allowed(), describe(d));
        BOOST_TEST(d.remaining == 6);
        const long pttl = std::stol(nodes[0].cli({"PTTL", "legacy"}));
        BOOST_TEST((pttl > 0 && pttl <= 5000), "PTTL " << pttl);
    });
}

// The limiter trusts the node's clock only. A clock stepped back by a minute must not lock a subject out for a
// minute: a GCRA timestamp ahead of the node's clock counts for at most one full bucket.
BOOST_AUTO_TEST_CASE(a_node_clock_stepped_back_costs_at_most_one_bucket_not_the_step)
{
    redlock::test::node_options options;
    options.clock_shim = true;
    redlock::test::redis_node node(options);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), redlock::test::fast_reconnecting(node.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::rate_limiter limiter(store, "stepped", make_limit(rate_strategy::gcra, 10, 1000ms, 1));
        auto [ec, first] = co_await limiter.async_try_acquire(1, use_tuple);
        BOOST_REQUIRE(first.allowed());
        node.set_clock(-60'000);
        auto [ec2, d] = co_await limiter.async_try_acquire(2, use_tuple);
        BOOST_TEST((d.result == outcome::limited), describe(d));
        BOOST_TEST(d.retry_after <= 200ms, describe(d));  // a full bucket's refill at most, not 60 s
        BOOST_TEST(d.reset_after <= 200ms, describe(d));
        co_await sleep_for(d.retry_after);
        auto [ec3, later] = co_await limiter.async_try_acquire(2, use_tuple);
        BOOST_TEST(later.allowed(), describe(later));
    });
}

// acquire waits out the rate: n calls of a 20/s limiter without burst take (n - 1) intervals, each waiting the
// retry_after it was told: at most one refused call per admission (no poll).
BOOST_AUTO_TEST_CASE(acquire_waits_out_the_rate_with_one_refused_call_per_admission_at_most)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await store.async_connect(asio::use_awaitable);
        auto limit = make_limit(rate_strategy::gcra, 20, 1000ms);
        limit.wait = 5000ms;
        redlock::rate_limiter limiter(store, "paced", limit);
        const long calls_before = nodes[0].command_stat("evalsha") + nodes[0].command_stat("eval");
        std::vector<std::int64_t> times;
        for (int i = 0; i < 8; ++i) {
            redlock::diagnostics diag;
            auto [ec, d] = co_await limiter.async_acquire(1, diag, use_tuple);
            BOOST_REQUIRE_MESSAGE(!ec, ec.message() << ": " << diag.message());
            times.push_back(d.server_time.count());
        }
        for (std::size_t i = 1; i < times.size(); ++i)
            BOOST_TEST(times[i] - times[i - 1] >= 50'000, "admission " << i << " after " << times[i] - times[i - 1]);
        const long calls = nodes[0].command_stat("evalsha") + nodes[0].command_stat("eval") - calls_before;
        BOOST_TEST(calls <= 2 * 8 - 1, calls << " calls for 8 admissions");
    });
}

// A node that lost its scripts (restart, SCRIPT FLUSH) runs them again from their text.
BOOST_AUTO_TEST_CASE(a_node_that_forgot_the_scripts_still_decides)
{
    cluster nodes(1);
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        for (auto s : {rate_strategy::gcra, rate_strategy::fixed_window, rate_strategy::sliding_window}) {
            redlock::rate_limiter limiter(store, "flushed:" + std::to_string(static_cast<int>(s)),
                                          make_limit(s, 10, 1000ms, s == rate_strategy::gcra ? 5 : 0));
            auto [ec, d] = co_await limiter.async_try_acquire(1, use_tuple);
            BOOST_REQUIRE(d.allowed());
            nodes[0].cli({"SCRIPT", "FLUSH"});
            auto [again_ec, again] = co_await limiter.async_try_acquire(1, use_tuple);
            BOOST_TEST(!again_ec, again_ec.message());
            BOOST_TEST(again.remaining == d.remaining - 1);
        }
    });
}

// Calls from several threads at once (the limiter hops onto its deployment's strand): exactly the burst passes.
BOOST_AUTO_TEST_CASE(calls_from_several_threads_share_one_limit)
{
    cluster nodes(1);
    asio::io_context ctx(4);
    auto work = asio::make_work_guard(ctx);
    redlock::redis store(ctx.get_executor(), configs(nodes).front());
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back([&ctx] { ctx.run(); });
    constexpr int calls = 200;
    std::atomic<int> admitted{0}, limited{0}, failed{0}, done{0};
    {
        redlock::rate_limiter limiter(store, "threads", make_limit(rate_strategy::gcra, 1, 60'000ms, 24));
        for (int i = 0; i < calls; ++i)
            asio::post(ctx, [&] {
                limiter.async_try_acquire(1, [&](redlock::error_code ec, rate_decision d) {
                    ++(ec ? failed : d.allowed() ? admitted : limited);
                    ++done;
                });
            });
        BOOST_REQUIRE(redlock::test::wait_until([&] { return done == calls; }, 20'000ms));
    }
    store.close();
    work.reset();
    for (auto& t : threads) t.join();
    BOOST_TEST(failed == 0);
    BOOST_TEST(admitted == 25);
    BOOST_TEST(limited == calls - 25);
}
