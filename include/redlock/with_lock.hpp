// Runs a coroutine under a lock (a mutex, or either side of a shared_mutex) kept alive by the watchdog; the body is
// cancelled if the lease is lost.
#pragma once

#include <redlock/detail/run_while_held.hpp>
#include <redlock/mutex.hpp>
#include <redlock/shared_mutex.hpp>

#include <boost/asio/use_awaitable.hpp>

namespace redlock {

namespace detail {
/// The same lock with the watchdog on, its other options as they are.
template <class Lock>
Lock with_watchdog(const Lock& m)
{
    auto options = m.options();
    options.watchdog = true;
    return m.with_options(options);
}
}  // namespace detail

/// Acquires `m` with the watchdog on (the mutex's options otherwise), runs `body()` or `body(lease)` (a
/// callable returning `asio::awaitable<R>`; the lease lets it check validity() before a critical write),
/// releases the lock on every exit path — normal return, exception, cancellation of the caller — and returns
/// what the body returned.
/// If the lease is lost while the body runs, the body is cancelled (terminal) at once and with_lock throws
/// boost::system::system_error(error::lost). Acquisition failures throw as async_lock reports them.
/// `m` is taken by value (a mutex is a cheap handle), so the coroutine never refers to the caller's object.
/// With g++ 12, name the body before the co_await (`auto body = [..]() -> awaitable<..> {..};
/// co_await with_lock(m, body);`): that compiler destroys a lambda temporary inside a co_await expression
/// twice when the lambda captures something with a destructor (a shared_ptr, a string).
template <class Body>
auto with_lock(mutex m, Body body) -> typename detail::held_body<Body, lease>::type
{
    lease held = co_await detail::with_watchdog(m).async_lock(boost::asio::use_awaitable);
    co_return co_await detail::run_while_held(std::move(held), body);
}

/// with_lock for the write side of a read-write lock: the body runs alone, as with_lock(mutex) does.
template <class Body>
auto with_lock(shared_mutex m, Body body) -> typename detail::held_body<Body, lease>::type
{
    lease held = co_await detail::with_watchdog(m).async_lock(boost::asio::use_awaitable);
    co_return co_await detail::run_while_held(std::move(held), body);
}

/// with_lock for the read side of a read-write lock: the body runs beside other readers, never beside a writer; its
/// lease is its own, kept by the watchdog, and the body is cancelled if it is lost (the same rules as with_lock).
template <class Body>
auto with_shared_lock(shared_mutex m, Body body) -> typename detail::held_body<Body, lease>::type
{
    lease held = co_await detail::with_watchdog(m).async_lock_shared(boost::asio::use_awaitable);
    co_return co_await detail::run_while_held(std::move(held), body);
}

}  // namespace redlock
