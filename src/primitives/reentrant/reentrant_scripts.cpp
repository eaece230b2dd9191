#include "common/embedded_script.hpp"
#include "lua/reentrant.hpp"
#include "primitives/mutex/fencing.hpp"
#include "primitives/reentrant/reentrant_scripts.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::reentrant_scripts {

namespace {

std::string holds_key(const std::string& key)
{
    return aux_name(key, "holds");
}

// The reply: an integer (1 first hold, 2 re-entry, <= 0 refused) or {1 or 2, counter, committed token}.
std::optional<std::int64_t> grant_kind(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return std::nullopt;
    if (resp[0].data_type == resp::type::array) {
        if (resp[0].elements.size() != 3) return std::nullopt;
        return resp[0].elements[0].as_integer();
    }
    return resp[0].as_integer();
}

const resp::value* fenced_element(const response& resp, std::size_t i)
{
    if (resp.size() != 1 || resp[0].data_type != resp::type::array || resp[0].elements.size() != 3) return nullptr;
    return &resp[0].elements[i];
}

}  // namespace

const script& acquire()
{
    return embedded_script<lua::reentrant_acquire>();
}

const script& commit_fence()
{
    return embedded_script<lua::reentrant_commit_fence>();
}

const script& extend()
{
    return embedded_script<lua::reentrant_extend>();
}

const script& release()
{
    return embedded_script<lua::reentrant_release>();
}

request acquire_request(const std::string& key, const std::string& owner, const std::string& hold,
                        std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout,
                        lock_scripts::fence_step fence)
{
    std::vector<std::string> keys{key, holds_key(key)};
    if (fence != lock_scripts::fence_step::none) keys.push_back(fence_counter_key(key));
    request req;
    req.push_script(acquire(), keys, {owner, std::to_string(ttl.count()), hold, lock_scripts::fence_step_name(fence)});
    req.set_timeout(node_timeout);
    return req;
}

request commit_request(const lease_spec& lease, std::uint64_t fence, std::chrono::milliseconds node_timeout)
{
    const auto& key = lease.routing_key();
    request req;
    req.push_script(commit_fence(), {key, fence_counter_key(key), holds_key(key)},
                    {lease.key_value, std::to_string(fence)});
    req.set_timeout(node_timeout);
    return req;
}

request extend_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout)
{
    const auto& key = lease.routing_key();
    request req;
    req.push_script(extend(), {key, holds_key(key)}, {lease.token, std::to_string(ttl.count()), lease.key_value});
    req.set_timeout(node_timeout);
    return req;
}

request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout)
{
    const auto& key = lease.routing_key();
    request req;
    req.push_script(release(), {key, holds_key(key)},
                    {lease.token, std::string(release_id), release_channel(key), lease.key_value});
    req.set_timeout(node_timeout);
    return req;
}

vote classify_acquire(error_code ec, const response& resp)
{
    const auto kind = grant_kind(ec, resp);
    if (!kind) return vote::error;
    if (*kind == 1 || *kind == 2) {
        if (resp[0].data_type == resp::type::array && (!granted_fence(resp) || !committed_fence(resp)))
            return vote::error;
        return vote::yes;
    }
    return *kind <= 0 ? vote::no : vote::error;
}

std::optional<std::uint64_t> granted_fence(const response& resp)
{
    const auto* counter = fenced_element(resp, 1);
    return counter ? parse_fence(counter->text) : std::nullopt;
}

std::optional<std::uint64_t> committed_fence(const response& resp)
{
    const auto* committed = fenced_element(resp, 2);
    return committed ? parse_fence(committed->text) : std::nullopt;
}

vote classify_release(error_code ec, const response& resp)
{
    const auto kind = grant_kind(ec, resp);
    if (!kind) return vote::error;
    return *kind >= 0 ? vote::yes : vote::no;
}

}  // namespace redlock::detail::reentrant_scripts
