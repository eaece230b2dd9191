#include "primitives/common/read_nodes.hpp"
#include "primitives/election/election_scripts.hpp"
#include "primitives/election/leader_read.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/error.hpp>

namespace redlock::detail {

namespace asio = boost::asio;

asio::awaitable<leader_read> read_leader_once(std::shared_ptr<client_impl> client, std::string name, diagnostics* diag,
                                              bool connect_first)
{
    leader_read out;
    out.started = std::chrono::steady_clock::now();
    auto req = std::make_shared<const request>(election_scripts::read_request(name, read_deadline));
    // Not a conditional expression with a co_await in each branch: g++ 12 miscompiles that (the heap is corrupted).
    std::shared_ptr<fan_out_state> result;
    if (connect_first) {
        result = co_await read_nodes(client, req, name, election_scripts::classify_read);
    } else {
        auto& all = client->nodes();
        result = co_await all.fan_out(req, name, election_scripts::classify_read, all.majority(), until::all_answered);
    }
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
    if (diag) result->report(*diag, nodes.names());
    out.ec = read_outcome(out.decision.answered, nodes.size(), nodes.majority(), diag);
    if (!out.ec && !out.decision.decided) {
        if (diag)
            access::set_client_message(*diag, "no token holds a quorum of the " +
                                                  std::to_string(out.decision.answered) +
                                                  " nodes that answered, and the nodes not heard from could complete "
                                                  "one: who leads is unknown");
        out.ec = make_error_code(error::no_quorum);
    }
    co_return out;
}

}  // namespace redlock::detail
