// Runs a coroutine while leading an election; the body is cancelled if the leadership is lost, and the leader resigns
// on every way out.
#pragma once

#include <redlock/detail/run_while_held.hpp>
#include <redlock/election.hpp>

#include <boost/asio/use_awaitable.hpp>

#include <string>

namespace redlock {

/// Campaigns in `e` with `proposal` (async_campaign: the watchdog and fencing on), runs `body()` or
/// `body(const leadership&)` (a callable returning `asio::awaitable<R>`; the leadership gives the term to fence writes
/// with, and proclaims new values), resigns on every exit path — normal return, exception, cancellation of the
/// caller — and returns what the body returned. If the leadership is lost while the body runs (at the latest at the
/// lease's local validity deadline), the body is cancelled (terminal) at once and with_leadership throws
/// boost::system::system_error(error::lost). Campaign failures throw as async_campaign reports them. `e` is taken by
/// value (a cheap handle). With g++ 12, name the body before the co_await (with_lock says why).
template <class Body>
auto with_leadership(election e, std::string proposal, Body body) -> typename detail::held_body<Body, leadership>::type
{
    leadership held = co_await e.async_campaign(std::move(proposal), boost::asio::use_awaitable);
    co_return co_await detail::run_while_held(std::move(held), body);
}

}  // namespace redlock
