#include "primitives/common/read_nodes.hpp"
#include "primitives/election/election_scripts.hpp"
#include "primitives/election/leader_read.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/error.hpp>

namespace redlock::detail {

namespace asio = boost::asio;

asio::awaitable<leader_read> read_leader_once(std::shared_ptr<client_impl> client, std::string name, diagnostics* diag)
{
    leader_read out;
    out.started = std::chrono::steady_clock::now();
    auto req = std::make_shared<const request>(election_scripts::read_request(name, read_deadline));
    auto result = co_await read_nodes(client, req, name, election_scripts::classify_read);
    if (result->cancelled) {
        out.ec = make_error_code(asio::error::operation_aborted);
        co_return out;
    }
    auto& nodes = client->nodes();
    std::vector<node_leader_view> views;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        views.push_back(election_scripts::read_view(
            result->answered(i), result->answered(i) ? *result->results[i] : error_code{}, result->replies[i]));
    out.decision = decide_leader(views, nodes.majority());
    if (diag) access::set_nodes(*diag, result->outcomes(nodes.names()));
    out.ec = read_outcome(out.decision.answered, nodes.size(), nodes.majority(), diag);
    co_return out;
}

}  // namespace redlock::detail
