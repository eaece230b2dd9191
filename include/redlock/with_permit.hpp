// Runs a coroutine holding permits of a semaphore kept alive by the watchdog; the body is cancelled if they are
// lost.
#pragma once

#include <redlock/detail/run_while_held.hpp>
#include <redlock/semaphore.hpp>

#include <boost/asio/use_awaitable.hpp>

#include <cstdint>

namespace redlock {

/// Acquires `permits` permits of `s` (default 1) with the watchdog on, runs `body()` or `body(permit)`, gives them
/// back on every exit path, and returns what the body returned; as with_lock does for a mutex (the same rules:
/// the body is cancelled and with_permit throws error::lost if the permits are lost; acquisition failures throw;
/// with g++ 12, name the body before the co_await).
template <class Body>
auto with_permit(semaphore s, std::int64_t permits, Body body) -> typename detail::held_body<Body, permit>::type
{
    auto options = s.options();
    options.watchdog = true;
    auto watched = s.with_options(options);
    permit held = co_await watched.async_acquire(permits, boost::asio::use_awaitable);
    co_return co_await detail::run_while_held(std::move(held), body);
}

template <class Body>
auto with_permit(semaphore s, Body body) -> typename detail::held_body<Body, permit>::type
{
    return with_permit(std::move(s), 1, std::move(body));
}

}  // namespace redlock
