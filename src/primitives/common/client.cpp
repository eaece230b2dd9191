#include "primitives/common/client_impl.hpp"

#include <redlock/client.hpp>
#include <redlock/detail/client_reports.hpp>

namespace redlock {
namespace detail {

namespace asio = boost::asio;

asio::awaitable<std::tuple<error_code>> client_impl::connect(std::shared_ptr<client_impl> self, diagnostics* diag)
{
    if (diag) diag->clear();
    auto& nodes = self->nodes();
    if (nodes.size() == 0) co_return std::tuple{make_error_code(error::invalid_argument)};
    // Decided like every quorum operation: a node still connecting does not hold the others up.
    // Named, not a temporary inside the co_await (g++ 12 may destroy such temporaries twice).
    node_set::node_call connect_node = [](node& n, fan_out_state& s, std::size_t i, node::completion done) {
        n.async_connect(s.diags[i], std::move(done));
    };
    // Each node's first attempt is bounded by its connect timeout; the margin bounds a node that ignores it.
    const auto deadline =
        std::chrono::steady_clock::now() + nodes.longest_connect_timeout() + node_set::backstop_margin;
    auto result = co_await nodes.fan_out(std::move(connect_node), answered, nodes.majority(), until::decided, deadline);
    if (result->cancelled) co_return std::tuple{make_error_code(asio::error::operation_aborted)};
    const bool reached = result->tally.decide() == quorum_tally::decision::reached;
    if (diag) {
        result->report(*diag, nodes.names());
        if (!reached)
            access::set_client_message(
                *diag, std::to_string(result->tally.errors()) + " of " + std::to_string(nodes.size()) +
                           " nodes could not be connected; a quorum needs " + std::to_string(nodes.majority()));
    }
    co_return std::tuple{reached ? error_code{} : make_error_code(error::no_quorum)};
}

void start_client_connect(const std::shared_ptr<client_impl>& impl, diagnostics* diag,
                          asio::any_completion_handler<void(error_code)> handler)
{
    spawn_op<>(impl->strand(), impl->io_executor(), client_impl::connect(impl, diag), std::move(handler));
}

void count_bloom_filter_missing(client_impl& client) noexcept
{
    client.counters().bloom_filter_missing();
}

void log_on(const client_impl& client, log_level level, std::string_view message)
{
    client.log(level, message);
}

}  // namespace detail

client::client(executor_type ex, std::vector<node_config> nodes, node_factory factory)
    : impl_(std::make_shared<detail::client_impl>(ex, std::move(nodes), factory))
{}

// Connections close when the last user of the nodes is gone: leases outliving the client can still release.
client::~client() = default;

client::client(client&&) noexcept = default;

client& client::operator=(client&&) noexcept = default;

client::executor_type client::get_executor() const noexcept
{
    return impl_->strand();
}
std::size_t client::size() const noexcept
{
    return impl_->nodes().size();
}
std::size_t client::quorum() const noexcept
{
    return impl_->nodes().majority();
}
const std::vector<node_config>& client::nodes() const noexcept
{
    return impl_->nodes().configs();
}
client_stats client::stats() const
{
    client_stats out;
    impl_->counters().snapshot(out);
    const auto& nodes = impl_->nodes();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        auto& n = impl_->nodes().at(i);
        out.nodes.push_back({nodes.names()[i], nodes.errors(i), n.get_usage(), n.server()});
        out.subscriptions_restored += out.nodes.back().connection.resubscribes;
    }
    return out;
}

void client::set_log_handler(log_handler handler)
{
    impl_->set_log_handler(std::move(handler));
}

void client::close()
{
    impl_->nodes().close();
}

}  // namespace redlock
