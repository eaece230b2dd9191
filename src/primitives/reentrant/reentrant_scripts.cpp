#include "primitives/mutex/fencing.hpp"
#include "primitives/reentrant/reentrant_scripts.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::reentrant_scripts {

namespace {

std::string holds_key(const std::string& key)
{
    return aux_name(key, "holds");
}

// The reply: an integer (1 first hold, 2 re-entry, <= 0 refused) or {1 or 2, counter}.
std::optional<std::int64_t> grant_kind(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return std::nullopt;
    if (resp[0].data_type == resp::type::array) {
        if (resp[0].elements.size() != 2) return std::nullopt;
        return resp[0].elements[0].as_integer();
    }
    return resp[0].as_integer();
}

}  // namespace

// The holds set names its owner ('=' .. owner; hold ids are hex): a set that outlived its key (deleted by hand,
// lost in a failover) must not let a stale hold extend or delete a key another owner took since.
const script& acquire()
{
    static const script s(R"lua(
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl > 0 then return -pttl end
  return 0
end
local kind = 1
if owner then
  kind = 2
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
else
  redis.call('DEL', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
redis.call('SADD', KEYS[2], '=' .. ARGV[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
if not KEYS[3] then return kind end
if kind == 1 and ARGV[4] == 'increment' then redis.call('INCR', KEYS[3]) end
return {kind, redis.call('GET', KEYS[3]) or '0'}
)lua");
    return s;
}

// A hold counts only while the key exists and holds the set's owner: another owner's first hold empties the set,
// and a set that outlived its key holds nothing.
const script& extend()
{
    static const script s(R"lua(
local owner = redis.call('GET', KEYS[1])
if not owner then return 0 end
if redis.call('SISMEMBER', KEYS[2], '=' .. owner) == 0 or redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then
  return -1
end
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
if redis.call('SISMEMBER', KEYS[2], '=' .. owner) == 0 then return -1 end
if redis.call('SREM', KEYS[2], ARGV[1]) == 0 then return -1 end
if redis.call('SCARD', KEYS[2]) > 1 then return 2 end
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

request extend_request(const std::vector<std::string>& keys, const std::string& hold, std::chrono::milliseconds ttl,
                       std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(extend(), {keys.front(), holds_key(keys.front())}, {hold, std::to_string(ttl.count())});
    req.set_timeout(node_timeout);
    return req;
}

request release_request(const std::vector<std::string>& keys, const std::string& hold, std::string_view release_id,
                        std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(release(), {keys.front(), holds_key(keys.front())},
                    {hold, std::string(release_id), release_channel(keys.front())});
    req.set_timeout(node_timeout);
    return req;
}

vote classify_acquire(error_code ec, const response& resp)
{
    const auto kind = grant_kind(ec, resp);
    if (!kind) return vote::error;
    if (*kind == 1 || *kind == 2) {
        if (resp[0].data_type == resp::type::array && !parse_fence(resp[0].elements[1].text)) return vote::error;
        return vote::yes;
    }
    return *kind <= 0 ? vote::no : vote::error;
}

std::optional<std::uint64_t> granted_fence(const response& resp)
{
    if (resp.size() != 1 || resp[0].data_type != resp::type::array || resp[0].elements.size() != 2) return std::nullopt;
    return parse_fence(resp[0].elements[1].text);
}

bool reentered(const response& resp)
{
    return grant_kind({}, resp) == 2;
}

vote classify_release(error_code ec, const response& resp)
{
    const auto kind = grant_kind(ec, resp);
    if (!kind) return vote::error;
    return *kind >= 0 ? vote::yes : vote::no;
}

}  // namespace redlock::detail::reentrant_scripts
