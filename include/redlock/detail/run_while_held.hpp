// The body of with_lock, with_permit and with_leadership: runs a coroutine while a lease holds, cancels it when the
// lease is lost, and releases the lease (a leadership: resigns) on every exit path.
#pragma once

#include <redlock/error.hpp>

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

namespace redlock::detail {

/// The awaitable a body returns: `body(held)` when it takes the held object, else `body()`.
template <class Body, class Held>
struct held_body {
    using type = std::invoke_result_t<Body&>;
};
template <class Body, class Held>
requires std::is_invocable_v<Body&, const Held&>
struct held_body<Body, Held> {
    using type = std::invoke_result_t<Body&, const Held&>;
};

/// `held` is a lease, a permit or a leadership, held with the watchdog on; a leadership resigns at the end.
template <class Held, class Body>
auto run_while_held(Held held, Body& body) -> typename held_body<Body, Held>::type
{
    namespace asio = boost::asio;
    using awaitable_type = typename held_body<Body, Held>::type;
    using result_type = typename awaitable_type::value_type;

    // A parallel group of the body and the loss: the first to finish cancels the other. (Not `||`: in Asio
    // 1.26 a cancellation that reaches a co_spawned branch before it starts is lost, and the group hangs.)
    auto ex = co_await asio::this_coro::executor;
    std::exception_ptr failure;
    std::conditional_t<std::is_void_v<result_type>, std::monostate, std::optional<result_type>> result;
    auto run = [&] {
        if constexpr (std::is_invocable_v<Body&, const Held&>)
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
    if constexpr (requires { held.async_resign(asio::as_tuple(asio::use_awaitable)); })
        co_await held.async_resign(asio::as_tuple(asio::use_awaitable));  // a leadership
    else
        co_await held.async_release(asio::as_tuple(asio::use_awaitable));
    if (failure) std::rethrow_exception(failure);
    if constexpr (!std::is_void_v<result_type>) co_return std::move(*result);
}

}  // namespace redlock::detail
