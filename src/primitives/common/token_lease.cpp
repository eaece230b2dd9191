#include "common/embedded_script.hpp"
#include "lua/common.hpp"
#include "primitives/common/fencing.hpp"
#include "primitives/common/token_lease.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::token_lease {

namespace {

// The lock keys followed by their fence counters.
std::vector<std::string> keys_and_counters(const std::vector<std::string>& keys)
{
    auto all = keys;
    for (const auto& key : keys) all.push_back(fence_counter_key(key));
    return all;
}

std::optional<std::int64_t> script_result(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return std::nullopt;
    return resp[0].as_integer();
}

}  // namespace

request acquire_request(const std::vector<std::string>& keys, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(embedded_script<lua::common_acquire>(), keys, {token, std::to_string(ttl.count())});
    req.set_timeout(node_timeout);
    return req;
}

request repair_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout)
{
    return acquire_request(lease.keys, lease.token, ttl, node_timeout);
}

request extend_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(embedded_script<lua::common_extend>(), lease.keys, {lease.token, std::to_string(ttl.count())});
    req.set_timeout(node_timeout);
    return req;
}

request extend_batch_request(const std::vector<batch_entry>& leases, std::chrono::milliseconds node_timeout)
{
    std::vector<std::string> keys, args;
    for (const auto& entry : leases) {
        const auto& lease = *entry.lease;
        keys.insert(keys.end(), lease.keys.begin(), lease.keys.end());
        args.push_back(std::to_string(lease.keys.size()));
        args.push_back(lease.token);
        args.push_back(std::to_string(entry.ttl.count()));
    }
    request req;
    req.push_script(embedded_script<lua::common_extend_many>(), keys, args);
    req.set_timeout(node_timeout);
    return req;
}

request commit_request(const lease_spec& lease, std::uint64_t fence, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(embedded_script<lua::common_commit_fence>(), keys_and_counters(lease.keys),
                    {lease.key_value, std::to_string(fence)});
    req.set_timeout(node_timeout);
    return req;
}

acquire_answer read_acquire(error_code ec, const response& resp)
{
    acquire_answer a;
    if (ec || resp.size() != 1) return a;
    const auto& reply = resp[0];
    if (reply.data_type == resp::type::array) {  // a fenced grant: {1, counter}
        if (reply.elements.size() != 2 || reply.elements[0].as_integer() != 1) return a;
        a.fence = parse_fence(reply.elements[1].text);
        if (a.fence) a.verdict = vote::yes;
        return a;
    }
    const auto n = reply.as_integer();
    if (!n) return a;
    a.verdict = *n == 1 ? vote::yes : vote::no;
    if (*n != 1) a.wait = wait_of_refusal(*n);
    return a;
}

vote classify_commit(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n == 1 ? vote::yes : vote::no;
}

vote classify_extend(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n == 1 ? vote::yes : vote::no;
}

bool lost_key(const response& resp)
{
    return script_result({}, resp) == 0;
}

vote classify_release(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n >= 0 ? vote::yes : vote::no;  // released, or nothing of ours left: both mean "not held by us"
}

}  // namespace redlock::detail::token_lease
