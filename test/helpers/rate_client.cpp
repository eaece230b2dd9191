// A process that takes one unit at a time from a GCRA rate limiter until the node's clock passes a given time,
// and prints each admission with the node's time of the decision: the limiter tests run several of them, some
// under the clock shim (LD_PRELOAD), and count the admissions by the node's clock.
//
// Usage: helper_rate_client URL KEY RATE PERIOD_MS BURST END_US
//   END_US  the node's time (TIME, microseconds since the epoch) at which to stop
// Prints on stdout:
//   clock system_minus_real_ms=S            at the start: how far std::chrono::system_clock is from the real
//                                           clock (read by a raw system call, which the shim does not see)
//   admitted SERVER_US REMAINING            per admission
//   done limited=L errors=E steady_ms=A real_ms=B   at the end: limited decisions, failed calls, and the run's
//                                           length by std::chrono::steady_clock and by the real monotonic clock
// Exit status: 0 done; 1 an unexpected error; 2 bad arguments; 3 overall deadline passed.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr auto overall_deadline = 120s;

// The kernel's clock, past any LD_PRELOAD shim.
std::int64_t real_ns(clockid_t clock)
{
    timespec ts{};
    ::syscall(SYS_clock_gettime, clock, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t parse_number(const char* text, const char* what)
{
    char* end = nullptr;
    const long long value = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0') throw std::invalid_argument(std::string("bad ") + what + ": " + text);
    return value;
}

struct run {
    std::string key;
    redlock::rate_limit limit;
    std::int64_t end_us = 0;
    long limited = 0;
    long errors = 0;
    std::string error;
};

asio::awaitable<void> take_until_end(redlock::redis& store, run& r)
{
    redlock::diagnostics diag;
    auto [connect_ec] = co_await store.async_connect(diag, asio::as_tuple(asio::use_awaitable));
    if (connect_ec) throw std::runtime_error("connect: " + connect_ec.message() + ": " + std::string(diag.message()));
    redlock::rate_limiter limiter(store, r.key, r.limit);
    for (;;) {
        auto [ec, d] = co_await limiter.async_acquire(1, diag, asio::as_tuple(asio::use_awaitable));
        if (ec == redlock::error::invalid_argument)
            throw std::runtime_error("invalid argument: " + std::string(diag.message()));
        if (ec == redlock::error::rate_limited) {
            ++r.limited;
        } else if (ec) {
            ++r.errors;
            continue;
        } else {
            std::printf("admitted %lld %lld\n", static_cast<long long>(d.server_time.count()),
                        static_cast<long long>(d.remaining));
        }
        if (d.server_time.count() >= r.end_us) co_return;
    }
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s URL KEY RATE PERIOD_MS BURST END_US\n", argv[0]);
        return 2;
    }
    run r;
    redlock::node_config node;
    try {
        node = redlock::parse_url(argv[1]);
        r.key = argv[2];
        r.limit.rate = parse_number(argv[3], "RATE");
        r.limit.period = std::chrono::milliseconds(parse_number(argv[4], "PERIOD_MS"));
        r.limit.burst = parse_number(argv[5], "BURST");
        r.end_us = parse_number(argv[6], "END_US");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rate_client: %s\n", e.what());
        return 2;
    }
    r.limit.wait = 2000ms;
    r.limit.node_timeout = 500ms;

    const auto system_minus_real_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count() -
        real_ns(CLOCK_REALTIME);
    std::printf("clock system_minus_real_ms=%lld\n", static_cast<long long>(system_minus_real_ns / 1'000'000));

    // Never hang a test: a watchdog thread ends the process after the overall deadline.
    std::thread([] {
        std::this_thread::sleep_for(overall_deadline);
        std::fprintf(stderr, "rate_client: not done after %lld s\n", static_cast<long long>(overall_deadline.count()));
        std::fflush(nullptr);
        std::_Exit(3);
    }).detach();

    const auto steady_start = std::chrono::steady_clock::now();
    const auto real_start = real_ns(CLOCK_MONOTONIC);
    asio::io_context ctx(1);
    redlock::redis store(ctx.get_executor(), node);
    asio::co_spawn(ctx, take_until_end(store, r), [&](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                r.error = x.what();
            }
        }
        store.close();
    });
    ctx.run();
    const auto steady_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - steady_start).count();
    const auto real_ms = (real_ns(CLOCK_MONOTONIC) - real_start) / 1'000'000;
    std::printf("done limited=%ld errors=%ld steady_ms=%lld real_ms=%lld\n", r.limited, r.errors,
                static_cast<long long>(steady_ms), static_cast<long long>(real_ms));
    std::fflush(stdout);
    if (!r.error.empty()) {
        std::fprintf(stderr, "rate_client: %s\n", r.error.c_str());
        return 1;
    }
    return 0;
}
