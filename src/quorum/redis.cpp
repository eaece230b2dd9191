// redlock::redis: a handle over the one node of a deployment.
#include "quorum/redis_impl.hpp"

#include <redlock/redis.hpp>

#include <boost/asio/compose.hpp>
#include <boost/system/system_error.hpp>

namespace redlock {
namespace detail {

namespace {

std::shared_ptr<node> checked(std::shared_ptr<node> n, const char* why)
{
    if (!n) throw boost::system::system_error(make_error_code(error::invalid_argument), why);
    return n;
}

}  // namespace

namespace {

// A connect without the caller's diagnostics: the node still writes its text somewhere that lives as long as the
// operation (composed, so that the handler keeps its executor and cancellation slot).
struct connect_op {
    std::shared_ptr<redis_impl> impl;
    std::unique_ptr<diagnostics> diag;  // stays put while the op moves: the node keeps a reference to it
    bool started = false;

    template <class Self>
    void operator()(Self& self, error_code ec = {})
    {
        if (started) return self.complete(ec);
        started = true;
        // Named first: the handler is built from `self` (moving `impl` and `diag`) before the call runs.
        node& n = impl->deployment();
        diagnostics& d = *diag;
        n.async_connect(d, std::move(self));
    }
};

}  // namespace

void start_redis_connect(const std::shared_ptr<redis_impl>& impl, diagnostics* diag,
                         boost::asio::any_completion_handler<void(error_code)> handler)
{
    if (diag) return impl->deployment().async_connect(*diag, std::move(handler));
    boost::asio::async_compose<decltype(handler), void(error_code)>(connect_op{impl, std::make_unique<diagnostics>()},
                                                                    handler, impl->io_executor());
}

void start_redis_exec(const std::shared_ptr<redis_impl>& impl, const request& req, response& resp,
                      std::string_view routing_key, boost::asio::any_completion_handler<void(error_code)> handler)
{
    impl->deployment().async_exec(req, resp, routing_key, std::move(handler));
}

}  // namespace detail

namespace {
// Nothing of a redis handle watches keys (a rate limiter's, a cached value): tracking them would only fill the server's
// tracking table and bring pushes nobody reads.
node_config untracked(node_config config)
{
    config.track_keys = false;
    return config;
}
}  // namespace

redis::redis(executor_type ex, node_config config, node_factory factory)
    : impl_(std::make_shared<detail::redis_impl>(
          ex, detail::checked(factory ? std::shared_ptr<node>(factory(ex, untracked(std::move(config))))
                                      : std::shared_ptr<node>(make_node(ex, untracked(std::move(config)))),
                              "the node factory made no node")))
{}

redis::redis(executor_type ex, std::shared_ptr<node> deployment)
    : impl_(std::make_shared<detail::redis_impl>(ex, detail::checked(std::move(deployment), "redis: no node")))
{}

redis::executor_type redis::get_executor() const noexcept
{
    return impl_->io_executor();
}

const std::string& redis::name() const noexcept
{
    return impl_->names().front();
}

usage redis::get_usage() const
{
    return impl_->deployment().get_usage();
}

void redis::close()
{
    impl_->deployment().close();
}

}  // namespace redlock
