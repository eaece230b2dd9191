// What several test/helpers programs share: their lock nodes from a comma-separated list of URLs, set to
// reconnect fast (the tests kill and restart nodes), a coroutine pause, and a co_spawn completion handler that
// does not swallow an exception. Header-only: each helper is a standalone program linking only redlock.
#pragma once

#include <redlock/node_config.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <vector>

namespace helpers {

/// The nodes of "URL,URL,...": connect timeout 300 ms, reconnects 20 to 200 ms apart.
inline std::vector<redlock::node_config> fast_reconnecting_nodes(const std::string& urls)
{
    auto nodes = redlock::parse_node_list(urls);
    for (auto& c : nodes) {
        c.connect_timeout = std::chrono::milliseconds(300);
        c.reconnect_min_delay = std::chrono::milliseconds(20);
        c.reconnect_max_delay = std::chrono::milliseconds(200);
    }
    return nodes;
}

inline boost::asio::awaitable<void> pause(std::chrono::milliseconds d)
{
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
    co_await t.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
}

/// For co_spawn: an exception of the coroutine leaves io_context::run() (or run_one...), where main reports it and
/// exits non-zero, instead of vanishing (asio::detached) and leaving the helper to wait for its deadline. A
/// coroutine's result, if any, is dropped.
struct rethrow_t {
    template <class... Result>
    void operator()(std::exception_ptr e, Result&&...) const
    {
        if (e) std::rethrow_exception(e);
    }
};
inline constexpr rethrow_t rethrow{};

}  // namespace helpers
