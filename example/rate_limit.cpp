// A rate limiter shared by every process that names the same key: GCRA at 10 calls a second with bursts of 20,
// each decision one script call on the node's clock. 25 calls at once: 21 pass (the burst and one), and the
// others are told when to come back, as an HTTP service answers 429; a call that can never pass says so; then a
// worker waits for room instead of being turned away, and one gives up when its wait is too short. A limiter takes
// one Redis deployment (a redlock::redis), never a Redlock client of N nodes: that does not compile.
// Usage: redlock_example_rate_limit [URL,URL,...]
// The node URLs come from the argument, else from $REDLOCK_NODES (comma-separated), else redis://127.0.0.1:6379.
// The limiter uses the first: a limiter lives on one Redis (doc/rate-limiting.md, "Over N nodes").
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

std::vector<redlock::node_config> node_list(int argc, char** argv)
{
    const char* env = std::getenv("REDLOCK_NODES");
    return redlock::parse_node_list(argc > 1 ? argv[1] : env && *env ? env : "redis://127.0.0.1:6379");
}

// What an HTTP service sends when the limiter says no: durations in whole seconds, rounded up.
void reply_429(std::chrono::milliseconds retry_after, std::int64_t limit, std::int64_t remaining,
               std::chrono::milliseconds reset_after)
{
    auto seconds = [](std::chrono::milliseconds d) { return (d.count() + 999) / 1000; };
    std::cout << "  429 Too Many Requests  Retry-After: " << seconds(retry_after) << " (" << retry_after.count()
              << " ms)  RateLimit-Limit: " << limit << "  RateLimit-Remaining: " << remaining
              << "  RateLimit-Reset: " << seconds(reset_after) << "\n";
}

// [calls]
asio::awaitable<void> calls(const redlock::redis& limits)
{
    redlock::rate_limiter limiter(limits, "api:user:42", {.rate = 10, .period = 1s, .burst = 20});
    int admitted = 0;
    for (int call = 1; call <= 25; ++call) {
        auto [ec, d] = co_await limiter.async_try_acquire(1, asio::as_tuple(asio::use_awaitable));
        if (ec) throw boost::system::system_error(ec);  // the node failed: fail open or closed, the service decides
        if (d.allowed())
            ++admitted;
        else
            reply_429(d.retry_after, d.limit, d.remaining, d.reset_after);
    }
    std::cout << admitted << " of 25 calls admitted at once\n";

    const auto asked = steady::now();
    auto d = co_await limiter.async_acquire(1, asio::use_awaitable);  // waits for room: sleeps retry_after, no poll
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - asked);
    std::cout << "async_acquire admitted after waiting " << waited.count() << " ms; remaining " << d.remaining << "\n";
    if (admitted != 21) throw std::runtime_error("expected the burst and one to pass");
}
// [calls]

// [wait]
// A worker that waits its turn rather than be turned away, for at most 100 ms: the cost is the upload's size, under
// 1 MB/s with bursts of 256 kB.
asio::awaitable<bool> upload(const redlock::redis& limits, std::int64_t bytes)
{
    redlock::rate_limiter limiter(limits, "uploads:bytes",
                                  {.rate = 1'000'000, .period = 1s, .burst = 256'000, .wait = 100ms});
    auto [ec, d] = co_await limiter.async_acquire(bytes, asio::as_tuple(asio::use_awaitable));
    if (ec == redlock::error::rate_limited) {  // no room within the wait; d.retry_after says when
        std::cout << "upload of " << bytes << " bytes: " << ec.message() << ", room in " << d.retry_after.count()
                  << " ms\n";
        co_return false;
    }
    if (ec) throw boost::system::system_error(ec);
    std::cout << "upload of " << bytes << " bytes admitted\n";
    co_return true;
}
// [wait]

// [never]
asio::awaitable<void> too_costly(const redlock::redis& limits)
{
    redlock::rate_limiter limiter(limits, "api:user:42", {.rate = 10, .period = 1s, .burst = 20});
    auto [ec, d] = co_await limiter.async_try_acquire(22, asio::as_tuple(asio::use_awaitable));
    if (ec || d.result != redlock::rate_decision::outcome::never) throw std::runtime_error("expected never");
    std::cout << "a call of cost 22 can never pass (the limit is " << d.limit << "): no wait would help\n";
    auto [acquire_ec, none] = co_await limiter.async_acquire(22, asio::as_tuple(asio::use_awaitable));
    std::cout << "async_acquire(22): " << acquire_ec.message() << "\n";  // refused before any I/O
}
// [never]

// [n-nodes]
// One Redis is one type: a limiter is made from a redis, and a Redlock client of N nodes does not compile as one.
static_assert(std::is_constructible_v<redlock::rate_limiter, const redlock::redis&, std::string, redlock::rate_limit>);
static_assert(
    !std::is_constructible_v<redlock::rate_limiter, const redlock::client&, std::string, redlock::rate_limit>);
// [n-nodes]

int main(int argc, char** argv)
{
    try {
        const auto nodes = node_list(argc, argv);
        asio::io_context ctx;
        // [redis]
        redlock::redis limits(ctx.get_executor(), nodes.front());  // a limiter lives on one Redis deployment
        // [redis]
        asio::co_spawn(
            ctx,
            [&]() -> asio::awaitable<void> {
                co_await limits.async_connect(asio::use_awaitable);
                co_await calls(limits);
                co_await too_costly(limits);
                const bool first = co_await upload(limits, 200'000);
                const bool second = co_await upload(limits, 200'000);  // 144 ms more than the burst: too long to wait
                if (!first || second) throw std::runtime_error("expected the second upload to be refused");
            },
            [&](std::exception_ptr e) {
                limits.close();
                if (e) std::rethrow_exception(e);
            });
        ctx.run();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "rate_limit: " << e.what() << "\n";
        return 1;
    }
}
