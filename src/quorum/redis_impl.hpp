// What the copies of a redlock::redis share: the one node of the deployment, its name, and the strand where the
// library's own operations on it run (a rate limiter's calls).
#pragma once

#include "common/completion.hpp"
#include "quorum/node_set.hpp"

#include <redlock/node.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

class redis_impl {
public:
    /// `deployment` must not be null.
    redis_impl(const boost::asio::any_io_executor& ex, std::shared_ptr<node> deployment)
        : io_executor_(ex), strand_(make_strand_of(ex)), node_(std::move(deployment)), names_{node_->name()}
    {}

    node& deployment() noexcept { return *node_; }
    const node& deployment() const noexcept { return *node_; }
    /// The node's name, as the one entry of a diagnostics' node list (fan_out_state::outcomes).
    const std::vector<std::string>& names() const noexcept { return names_; }
    strand_type& strand() noexcept { return strand_; }
    /// The executor given to the redis: where handlers without an executor of their own complete.
    const boost::asio::any_io_executor& io_executor() const noexcept { return io_executor_; }

    /// `req` on the node, as a fan-out of one (fan_out_to_one): returns once the node answered, the calling
    /// coroutine was cancelled, or the request's deadline passed with its backstop. On the strand.
    boost::asio::awaitable<std::shared_ptr<fan_out_state>> call(std::shared_ptr<const request> req,
                                                                std::string routing_key, classify_fn classify)
    {
        return fan_out_to_one(*node_, strand_, std::move(req), std::move(routing_key), classify);
    }

private:
    boost::asio::any_io_executor io_executor_;
    strand_type strand_;
    std::shared_ptr<node> node_;
    std::vector<std::string> names_;
};

}  // namespace redlock::detail
