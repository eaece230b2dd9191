#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the allocation of an Asio coroutine frame with the frame's own operator delete (which frees it
// correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "readiness.hpp"

#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace http_inventory {

namespace asio = boost::asio;

readiness::readiness(asio::any_io_executor ex, const std::vector<redlock::node_config>& lock_nodes,
                     const redlock::node_config& store)
    : store_(std::make_unique<redlock::connection>(ex, store))
{
    for (const auto& node : lock_nodes) lock_nodes_.push_back(std::make_unique<redlock::connection>(ex, node));
}

void readiness::connect()
{
    // The result of the first attempt does not matter: check() reports what is reachable when it is asked.
    for (auto& c : lock_nodes_) c->async_connect([](redlock::error_code) {});
    store_->async_connect([](redlock::error_code) {});
}

void readiness::close()
{
    for (auto& c : lock_nodes_) c->close();
    store_->close();
}

asio::awaitable<std::string> readiness::check(std::chrono::milliseconds budget)
{
    // Every PING carries the budget as its deadline, so waiting for all of them is bounded by it: a paused node
    // times out, a dead one fails at once.
    redlock::request ping;
    ping.push("PING");
    ping.set_timeout(budget);
    using ping_op = decltype(store_->async_exec(ping, asio::deferred));
    std::vector<ping_op> pings;
    for (auto& c : lock_nodes_) pings.push_back(c->async_exec(ping, asio::deferred));
    pings.push_back(store_->async_exec(ping, asio::deferred));
    auto [order, results] = co_await asio::experimental::make_parallel_group(std::move(pings))
                                .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
    (void)order;
    std::size_t answered = 0;
    for (std::size_t i = 0; i < lock_nodes_.size(); ++i) answered += results[i] ? 0 : 1;
    const std::size_t quorum = lock_nodes_.size() / 2 + 1;
    if (answered < quorum)
        co_return std::to_string(answered) + " of " + std::to_string(lock_nodes_.size()) + " lock nodes answered (" +
            std::to_string(quorum) + " needed)";
    if (results.back()) co_return "store: " + results.back().message();
    co_return std::string();
}

}  // namespace http_inventory
