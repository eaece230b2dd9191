// The rate limiter's calls against a fake node (a redlock::redis over it): bad arguments fail before any I/O and
// never inline, a Redlock client does not even compile as a limiter's store, acquire sleeps exactly the retry_after it
// was told (no polling), gives up at once when the wait cannot cover it, retries failed calls until the wait runs
// out, a node that never answers fails the call at its deadline, and a call stops promptly when cancelled, while it
// sleeps or while the node holds its answer.
#include "common/fakes/fake_rig.hpp"

#include <redlock/rate_limiter.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <type_traits>

namespace {

namespace asio = boost::asio;
using namespace redlock;
using namespace redlock::test;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr auto use = asio::as_tuple(asio::use_awaitable);

resp::value decision(std::int64_t limited, std::int64_t remaining, std::int64_t retry, std::int64_t reset = 500)
{
    return array({integer(limited), integer(6), integer(remaining), integer(retry), integer(reset),
                  integer(1'700'000'000'000'000)});
}

rate_limit ten_per_second()
{
    rate_limit l;
    l.rate = 10;
    l.period = 1000ms;
    l.burst = 5;
    l.wait = 2000ms;
    return l;
}

long elapsed_ms(steady::time_point since)
{
    return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - since).count());
}

// Starts a call and tells whether its handler ran before the io_context did (it must not: never inline).
struct started_call {
    std::optional<error_code> ec;
    rate_decision d;
    diagnostics diag;
};

}  // namespace

BOOST_AUTO_TEST_CASE(bad_arguments_fail_with_invalid_argument_before_any_io_and_never_inline)
{
    struct bad_case {
        const char* why;
        std::string key;
        rate_limit limit;
        std::int64_t cost;
        bool wait;
    };
    auto with = [](auto change) {
        auto l = ten_per_second();
        change(l);
        return l;
    };
    const std::vector<bad_case> cases{
        {"rate 0", "k", with([](rate_limit& l) { l.rate = 0; }), 1, false},
        {"rate < 0", "k", with([](rate_limit& l) { l.rate = -10; }), 1, true},
        {"burst < 0", "k", with([](rate_limit& l) { l.burst = -1; }), 1, false},
        {"period 0", "k", with([](rate_limit& l) { l.period = 0ms; }), 1, false},
        {"cost 0", "k", ten_per_second(), 0, false},
        {"cost < 0", "k", ten_per_second(), -2, true},
        {"empty key", "", ten_per_second(), 1, false},
        {"cost above burst + 1, waiting", "k", ten_per_second(), 7, true},
        {"burst on a window", "k", with([](rate_limit& l) { l.strategy = rate_strategy::fixed_window; }), 1, false},
    };
    fake_redis_rig r;
    for (const auto& c : cases) {
        BOOST_TEST_CONTEXT(c.why)
        {
            started_call call;
            rate_limiter limiter(r.store, c.key, c.limit);
            auto done = [&call](error_code ec, rate_decision d) {
                call.ec = ec;
                call.d = d;
            };
            if (c.wait)
                limiter.async_acquire(c.cost, call.diag, done);
            else
                limiter.async_try_acquire(c.cost, call.diag, done);
            BOOST_TEST(!call.ec.has_value());  // not completed inside the initiating call
            r.ctx.restart();
            r.ctx.run_for(200ms);
            BOOST_REQUIRE(call.ec.has_value());
            BOOST_TEST(*call.ec == error::invalid_argument);
            BOOST_TEST(!call.diag.client_message().empty());
            BOOST_TEST((call.d == rate_decision{}));
        }
    }
    BOOST_TEST(r.fakes[0].received().empty());
}

// One Redis is one type: a limiter takes a redis; a Redlock client of N nodes, where no rule would be sound
// (doc/rate-limiting.md, "Over N nodes"), is refused by the compiler rather than at run time.
static_assert(std::is_constructible_v<rate_limiter, const redis&, std::string, rate_limit>);
static_assert(!std::is_constructible_v<rate_limiter, const client&, std::string, rate_limit>);
static_assert(!std::is_convertible_v<const client&, redis>);

BOOST_AUTO_TEST_CASE(try_acquire_answers_a_limited_decision_as_a_success_in_one_call)
{
    fake_redis_rig r;
    r.fakes[0].on(script_kind::other, action::reply(decision(1, 0, 250)));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        rate_limiter limiter(r.store, "k", ten_per_second());
        diagnostics diag;
        auto [ec, d] = co_await limiter.async_try_acquire(1, diag, use);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST((d.result == rate_decision::outcome::limited));
        BOOST_TEST(d.retry_after.count() == 250);
        BOOST_TEST(r.fakes[0].received().size() == 1u);
        BOOST_REQUIRE(diag.nodes().size() == 1u);
        BOOST_TEST((diag.nodes()[0].what == node_outcome::result::refused));

        // The cost above the limit: asked at once, the node's answer says "never".
        r.fakes[0].on(script_kind::other, action::reply(decision(1, 4, -1)));
        auto [never_ec, never] = co_await limiter.async_try_acquire(7, use);
        BOOST_TEST(!never_ec);
        BOOST_TEST((never.result == rate_decision::outcome::never));
    });
}

BOOST_AUTO_TEST_CASE(acquire_sleeps_the_retry_after_it_was_told_and_asks_once_more)
{
    fake_redis_rig r;
    r.fakes[0].on_sequence(script_kind::other, {action::reply(decision(1, 0, 150))}, action::reply(decision(0, 0, -1)));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        rate_limiter limiter(r.store, "k", ten_per_second());
        const auto start = steady::now();
        auto [ec, d] = co_await limiter.async_acquire(1, use);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(d.allowed());
        BOOST_TEST(elapsed_ms(start) >= 150);
        BOOST_TEST(r.fakes[0].received().size() == 2u);  // no poll in between
    });
}

