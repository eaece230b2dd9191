#include "common/embedded_script.hpp"
#include "lua/mutex.hpp"
#include "primitives/common/token_lease.hpp"
#include "primitives/mutex/plain_scripts.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::plain_scripts {

namespace {

// The lock keys followed by their fence counters.
std::vector<std::string> keys_and_counters(const std::vector<std::string>& keys)
{
    auto all = keys;
    for (const auto& key : keys) all.push_back(fence_counter_key(key));
    return all;
}

acquire_answer read_set_acquire(error_code ec, const response& resp)
{
    acquire_answer a;
    if (ec) return a;
    if (resp[0].is_null()) {
        a.verdict = vote::yes;
    } else if (resp[0].data_type == resp::type::bulk_string) {
        // A token: someone holds the key. Never our own: a set acquire is only the first attempt of a fresh token.
        a.verdict = vote::no;
        if (const auto pttl = resp[1].as_integer(); pttl && *pttl > 0) a.wait = std::chrono::milliseconds(*pttl);
    }
    return a;
}

}  // namespace

request acquire_request(const std::vector<std::string>& keys, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds node_timeout, fence_step fence)
{
    if (fence == fence_step::none) return token_lease::acquire_request(keys, token, ttl, node_timeout);
    request req;
    const auto& s = fence == fence_step::read ? embedded_script<lua::mutex_acquire_reading_fence>()
                                              : embedded_script<lua::mutex_acquire_incrementing_fence>();
    req.push_script(s, keys_and_counters(keys), {token, std::to_string(ttl.count())});
    req.set_timeout(node_timeout);
    return req;
}

request set_acquire_request(const std::string& key, const std::string& token, std::chrono::milliseconds ttl,
                            std::chrono::milliseconds node_timeout)
{
    request req;
    req.push("SET", key, token, "NX", "PX", ttl.count(), "GET");
    req.push("PTTL", key);
    req.set_timeout(node_timeout);
    return req;
}

request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout)
{
    const auto& keys = lease.keys;
    request req;
    if (keys.size() == 1) {  // every release of a one-key lock: no vectors of copies
        req.push_script(embedded_script<lua::mutex_release>(), {keys.front()},
                        {lease.token, release_id, release_channel(keys.front())});
    } else {
        std::vector<std::string> args{lease.token, std::string(release_id)};
        for (const auto& key : keys) args.push_back(release_channel(key));
        req.push_script(embedded_script<lua::mutex_release>(), keys, args);
    }
    req.set_timeout(node_timeout);
    return req;
}

acquire_answer read_acquire(error_code ec, const response& resp)
{
    if (resp.size() == 2) return read_set_acquire(ec, resp);
    return token_lease::read_acquire(ec, resp);
}

bool set_acquire_rejected(const response& resp)
{
    // Any error but WRONGTYPE (the key holds another type: the script fails on it too), and an OK from a
    // proxy that dropped GET: the script's answer is the one to trust.
    for (const auto& reply : resp) {
        if (reply.is_error() && !reply.error_text().starts_with("WRONGTYPE")) return true;
        if (reply.data_type == resp::type::simple_string) return true;
    }
    return false;
}

}  // namespace redlock::detail::plain_scripts
