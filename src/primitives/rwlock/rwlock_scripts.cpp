#include "common/embedded_script.hpp"
#include "lua/rwlock.hpp"
#include "primitives/rwlock/rwlock_scripts.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::rwlock_scripts {

namespace {

// The keys every script of the lock takes first.
std::vector<std::string> lock_keys(const std::string& name)
{
    return {name, aux_name(name, "readers"), aux_name(name, "writers")};
}

std::string ms_text(ms d)
{
    return std::to_string(d.count());
}

request release_with(const lease_spec& lease, std::string_view release_id, ms node_timeout, std::string_view what)
{
    const auto& name = lease.routing_key();
    request req;
    req.push_script(
        embedded_script<lua::rwlock_release>(), lock_keys(name),
        std::vector<std::string>{lease.token, std::string(release_id), release_channel(name), std::string(what)});
    req.set_timeout(node_timeout);
    return req;
}

std::optional<std::int64_t> script_result(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return std::nullopt;
    return resp[0].as_integer();
}

}  // namespace

request read_acquire_request(const std::string& name, const std::string& token, ms ttl, ms node_timeout)
{
    request req;
    req.push_script(embedded_script<lua::rwlock_read_acquire>(), lock_keys(name), {token, ms_text(ttl)});
    req.set_timeout(node_timeout);
    return req;
}

request write_acquire_request(const std::string& name, const std::string& token, ms ttl, ms waiter_ttl, bool marks,
                              fence_step fence, ms node_timeout)
{
    auto keys = lock_keys(name);
    if (fence != fence_step::none) keys.push_back(fence_counter_key(name));
    request req;
    req.push_script(embedded_script<lua::rwlock_write_acquire>(), keys,
                    {token, ms_text(ttl), ms_text(waiter_ttl), marks ? "1" : "0", fence_step_name(fence)});
    req.set_timeout(node_timeout);
    return req;
}

request release_request(const lease_spec& lease, std::string_view release_id, ms node_timeout)
{
    return release_with(lease, release_id, node_timeout, "all");
}

request release_keeping_mark(const lease_spec& lease, std::string_view release_id, ms node_timeout)
{
    return release_with(lease, release_id, node_timeout, "hold");
}

request release_write_side(const lease_spec& lease, std::string_view release_id, ms node_timeout)
{
    return release_with(lease, release_id, node_timeout, "write");
}

request read_extend_request(const lease_spec& lease, ms ttl, ms node_timeout)
{
    const auto& name = lease.routing_key();
    request req;
    req.push_script(embedded_script<lua::rwlock_read_extend>(), {name, aux_name(name, "readers")},
                    {lease.token, ms_text(ttl)});
    req.set_timeout(node_timeout);
    return req;
}

request read_extend_batch_request(const std::vector<batch_entry>& leases, ms node_timeout)
{
    std::vector<std::string> keys, args;
    keys.reserve(2 * leases.size());
    args.reserve(2 * leases.size());
    for (const auto& entry : leases) {
        const auto& name = entry.lease->routing_key();
        keys.push_back(name);
        keys.push_back(aux_name(name, "readers"));
        args.push_back(entry.lease->token);
        args.push_back(ms_text(entry.ttl));
    }
    request req;
    req.push_script(embedded_script<lua::rwlock_read_extend_many>(), keys, args);
    req.set_timeout(node_timeout);
    return req;
}

request read_repair_request(const lease_spec& lease, ms ttl, ms node_timeout)
{
    return read_acquire_request(lease.routing_key(), lease.token, ttl, node_timeout);
}

request write_repair_request(const lease_spec& lease, ms ttl, ms node_timeout)
{
    // No mark: the writer holds a quorum, nobody waits on its behalf.
    return write_acquire_request(lease.routing_key(), lease.token, ttl, ttl, false, fence_step::none, node_timeout);
}

vote classify_read_extend(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n == 1 ? vote::yes : vote::no;
}

bool reader_gone(const response& resp)
{
    return script_result({}, resp) == 0;
}

}  // namespace redlock::detail::rwlock_scripts
