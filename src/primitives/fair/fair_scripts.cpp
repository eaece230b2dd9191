#include "common/embedded_script.hpp"
#include "lua/fair.hpp"
#include "primitives/fair/fair_scripts.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::fair_scripts {

namespace {

std::vector<std::string> queue_keys(const std::string& key)
{
    return {key, aux_name(key, "queue"), aux_name(key, "alive")};
}

request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout,
                        bool leave)
{
    const auto& key = lease.routing_key();
    request req;
    req.push_script(embedded_script<lua::fair_release>(), queue_keys(key),
                    {lease.token, std::string(release_id), release_channel(key), leave ? "1" : "0"});
    req.set_timeout(node_timeout);
    return req;
}

}  // namespace

request acquire_request(const std::string& key, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds waiter_ttl, std::uint64_t ticket, bool take_ticket, fence_step fence,
                        std::chrono::milliseconds node_timeout)
{
    auto keys = queue_keys(key);
    keys.push_back(aux_name(key, "ticket"));
    if (fence != fence_step::none) keys.push_back(fence_counter_key(key));
    request req;
    req.push_script(embedded_script<lua::fair_acquire>(), keys,
                    {token, std::to_string(ttl.count()), std::to_string(waiter_ttl.count()), std::to_string(ticket),
                     take_ticket ? "1" : "0", fence_step_name(fence), release_channel(key)});
    req.set_timeout(node_timeout);
    return req;
}

request release_keeping_place(const lease_spec& lease, std::string_view release_id,
                              std::chrono::milliseconds node_timeout)
{
    return release_request(lease, release_id, node_timeout, false);
}

request release_and_leave(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout)
{
    return release_request(lease, release_id, node_timeout, true);
}

}  // namespace redlock::detail::fair_scripts
