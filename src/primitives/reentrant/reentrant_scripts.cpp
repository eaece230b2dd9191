#include "primitives/mutex/fence_lua.hpp"
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

// The first hold deletes whatever holds the key had: an earlier owner's, or a hash that outlived its key (deleted
// by hand, lost in a failover), so that no stale hold or committed token carries over.
const script& acquire()
{
    static const script s(R"lua(
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl > 0 then return -pttl end
  return 0
end
local mark = '=' .. ARGV[1]
local kind = 1
if owner then
  kind = 2
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
else
  redis.call('DEL', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
redis.call('HSETNX', KEYS[2], mark, '0')
redis.call('HSET', KEYS[2], ARGV[3], '1')
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
if not KEYS[3] then return kind end
local committed = redis.call('HGET', KEYS[2], mark)
if ARGV[4] == 'increment' and committed == '0' then
  redis.call('INCR', KEYS[3])
  committed = redis.call('GET', KEYS[3])
  redis.call('HSET', KEYS[2], mark, committed)
end
return {kind, redis.call('GET', KEYS[3]) or '0', committed}
)lua");
    return s;
}

const script& commit_fence()
{
    static const script s(std::string(fence_lua_functions) + R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if not less(fence_of(KEYS[2]), ARGV[2]) then return -1 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], '=' .. ARGV[1], ARGV[2])
return 1
)lua");
    return s;
}

// A hold counts only while its owner holds the key and the holds still have it: another owner's first hold, or
// the same owner's after the key had lapsed, starts the holds afresh.
const script& extend()
{
    static const script s(R"lua(
local owner = redis.call('GET', KEYS[1])
if not owner then return 0 end
if owner ~= ARGV[3] then return -1 end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1
)lua");
    return s;
}

const script& release()
{
    static const script s(R"lua(
local owner = redis.call('GET', KEYS[1])
if not owner then
  redis.call('DEL', KEYS[2])
  return 0
end
if owner ~= ARGV[4] then return -1 end
if redis.call('HDEL', KEYS[2], ARGV[1]) == 0 then return 0 end
if redis.call('HLEN', KEYS[2]) - redis.call('HEXISTS', KEYS[2], '=' .. owner) > 0 then return 2 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.pcall('PUBLISH', ARGV[3], ARGV[2])
return 1
)lua");
    return s;
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
