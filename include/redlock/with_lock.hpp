// Runs a coroutine under a lock kept alive by the watchdog; the body is cancelled if the lease is lost.
#pragma once

#include <redlock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace redlock {

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
namespace detail {
template <class Body>
struct with_lock_body {
    using type = std::invoke_result_t<Body&>;
};
template <class Body>
requires std::is_invocable_v<Body&, const lease&>
struct with_lock_body<Body> {
    using type = std::invoke_result_t<Body&, const lease&>;
};
}  // namespace detail

template <class Body>
auto with_lock(mutex m, Body body) -> typename detail::with_lock_body<Body>::type
{
    namespace asio = boost::asio;
    using awaitable_type = typename detail::with_lock_body<Body>::type;
    using result_type = typename awaitable_type::value_type;

    auto options = m.options();
    options.watchdog = true;
    lease held = co_await m.async_lock(options, asio::use_awaitable);

    // A parallel group of the body and the loss: the first to finish cancels the other. (Not `||`: in Asio
    // 1.26 a cancellation that reaches a co_spawned branch before it starts is lost, and the group hangs.)
    auto ex = co_await asio::this_coro::executor;
    std::exception_ptr failure;
    std::conditional_t<std::is_void_v<result_type>, std::monostate, std::optional<result_type>> result;
    auto run = [&] {
        if constexpr (std::is_invocable_v<Body&, const lease&>)
            return body(std::as_const(held));
        else
            return body();
    };
    auto outcome = co_await asio::experimental::make_parallel_group(asio::co_spawn(ex, run(), asio::deferred),
                                                                    held.async_wait_lost(asio::deferred))
                       .async_wait(asio::experimental::wait_for_one(), asio::as_tuple(asio::use_awaitable));
    const auto& order = std::get<0>(outcome);
    const std::exception_ptr& body_exception = std::get<1>(outcome);
    const error_code loss = std::get<std::tuple_size_v<decltype(outcome)> - 1>(outcome);
    if (order[0] == 1 && loss == error::lost) {
        failure = std::make_exception_ptr(boost::system::system_error(make_error_code(error::lost)));
    } else if (body_exception) {
        failure = body_exception;
    } else if constexpr (!std::is_void_v<result_type>) {
        result.emplace(std::move(std::get<2>(outcome)));
    }
    // A cancelled coroutine would throw at its next co_await: clear that so the release still runs.
    co_await asio::this_coro::reset_cancellation_state();
    co_await held.async_release(asio::as_tuple(asio::use_awaitable));
    if (failure) std::rethrow_exception(failure);
    if constexpr (!std::is_void_v<result_type>) co_return std::move(*result);
}

}  // namespace redlock
