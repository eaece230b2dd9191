// The public connection: a handle on its shared state (connection_impl.hpp lists the parts), so that the
// connection's background work outlives neither the handle's moves nor its destruction, which only closes.
#include "connection/connection_impl.hpp"

#include <redlock/connection.hpp>
#include <redlock/detail/access.hpp>

#include <boost/asio/dispatch.hpp>

namespace redlock {
namespace detail {

namespace asio = boost::asio;

connection_impl::connection_impl(asio::any_io_executor ex, node_config config, transport_factory factory)
    : io_executor_(ex),
      strand_(make_strand_of(ex)),
      config_(std::move(config)),
      factory_(std::move(factory)),
      reader_(config_.limits),
      backoff_timer_(strand_),
      connect_waiters_(strand_, asio::cancellation_type::terminal),
      connect_timer_(strand_),
      writer_wakeup_(strand_),
      health_timer_(strand_),
      deadline_timer_(strand_)
{}

usage atomic_usage::snapshot() const noexcept
{
    auto get = [](const std::atomic<std::uint64_t>& v) { return v.load(std::memory_order_relaxed); };
    return usage{get(writes),      get(bytes_written), get(bytes_read),         get(requests),
                 get(replies),     get(pushes),        get(abandoned),          get(connects),
                 get(disconnects), get(resubscribes),  get(subscribe_refusals), get(subscriptions_lost)};
}

void start_connect(const std::shared_ptr<connection_impl>& impl, diagnostics* diag, completion handler)
{
    impl->start_connect(diag, std::move(handler));
}

std::shared_ptr<connection_impl> connection_impl::make(asio::any_io_executor ex, node_config config,
                                                       transport_factory factory)
{
    auto impl = std::make_shared<connection_impl>(ex, std::move(config), std::move(factory));
    shutdown_registry::enroll(ex, impl);
    return impl;
}

void connection_impl::drop_handlers() noexcept
{
    mpx_.drop_all();
    connect_waiters_.drop_all();
}

connection make_connection(asio::any_io_executor ex, node_config config, transport_factory factory)
{
    return access::make<connection>(connection_impl::make(std::move(ex), std::move(config), std::move(factory)));
}

}  // namespace detail

connection::connection(executor_type ex, node_config config)
    : impl_(detail::connection_impl::make(std::move(ex), std::move(config), nullptr))
{}

connection::connection(std::shared_ptr<detail::connection_impl> impl) noexcept : impl_(std::move(impl)) {}

connection::~connection()
{
    if (impl_) impl_->close();
}

connection::connection(connection&&) noexcept = default;

connection& connection::operator=(connection&& other) noexcept
{
    if (this != &other) {
        if (impl_) impl_->close();
        impl_ = std::move(other.impl_);
    }
    return *this;
}

connection::executor_type connection::get_executor() const noexcept
{
    return impl_->strand();
}

server_identity connection::server() const noexcept
{
    return impl_->server();
}

std::uint32_t connection::server_version() const noexcept
{
    return impl_->server().version;
}

const node_config& connection::config() const noexcept
{
    return impl_->config();
}

void connection::set_push_handler(std::function<void(const resp::value&)> handler)
{
    boost::asio::dispatch(impl_->strand(), [impl = impl_, h = std::move(handler)]() mutable {
        impl->pushes().set_push_handler(std::move(h));
    });
}

void connection::set_message_handler(std::function<void(std::string_view, std::string_view)> handler)
{
    boost::asio::dispatch(impl_->strand(), [impl = impl_, h = std::move(handler)]() mutable {
        impl->pushes().set_message_handler(std::move(h));
    });
}

void connection::set_subscription_lost_handler(std::function<void(std::vector<std::string> channels)> handler)
{
    boost::asio::dispatch(impl_->strand(), [impl = impl_, h = std::move(handler)]() mutable {
        impl->pushes().set_lost_handler(std::move(h));
    });
}

void connection::set_tracking_handler(std::function<void(const tracking_news&)> handler)
{
    boost::asio::dispatch(impl_->strand(), [impl = impl_, h = std::move(handler)]() mutable {
        impl->pushes().set_tracking_handler(std::move(h));
    });
}

void connection::set_disconnect_handler(std::function<void(error_code why)> handler)
{
    boost::asio::dispatch(impl_->strand(), [impl = impl_, h = std::move(handler)]() mutable {
        impl->set_disconnect_handler(std::move(h));
    });
}

void connection::close()
{
    impl_->close();
}

connection_state connection::state() const noexcept
{
    return impl_->state();
}

usage connection::get_usage() const noexcept
{
    return impl_->stats().snapshot();
}

}  // namespace redlock