BOOST_AUTO_TEST_CASE(acquire_gives_up_at_once_when_the_wait_cannot_cover_the_retry_after)
{
    fake_redis_rig r;
    r.fakes[0].on(script_kind::other, action::reply(decision(1, 0, 5000)));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto l = ten_per_second();
        l.wait = 1000ms;
        rate_limiter limiter(r.store, "k", l);
        diagnostics diag;
        const auto start = steady::now();
        auto [ec, d] = co_await limiter.async_acquire(1, diag, use);
        BOOST_TEST(ec == error::rate_limited);
        BOOST_TEST(ec == condition::not_acquired);
        BOOST_TEST(elapsed_ms(start) < 500);
        BOOST_TEST(d.retry_after.count() == 5000);  // when to come back
        BOOST_TEST(!diag.client_message().empty());
        BOOST_TEST(r.fakes[0].received().size() == 1u);
    });
}

BOOST_AUTO_TEST_CASE(a_failed_call_is_retried_until_the_wait_runs_out_then_its_error_is_reported)
{
    fake_redis_rig r;
    r.fakes[0].on(script_kind::other, action::fail(error::not_connected));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto l = ten_per_second();
        l.wait = 250ms;
        rate_limiter limiter(r.store, "k", l);
        const auto start = steady::now();
        auto [ec, d] = co_await limiter.async_acquire(1, use);
        BOOST_TEST(ec == error::not_connected, ec.message());
        BOOST_TEST(elapsed_ms(start) >= 250);
        const auto calls = r.fakes[0].received().size();
        BOOST_TEST((calls >= 3u && calls <= 4u), calls << " calls");  // every 100 ms, and at the deadline
    });
}

BOOST_AUTO_TEST_CASE(a_reply_that_is_not_a_decision_is_a_protocol_error)
{
    fake_redis_rig r;
    r.fakes[0].on(script_kind::other, action::reply(integer(1)));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        rate_limiter limiter(r.store, "k", ten_per_second());
        diagnostics diag;
        auto [ec, d] = co_await limiter.async_try_acquire(1, diag, use);
        BOOST_TEST(ec == error::protocol_error);
        BOOST_TEST(diag.client_message().find("not a rate decision") != std::string_view::npos);
    });
}

BOOST_AUTO_TEST_CASE(cancelling_a_waiting_acquire_ends_it_promptly)
{
    fake_redis_rig r;
    r.fakes[0].on(script_kind::other, action::reply(decision(1, 0, 60'000)));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto l = ten_per_second();
        l.wait = rate_limit::wait_forever;
        rate_limiter limiter(r.store, "k", l);
        asio::cancellation_signal cancel;
        std::optional<error_code> result;
        limiter.async_acquire(
            1, asio::bind_cancellation_slot(cancel.slot(), r.bind([&](error_code ec, rate_decision) { result = ec; })));
        BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].received().size() == 1u; }));
        co_await pause_for(50ms);
        const auto start = steady::now();
        cancel.emit(asio::cancellation_type::partial);
        BOOST_REQUIRE(co_await eventually([&] { return result.has_value(); }, 1000ms));
        BOOST_TEST(*result == asio::error::operation_aborted);
        BOOST_TEST(elapsed_ms(start) < 500);
        BOOST_TEST(r.fakes[0].received().size() == 1u);
    });
}

BOOST_AUTO_TEST_CASE(a_node_that_never_answers_fails_the_call_with_timeout_after_its_deadline)
{
    fake_redis_rig r;
    r.fakes[0].on(script_kind::other, action::hold());  // ignores the request's deadline, and cancellation too
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        auto l = ten_per_second();
        l.node_timeout = 100ms;
        rate_limiter limiter(r.store, "k", l);
        diagnostics diag;
        const auto start = steady::now();
        auto [ec, d] = co_await limiter.async_try_acquire(1, diag, use);
        BOOST_TEST(ec == error::timeout, ec.message());
        // The request's deadline plus the fan-out's backstop margin (1 s), not forever.
        BOOST_TEST(elapsed_ms(start) >= 1100);
        BOOST_TEST(elapsed_ms(start) < 3000);
        BOOST_TEST((d == rate_decision{}));
        BOOST_REQUIRE(diag.nodes().size() == 1u);
        BOOST_TEST(diag.nodes()[0].node == r.store.name());
        BOOST_TEST((diag.nodes()[0].what == node_outcome::result::pending));
    });
}

BOOST_AUTO_TEST_CASE(cancelling_a_call_the_node_holds_ends_it_promptly)
{
    fake_redis_rig r;
    r.fakes[0].on(script_kind::other, action::hold());
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        rate_limiter limiter(r.store, "k", ten_per_second());
        for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial}) {
            asio::cancellation_signal cancel;
            std::optional<error_code> result;
            limiter.async_try_acquire(
                1, asio::bind_cancellation_slot(cancel.slot(),
                                                r.bind([&](error_code ec, rate_decision) { result = ec; })));
            BOOST_REQUIRE(co_await eventually([&] { return r.fakes[0].held() == 1u; }));
            const auto start = steady::now();
            cancel.emit(type);
            BOOST_REQUIRE(co_await eventually([&] { return result.has_value(); }, 1000ms));
            BOOST_TEST(*result == asio::error::operation_aborted);
            BOOST_TEST(elapsed_ms(start) < 500);
            BOOST_TEST(r.fakes[0].fail_held(make_error_code(error::closed)));  // the node answers later: ignored
        }
    });
}
