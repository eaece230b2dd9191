#include "primitives/mutex/fence_lua.hpp"
#include "primitives/mutex/fencing.hpp"
#include "primitives/mutex/lock_scripts.hpp"

#include <redlock/key_layout.hpp>

#include <limits>
#include <string_view>

namespace redlock::detail::lock_scripts {

namespace {

// The first `n` KEYS are the lock keys. Sets them all to the token (ARGV[1]) with the ttl (ARGV[2]) unless
// another token holds one of them; then the script returns -(that holder's PTTL), or 0 if its key has no TTL.
constexpr std::string_view grant_or_refuse = R"lua(
for i = 1, n do
  local owner = redis.call('GET', KEYS[i])
  if owner and owner ~= ARGV[1] then
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl > 0 then return -pttl end
    return 0
  end
end
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
)lua";

// `highest_fence()`: the largest counter among KEYS[n + 1 ..], '0' if none is set.
constexpr std::string_view highest_fence_function = R"lua(
local function highest_fence()
  local highest = '0'
  for i = n + 1, #KEYS do
    local f = fence_of(KEYS[i])
    if less(highest, f) then highest = f end
  end
  return highest
end
)lua";

script make_script(std::string_view key_count, std::initializer_list<std::string_view> parts)
{
    std::string text = "local n = ";
    text.append(key_count).append("\n");
    for (auto part : parts) text.append(part);
    return script(std::move(text));
}

}  // namespace

const script& acquire()
{
    static const script s = make_script("#KEYS", {grant_or_refuse, "return 1\n"});
    return s;
}

const script& acquire_reading_fence()
{
    static const script s = make_script(
        "#KEYS / 2", {fence_lua_functions, highest_fence_function, grant_or_refuse, "return {1, highest_fence()}\n"});
    return s;
}

