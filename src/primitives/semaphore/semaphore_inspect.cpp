// semaphore::async_inspect: the permits, limit and queue on each node, read with plain commands (no script, so a
// read-only ACL user may call it). Remaining times are computed against each node's own TIME.
#include "primitives/common/read_nodes.hpp"
#include "primitives/semaphore/semaphore_scripts.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/semaphore.hpp>

#include <algorithm>
#include <charconv>
#include <map>

namespace redlock::detail {
namespace {

namespace asio = boost::asio;
using ms = std::chrono::milliseconds;

constexpr std::size_t replies_per_read = 5;  // ZRANGE WITHSCORES, HGETALL units, GET limit, TIME, ZCARD queue

vote classify_read(error_code ec, const response& resp)
{
    return !ec || ec == error::server_error ? (resp.size() == replies_per_read ? vote::yes : vote::error) : vote::error;
}

std::optional<double> number(const resp::value& v)
{
    double d = 0;
    const auto* end = v.text.data() + v.text.size();
    const auto [p, ec] = std::from_chars(v.text.data(), end, d);
    if (ec != std::errc{} || p != end || v.text.empty()) return std::nullopt;
    return d;
}

// The server's TIME in ms.
std::optional<std::int64_t> server_ms(const resp::value& time)
{
    if (time.elements.size() != 2) return std::nullopt;
    const auto s = time.elements[0].as_integer();
    const auto us = time.elements[1].as_integer();
    if (!s || !us) return std::nullopt;
    return *s * 1000 + *us / 1000;
}

// ZRANGE WITHSCORES: pairs [member, score] in RESP3, a flat member, score, ... list in RESP2.
std::vector<std::pair<std::string, double>> scored_members(const resp::value& range)
{
    std::vector<std::pair<std::string, double>> out;
    const auto& e = range.elements;
    for (std::size_t i = 0; i < e.size(); ++i) {
        const bool pair = e[i].elements.size() == 2;
        const auto& member = pair ? e[i].elements[0] : e[i];
        const auto* score = pair ? &e[i].elements[1] : (i + 1 < e.size() ? &e[++i] : nullptr);
        if (auto s = score ? number(*score) : std::nullopt) out.emplace_back(member.text, *s);
    }
    return out;
}

// HGETALL of the units: a map in RESP3, a flat field, value, ... list in RESP2 (both flat here); `held`, their
// sum, is no permit.
std::map<std::string, std::int64_t> units_by_id(const resp::value& hash)
{
    std::map<std::string, std::int64_t> out;
    const auto& e = hash.elements;
    for (std::size_t i = 0; i + 1 < e.size(); i += 2)
        if (auto n = e[i + 1].as_integer(); n && *n > 0 && e[i].text != "held") out.emplace(e[i].text, *n);
    return out;
}

node_semaphore_view view_of(const std::string& node, error_code ec, const response& resp, const diagnostics& diag)
{
    node_semaphore_view v;
    v.node = node;
    if (ec && ec != error::server_error) {
        v.ec = ec;
        v.message = diag.message().empty() ? ec.message() : std::string(diag.message());
        return v;
    }
    const auto now = resp.size() == replies_per_read ? server_ms(resp[3]) : std::nullopt;
    if (!now) {
        v.ec = make_error_code(error::protocol_error);
        v.message = "unexpected reply";
        return v;
    }
    if (resp[0].is_error()) {
        v.message = "the key is not a semaphore: " + std::string(resp[0].error_text());
    } else {
        const auto units = units_by_id(resp[1]);
        for (const auto& [id, expires] : scored_members(resp[0])) {
            const auto left = static_cast<std::int64_t>(expires) - *now;
            const auto count = units.find(id);
            // Expired, or its units unknown (the keys written by hand): the next script on that node drops it.
            if (left <= 0 || count == units.end()) continue;
            v.permits.push_back({id, count->second, ms(left)});
        }
    }
    if (!resp[2].is_null() && !resp[2].is_error()) {
        v.limit = resp[2].as_integer();
        if (!v.limit) v.message = "the limit holds '" + resp[2].text + "', not a number";
    }
    if (auto waiters = resp[4].as_integer(); waiters && *waiters > 0) v.waiters = static_cast<std::size_t>(*waiters);
    return v;
}

asio::awaitable<std::tuple<error_code, semaphore_inspection>> inspect(std::shared_ptr<client_impl> client,
                                                                      std::string name, std::int64_t limit,
                                                                      diagnostics* diag)
{
    if (diag) diag->clear();
    semaphore_inspection out;
    out.name = name;
    auto& nodes = client->nodes();
    if (name.empty() || nodes.size() == 0) {
        if (diag)
            access::set_client_message(*diag,
                                       name.empty() ? "the semaphore's name is empty" : "the client has no nodes");
        co_return std::tuple{make_error_code(error::invalid_argument), std::move(out)};
    }
    auto req = std::make_shared<const request>(semaphore_scripts::inspect_request(name, read_deadline));
    auto result = co_await read_nodes(client, req, name, classify_read);
    if (result->cancelled) co_return std::tuple{make_error_code(asio::error::operation_aborted), std::move(out)};
    out.limit = limit;
    bool stored = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        out.nodes.push_back(
            result->answered(i)
                ? view_of(nodes.names()[i], *result->results[i], result->replies[i], result->diags[i])
                : node_semaphore_view{nodes.names()[i], make_error_code(error::timeout), "no answer", {}, {}, 0});
        if (const auto& l = out.nodes.back().limit; l && *l >= 1) {
            out.limit = stored ? std::max(out.limit, *l) : *l;
            stored = true;
        }
    }
    out.quorum = out.limit >= 1 ? permit_quorum(nodes.size(), static_cast<std::size_t>(out.limit)) : nodes.size();
    if (diag) result->report(*diag, nodes.names());
    co_return std::tuple{read_outcome(out.reachable(), nodes.size(), out.quorum, diag), std::move(out)};
}

}  // namespace

void start_inspect_semaphore(const std::shared_ptr<client_impl>& client, std::string name, std::int64_t limit,
                             diagnostics* diag,
                             asio::any_completion_handler<void(error_code, semaphore_inspection)> handler)
{
    spawn_op<semaphore_inspection>(client->strand(), client->io_executor(),
                                   inspect(client, std::move(name), limit, diag), std::move(handler));
}

}  // namespace redlock::detail
