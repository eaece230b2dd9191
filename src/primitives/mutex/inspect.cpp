// mutex::async_inspect: what a lock looks like on each node, read with plain GET and PTTL (no script, so a
// read-only ACL user may call it).
#include "primitives/common/client_impl.hpp"
#include "primitives/common/fencing.hpp"
#include "primitives/common/read_nodes.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/key_layout.hpp>
#include <redlock/mutex.hpp>

namespace redlock::detail {
namespace {

namespace asio = boost::asio;

vote classify_read(error_code ec, const response& resp)
{
    return !ec || ec == error::server_error ? (resp.size() == 3 ? vote::yes : vote::error) : vote::error;
}

node_lock_view view_of(const std::string& name, error_code ec, const response& resp, const diagnostics& diag)
{
    node_lock_view v;
    v.node = name;
    if (ec && ec != error::server_error) {
        v.ec = ec;
        v.message = diag.message().empty() ? ec.message() : std::string(diag.message());
        return v;
    }
    if (resp.size() != 3) {
        v.ec = make_error_code(error::protocol_error);
        v.message = "unexpected reply";
        return v;
    }
    if (resp[0].is_error()) {
        v.message = "the key is not a lock: " + std::string(resp[0].error_text());
    } else if (!resp[0].is_null()) {
        v.holder = resp[0].text;
    }
    const auto pttl = resp[1].as_integer();
    if (pttl && *pttl >= 0) v.ttl = std::chrono::milliseconds(*pttl);
    if (pttl && *pttl == -2) v.holder.reset();  // expired between the two commands
    if (!resp[2].is_null() && !resp[2].is_error()) {
        v.fence = parse_fence(resp[2].text);
        if (!v.fence) v.message = "the fencing counter holds '" + resp[2].text + "', not a number";
    }
    return v;
}

asio::awaitable<std::tuple<error_code, lock_inspection>> inspect(std::shared_ptr<client_impl> client, std::string key,
                                                                 diagnostics* diag)
{
    if (diag) diag->clear();
    lock_inspection out;
    out.key = key;
    auto& nodes = client->nodes();
    out.quorum = nodes.majority();
    if (key.empty() || nodes.size() == 0) {
        if (diag) access::set_client_message(*diag, key.empty() ? "the key is empty" : "the client has no nodes");
        co_return std::tuple{make_error_code(error::invalid_argument), std::move(out)};
    }
    request read;
    read.push("GET", key);
    read.push("PTTL", key);
    read.push("GET", fence_counter_key(key));
    read.set_timeout(read_deadline);
    auto req = std::make_shared<const request>(std::move(read));
    auto result = co_await read_nodes(client, req, key, classify_read);
    if (result->cancelled) co_return std::tuple{make_error_code(asio::error::operation_aborted), std::move(out)};
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        out.nodes.push_back(
            result->answered(i)
                ? view_of(nodes.names()[i], *result->results[i], result->replies[i], result->diags[i])
                : node_lock_view{nodes.names()[i], make_error_code(error::timeout), "no answer", {}, {}, {}});
    }
    if (diag) result->report(*diag, nodes.names());
    co_return std::tuple{read_outcome(out.reachable(), nodes.size(), out.quorum, diag), std::move(out)};
}

}  // namespace

void start_inspect(const std::shared_ptr<client_impl>& impl, std::string key, diagnostics* diag,
                   asio::any_completion_handler<void(error_code, lock_inspection)> handler)
{
    spawn_op<lock_inspection>(impl->strand(), impl->io_executor(), inspect(impl, std::move(key), diag),
                              std::move(handler));
}

}  // namespace redlock::detail
