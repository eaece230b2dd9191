#include "common/embedded_script.hpp"
#include "lua/reentrant.hpp"
#include "primitives/reentrant/reentrant_scripts.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::reentrant_scripts {

namespace {

std::string holds_key(const std::string& key)
{
    return aux_name(key, "holds");
}

std::optional<std::int64_t> script_result(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return std::nullopt;
    return resp[0].as_integer();
}

}  // namespace

request acquire_request(const std::string& key, const std::string& owner, const std::string& hold,
                        std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout, fence_step fence)
{
    std::vector<std::string> keys{key, holds_key(key)};
    if (fence != fence_step::none) keys.push_back(fence_counter_key(key));
    request req;
    req.push_script(embedded_script<lua::reentrant_acquire>(), keys,
                    {owner, std::to_string(ttl.count()), hold, fence_step_name(fence)});
    req.set_timeout(node_timeout);
    return req;
}

request commit_request(const lease_spec& lease, std::uint64_t fence, std::chrono::milliseconds node_timeout)
{
    const auto& key = lease.routing_key();
    request req;
    req.push_script(embedded_script<lua::reentrant_commit_fence>(), {key, fence_counter_key(key), holds_key(key)},
                    {lease.key_value, std::to_string(fence)});
    req.set_timeout(node_timeout);
    return req;
}

request extend_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout)
{
    const auto& key = lease.routing_key();
    request req;
    req.push_script(embedded_script<lua::reentrant_extend>(), {key, holds_key(key)},
                    {lease.token, std::to_string(ttl.count()), lease.key_value});
    req.set_timeout(node_timeout);
    return req;
}

request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout)
{
    const auto& key = lease.routing_key();
    request req;
    req.push_script(embedded_script<lua::reentrant_release>(), {key, holds_key(key)},
                    {lease.token, std::string(release_id), release_channel(key), lease.key_value});
    req.set_timeout(node_timeout);
    return req;
}

acquire_answer read_acquire(error_code ec, const response& resp)
{
    acquire_answer a;
    if (ec || resp.size() != 1) return a;
    const auto& reply = resp[0];
    if (reply.data_type == resp::type::array) {  // a fenced grant: {kind, counter, committed}
        if (reply.elements.size() != 3) return a;
        const auto kind = reply.elements[0].as_integer();
        a.fence = parse_fence(reply.elements[1].text);
        a.committed = parse_fence(reply.elements[2].text);
        if ((kind == 1 || kind == 2) && a.fence && a.committed) a.verdict = vote::yes;
        return a;
    }
    const auto kind = reply.as_integer();
    if (!kind || *kind > 2) return a;
    a.verdict = *kind > 0 ? vote::yes : vote::no;
    a.wait = wait_of_refusal(*kind);
    return a;
}

vote classify_extend(error_code ec, const response& resp)
{
    const auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n == 1 ? vote::yes : vote::no;
}

vote classify_release(error_code ec, const response& resp)
{
    const auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n >= 0 ? vote::yes : vote::no;
}

}  // namespace redlock::detail::reentrant_scripts
