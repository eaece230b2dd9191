// run_guarded, which `redlock exec` relies on to stop the command and release its lease on every way out: the
// cleanup runs on the io_context after the body returned, threw, or a handler threw out of ctx.run().
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cli/common/guarded_run.hpp>
#include <stdexcept>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::cli::run_guarded;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// What the cleanup saw, and proof that it ran on the io_context: it waits on a timer, as a release does.
struct cleanup_log {
    int runs = 0;
    bool waited = false;
    std::string failure;  // the failure it was given ("" for none)
};

asio::awaitable<void> cleanup(asio::io_context& ctx, cleanup_log& log, std::exception_ptr failure)
{
    ++log.runs;
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            log.failure = e.what();
        }
    }
    asio::steady_timer t(ctx, 5ms);
    auto [ec] = co_await t.async_wait(use_tuple);
    log.waited = !ec;
}

std::string what(const std::exception_ptr& e)
{
    try {
        if (e) std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    }
    return {};
}

asio::awaitable<int> returns_7(asio::io_context& ctx)
{
    asio::steady_timer t(ctx, 1ms);
    co_await t.async_wait(use_tuple);
    co_return 7;
}

asio::awaitable<int> throws_after_a_wait(asio::io_context& ctx)
{
    asio::steady_timer t(ctx, 1ms);
    co_await t.async_wait(use_tuple);
    throw std::runtime_error("body failed");
}

// Waits on `t` (cancelled by the cleanup of the test) after posting a handler that throws.
asio::awaitable<int> a_handler_throws_meanwhile(asio::io_context& ctx, asio::steady_timer& t)
{
    asio::post(ctx, [] { throw std::runtime_error("handler failed"); });
    t.expires_after(1h);
    co_await t.async_wait(use_tuple);
    co_return 1;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_cleanup_runs_after_a_body_that_returns)
{
    asio::io_context ctx(1);
    cleanup_log log;
    // Background work left over (a reconnect loop, a watchdog) must not keep the io_context running.
    asio::steady_timer background(ctx, 1h);
    background.async_wait([](boost::system::error_code) {});
    const auto start = std::chrono::steady_clock::now();
    auto out = run_guarded<int>(ctx, returns_7(ctx), [&](std::exception_ptr e) { return cleanup(ctx, log, e); });
    BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
    BOOST_TEST(!out.failure);
    BOOST_TEST(out.value.value_or(0) == 7);
    BOOST_TEST(log.runs == 1);
    BOOST_TEST(log.waited);
    BOOST_TEST(log.failure.empty());
}

BOOST_AUTO_TEST_CASE(the_cleanup_runs_on_the_io_context_after_the_body_throws)
{
    asio::io_context ctx(1);
    cleanup_log log;
    auto out =
        run_guarded<int>(ctx, throws_after_a_wait(ctx), [&](std::exception_ptr e) { return cleanup(ctx, log, e); });
    BOOST_TEST(what(out.failure) == "body failed");
    BOOST_TEST(!out.value);
    BOOST_TEST(log.runs == 1);
    BOOST_TEST(log.waited);
    BOOST_TEST(log.failure == "body failed");
}

BOOST_AUTO_TEST_CASE(the_cleanup_runs_after_a_handler_throws_out_of_run)
{
    asio::io_context ctx(1);
    cleanup_log log;
    asio::steady_timer body_wait(ctx);
    auto out = run_guarded<int>(ctx, a_handler_throws_meanwhile(ctx, body_wait), [&](std::exception_ptr e) {
        body_wait.cancel();  // as shutdown() does with the body's waits; the body then ends during the cleanup
        return cleanup(ctx, log, e);
    });
    BOOST_TEST(what(out.failure) == "handler failed");
    BOOST_TEST(log.runs == 1);
    BOOST_TEST(log.waited);
    BOOST_TEST(log.failure == "handler failed");
}

BOOST_AUTO_TEST_CASE(a_handler_that_throws_during_the_cleanup_does_not_cut_it_short)
{
    asio::io_context ctx(1);
    cleanup_log log;
    auto out = run_guarded<int>(ctx, returns_7(ctx), [&](std::exception_ptr e) {
        asio::post(ctx, [] { throw std::runtime_error("late handler failed"); });
        return cleanup(ctx, log, e);
    });
    BOOST_TEST(out.value.value_or(0) == 7);
    BOOST_TEST(what(out.failure) == "late handler failed");
    BOOST_TEST(log.waited);
}