const script& acquire_incrementing_fence()
{
    // Every counter goes to 1 + the highest of them; INCR keeps the arithmetic exact.
    static const script s =
        make_script("#KEYS / 2", {fence_lua_functions, highest_fence_function, grant_or_refuse, R"lua(
local highest = highest_fence()
for i = n + 1, #KEYS do
  if fence_of(KEYS[i]) ~= highest then redis.call('SET', KEYS[i], highest) end
  redis.call('INCR', KEYS[i])
end
return {1, redis.call('GET', KEYS[#KEYS])}
)lua"});
    return s;
}

const script& commit_fence()
{
    static const script s = make_script("#KEYS / 2", {fence_lua_functions, R"lua(
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then return 0 end
end
for i = n + 1, #KEYS do
  if not less(fence_of(KEYS[i]), ARGV[2]) then return -1 end
end
for i = n + 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[2])
end
return 1
)lua"});
    return s;
}

const script& extend()
{
    static const script s(R"lua(
local missing = false
for i = 1, #KEYS do
  local owner = redis.call('GET', KEYS[i])
  if owner == false then
    missing = true
  elseif owner ~= ARGV[1] then
    return -1
  end
end
if missing then return 0 end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
)lua");
    return s;
}

const script& extend_many()
{
    static const script s(R"lua(
local results, k = {}, 1
for a = 1, #ARGV, 3 do
  local n, token, ttl = tonumber(ARGV[a]), ARGV[a + 1], ARGV[a + 2]
  local result = 1
  for i = k, k + n - 1 do
    -- pcall: a key of another type is "not ours" for its lease, not an error for the whole batch
    local owner = redis.pcall('GET', KEYS[i])
    if type(owner) == 'table' then
      result = -1
    elseif owner == false then
      if result == 1 then result = 0 end
    elseif owner ~= token then
      result = -1
    end
  end
  if result == 1 then
    for i = k, k + n - 1 do redis.call('PEXPIRE', KEYS[i], ttl) end
  end
  results[#results + 1] = result
  k = k + n
end
return results
)lua");
    return s;
}

const script& release()
{
    // pcall: a PUBLISH the user may not make (an ACL without channel rights) must not turn the DEL that
    // happened into a failed release; waiters then wake by their timers.
    static const script s(R"lua(
local released, others = 0, 0
for i = 1, #KEYS do
  local owner = redis.call('GET', KEYS[i])
  if owner == ARGV[1] then
    redis.call('DEL', KEYS[i])
    released = released + 1
    if ARGV[i + 2] then redis.pcall('PUBLISH', ARGV[i + 2], ARGV[2]) end
  elseif owner then
    others = others + 1
  end
end
if others > 0 then return -others end
return released
)lua");
    return s;
}

const char* fence_step_name(fence_step fence) noexcept
{
    switch (fence) {
        case fence_step::read:
            return "read";
        case fence_step::increment:
            return "increment";
        case fence_step::none:
            break;
    }
    return "none";
}

namespace {
// The lock keys followed by their fence counters.
std::vector<std::string> keys_and_counters(const std::vector<std::string>& keys)
{
    auto all = keys;
    for (const auto& key : keys) all.push_back(fence_counter_key(key));
    return all;
}
}  // namespace

request acquire_request(const std::vector<std::string>& keys, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds node_timeout, fence_step fence)
{
    request req;
    const std::vector<std::string> args{token, std::to_string(ttl.count())};
    switch (fence) {
        case fence_step::none:
            req.push_script(acquire(), keys, args);
            break;
        case fence_step::read:
            req.push_script(acquire_reading_fence(), keys_and_counters(keys), args);
            break;
        case fence_step::increment:
            req.push_script(acquire_incrementing_fence(), keys_and_counters(keys), args);
            break;
    }
    req.set_timeout(node_timeout);
    return req;
}

request commit_request(const lease_spec& lease, std::uint64_t fence, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(commit_fence(), keys_and_counters(lease.keys), {lease.key_value, std::to_string(fence)});
    req.set_timeout(node_timeout);
    return req;
}

request extend_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(extend(), lease.keys, {lease.token, std::to_string(ttl.count())});
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
    req.push_script(extend_many(), keys, args);
    req.set_timeout(node_timeout);
    return req;
}

request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout)
{
    const auto& keys = lease.keys;
    const auto& token = lease.token;
    if (keys.size() == 1) {  // every release of a one-key lock: no vectors of copies
        request req;
        req.push_script(release(), {keys.front()}, {token, release_id, release_channel(keys.front())});
        req.set_timeout(node_timeout);
        return req;
    }
    std::vector<std::string> args{token, std::string(release_id)};
    for (const auto& key : keys) args.push_back(release_channel(key));
    request req;
    req.push_script(release(), keys, args);
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

vote classify_set_acquire(error_code ec, const response& resp)
{
    if (ec || resp.size() != 2) return vote::error;
    if (resp[0].is_null()) return vote::yes;
    // A token: someone holds the key. Never our own: a set acquire is only the first attempt of a fresh token.
    // (A simple string is no token: a proxy that dropped GET answers OK, and may have set the key.)
    return resp[0].data_type == resp::type::bulk_string ? vote::no : vote::error;
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

namespace {
std::optional<std::int64_t> script_result(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return std::nullopt;
    return resp[0].as_integer();
}

// A fenced grant: the array {1, counter}.
const resp::value* fenced_grant(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1 || resp[0].data_type != resp::type::array || resp[0].elements.size() != 2)
        return nullptr;
    if (resp[0].elements[0].as_integer() != 1) return nullptr;
    return &resp[0].elements[1];
}
}  // namespace

vote classify_acquire(error_code ec, const response& resp)
{
    if (const auto* counter = fenced_grant(ec, resp)) return parse_fence(counter->text) ? vote::yes : vote::error;
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n == 1 ? vote::yes : vote::no;
}

std::optional<std::uint64_t> granted_fence(const response& resp)
{
    const auto* counter = fenced_grant({}, resp);
    if (!counter) return std::nullopt;
    return parse_fence(counter->text);
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

std::optional<std::chrono::milliseconds> holder_ttl(const response& resp)
{
    if (resp.size() == 2 && resp[0].data_type == resp::type::bulk_string) {  // a refused set acquire: {token, PTTL}
        auto pttl = resp[1].as_integer();
        if (!pttl || *pttl <= 0) return std::nullopt;
        return std::chrono::milliseconds(*pttl);
    }
    auto n = script_result({}, resp);
    if (!n || *n >= 0) return std::nullopt;
    if (*n == std::numeric_limits<std::int64_t>::min()) return std::chrono::milliseconds::max();  // no -n
    return std::chrono::milliseconds(-*n);
}

}  // namespace redlock::detail::lock_scripts
