// One redlock::client over N fake nodes (or one redlock::redis over one) on a single-threaded io_context, and the
// waits their tests need.
#pragma once

#include "common/fakes/fake_node.hpp"
#include "common/run_coro.hpp"

#include <redlock/client.hpp>
#include <redlock/redis.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <functional>
#include <optional>

namespace redlock::test {

inline std::size_t quorum_of(std::size_t n)
{
    return n / 2 + 1;
}

struct rig {
    explicit rig(std::size_t n) : fakes(fake_nodes(n))
    {
        c.emplace(ctx.get_executor(), fakes.configs(), fakes.factory);
    }
    boost::asio::io_context ctx;
    fake_cluster fakes;
    std::optional<redlock::client> c;

    std::size_t n() const { return fakes.size(); }
    std::size_t q() const { return quorum_of(fakes.size()); }
    // Nodes [from, to) do `a` for `kind`.
    void on(std::size_t from, std::size_t to, script_kind kind, const action& a)
    {
        for (std::size_t i = from; i < to && i < n(); ++i) fakes[i].on(kind, a);
    }
    template <class F>
    auto bind(F f)
    {
        return boost::asio::bind_executor(ctx.get_executor(), std::move(f));
    }
};

// One redlock::redis (a deployment: a rate limiter's, a cache's store) over one fake node (servers/redis_rig.hpp is
// the real-server rig of integration tests, a different thing).
struct fake_redis_rig {
    fake_redis_rig() : fakes(fake_nodes(1)), store(ctx.get_executor(), fakes.configs().front(), fakes.factory) {}
    boost::asio::io_context ctx;
    fake_cluster fakes;
    redlock::redis store;

    fake_node_control& fake() const { return fakes[0]; }
    template <class F>
    auto bind(F f)
    {
        return boost::asio::bind_executor(ctx.get_executor(), std::move(f));
    }
};

inline boost::asio::awaitable<void> pause_for(std::chrono::milliseconds d)
{
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
    co_await t.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
}

// Polls `pred` every 2 ms (running the io_context meanwhile) until it holds or `limit` passed.
inline boost::asio::awaitable<bool> eventually(std::function<bool()> pred,
                                               std::chrono::milliseconds limit = std::chrono::milliseconds(2000))
{
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= until) co_return false;
        co_await pause_for(std::chrono::milliseconds(2));
    }
    co_return true;
}

}  // namespace redlock::test
