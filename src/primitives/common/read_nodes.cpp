#include "primitives/common/read_nodes.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/bind_executor.hpp>

namespace redlock::detail {

namespace asio = boost::asio;

asio::awaitable<std::shared_ptr<fan_out_state>> read_nodes(std::shared_ptr<client_impl> client,
                                                           std::shared_ptr<const request> req, std::string routing_key,
                                                           classify_fn classify)
{
    auto& nodes = client->nodes();
    // What a node is handed by reference (the request, the routing key, the reply and diagnostics slots) lives in the
    // fan-out's state, which each node's completion keeps alive: the caller returns as soon as it is cancelled,
    // while a node may still be connecting, writing the request or reading its reply. The callback reaches the node
    // through the client's state it keeps alive, never through a node&: the caller may be cancelled and the client
    // destroyed before a node finishes connecting.
    const node_set::node_call read_node = [client](node&, fan_out_state& s, std::size_t i, node::completion done) {
        auto ex = asio::get_associated_executor(done);  // the client's strand, where `s` lives
        client->nodes().at(i).async_connect(
            s.diags[i], asio::bind_executor(ex, [client, &s, i, done = std::move(done)](error_code ec) mutable {
                if (ec) return std::move(done)(ec);
                client->nodes().at(i).async_exec(*s.req, s.replies[i], s.routing_key, std::move(done));
            }));
    };
    const auto deadline =
        std::chrono::steady_clock::now() + nodes.longest_connect_timeout() + read_deadline + node_set::backstop_margin;
    auto state = nodes.start(std::move(req), std::move(routing_key), read_node, classify, nodes.majority());
    co_return co_await node_set::outcome(std::move(state), until::all_answered, deadline);
}

error_code read_outcome(std::size_t reachable, std::size_t nodes, std::size_t quorum, diagnostics* diag)
{
    if (reachable >= quorum) return {};
    if (diag)
        access::set_client_message(*diag, std::to_string(reachable) + " of " + std::to_string(nodes) +
                                              " nodes answered; a quorum needs " + std::to_string(quorum));
    return make_error_code(error::no_quorum);
}

}  // namespace redlock::detail
