#include "common/embedded_script.hpp"
#include "lua/election.hpp"
#include "primitives/common/fencing.hpp"
#include "primitives/election/election_scripts.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::election_scripts {

request proclaim_request(const std::string& name, const std::string& token, std::uint64_t term,
                         const std::string& value, std::uint64_t revision, const std::string& message,
                         std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(embedded_script<lua::election_proclaim>(), {name, leader_key(name)},
                    {token, std::to_string(term), value, std::to_string(revision), elected_channel(name), message});
    req.set_timeout(node_timeout);
    return req;
}

vote classify_proclaim(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return vote::error;
    const auto n = resp[0].as_integer();
    if (!n) return vote::error;
    return *n == 1 ? vote::yes : *n == 0 ? vote::no : vote::error;
}

request read_request(const std::string& name, std::chrono::milliseconds timeout)
{
    request req;
    req.push("GET", name);
    req.push("PTTL", name);
    req.push("HMGET", leader_key(name), "token", "term", "value", "revision");
    req.set_timeout(timeout);
    return req;
}

vote classify_read(error_code ec, const response& resp)
{
    return (!ec || ec == error::server_error) && resp.size() == 3 ? vote::yes : vote::error;
}

node_leader_view read_view(bool answered, error_code ec, const response& resp)
{
    node_leader_view v;
    if (!answered || classify_read(ec, resp) != vote::yes) return v;
    // An error reply other than WRONGTYPE (LOADING, NOPERM, MASTERDOWN...) says nothing of what the node holds: not an
    // answer. A key of another type (WRONGTYPE) is an answer: nobody's leadership, no holder.
    const auto unknown = [](const resp::value& r) { return r.is_error() && !r.text.starts_with("WRONGTYPE"); };
    if (unknown(resp[0]) || unknown(resp[1])) return v;
    v.answered = true;
    if (resp[0].data_type == resp::type::bulk_string || resp[0].data_type == resp::type::simple_string)
        v.holder = resp[0].text;
    const auto pttl = resp[1].as_integer();
    if (pttl && *pttl == -2) v.holder.reset();  // expired between the two commands
    if (v.holder && pttl && *pttl >= 0) v.ttl = std::chrono::milliseconds(*pttl);
    const auto& hash = resp[2];
    if (hash.is_error() || hash.elements.size() != 4) return v;
    const auto field = [&](std::size_t i) -> const resp::value& { return hash.elements[i]; };
    if (field(0).is_null() || field(0).is_error()) return v;
    const auto term = parse_fence(field(1).text);
    const auto revision = parse_fence(field(3).text);
    if (!term || !revision) return v;  // not a hash of ours: ignored
    v.hash_token = field(0).text;
    v.hash_term = *term;
    v.hash_value = field(2).is_null() ? std::string() : field(2).text;
    v.hash_revision = *revision;
    return v;
}

}  // namespace redlock::detail::election_scripts
