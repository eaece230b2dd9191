#include "primitives/fair/fair_scripts.hpp"
#include "primitives/mutex/fencing.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::fair_scripts {

namespace {

// Server time in ms; dropping the waiters whose heartbeat ended (from both sets); keeping a key alive.
constexpr std::string_view queue_functions = R"lua(
local function server_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function drop_dead(queue, alive, now)
  local dead = redis.call('ZRANGEBYSCORE', alive, '-inf', now)
  for _, waiter in ipairs(dead) do redis.call('ZREM', queue, waiter) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', alive, '-inf', now) end
end
-- The first live waiter: one without a heartbeat (its alive entry lost, say by hand) is dropped, not waited for.
local function head(queue, alive)
  local first = redis.call('ZRANGE', queue, 0, 0)[1]
  while first and not redis.call('ZSCORE', alive, first) do
    redis.call('ZREM', queue, first)
    first = redis.call('ZRANGE', queue, 0, 0)[1]
  end
  return first
end
local function keep(key, life)
  if redis.call('PTTL', key) < life then redis.call('PEXPIRE', key, life) end
end
local function join(queue, alive, counter, token, ticket, now, wttl)
  if not redis.call('ZSCORE', queue, token) then redis.call('ZADD', queue, ticket, token) end
  local highest = redis.call('GET', counter)
  -- KEEPTTL: a waiter with a shorter waiter TTL must not cut the life a longer one gave the counter
  if not highest or tonumber(highest) < tonumber(ticket) then redis.call('SET', counter, ticket, 'KEEPTTL') end
  redis.call('ZADD', alive, now + wttl, token)
  keep(queue, 2 * wttl)
  keep(alive, 2 * wttl)
  keep(counter, 2 * wttl)
end
)lua";

script make_script(std::string_view body)
{
    std::string text(queue_functions);
    text.append(body);
    return script(std::move(text));
}

// A fair semaphore appends its node's limit to the replies; the elements read here come first in both.
constexpr std::size_t grant_size = 3;
constexpr std::size_t refusal_size = 4;

std::vector<std::string> queue_keys(const std::string& key)
{
    return {key, aux_name(key, "queue"), aux_name(key, "alive")};
}

// A refusal: {0, wait, counter, ticket}.
const resp::value* refusal(const response& resp)
{
    if (resp.size() != 1 || resp[0].data_type != resp::type::array || resp[0].elements.size() < refusal_size)
        return nullptr;
    if (resp[0].elements[0].as_integer() != 0) return nullptr;
    return &resp[0];
}

std::optional<std::uint64_t> number(const resp::value& v)
{
    if (auto n = v.as_integer(); n && *n >= 0) return static_cast<std::uint64_t>(*n);
    return parse_fence(v.text);
}

}  // namespace

std::string_view queue_lua() noexcept
{
    return queue_functions;
}

const script& acquire()
{
    static const script s = make_script(R"lua(
local key, queue, alive, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, wttl, ticket = ARGV[1], tonumber(ARGV[3]), ARGV[4]
local now = server_now()
drop_dead(queue, alive, now)
if ticket ~= '0' then join(queue, alive, counter, token, ticket, now, wttl) end
local holder = redis.call('GET', key)
local first = head(queue, alive)
if (not holder or holder == token) and (not first or first == token) then
  redis.call('SET', key, token, 'PX', ARGV[2])
  local fence = '0'
  if KEYS[5] then
    if ARGV[6] == 'increment' then redis.call('INCR', KEYS[5]) end
    fence = redis.call('GET', KEYS[5]) or '0'
  end
  return {1, fence, redis.call('GET', counter) or '0'}
end
-- Our key from a clean-up that never arrived, while someone else is first: give it back to the queue.
if holder == token then
  redis.call('DEL', key)
  redis.pcall('PUBLISH', ARGV[7], '~' .. token .. ':back\n' .. first)
end
local wait = 0
if holder and holder ~= token then
  wait = redis.call('PTTL', key)
else
  local ends = redis.call('ZSCORE', alive, first)
  if ends then wait = tonumber(ends) - now end
end
if ticket == '0' and ARGV[5] == '1' then
  ticket = tostring(redis.call('INCR', counter))
  join(queue, alive, counter, token, ticket, now, wttl)
end
return {0, wait, redis.call('GET', counter) or '0', ticket}
)lua");
    return s;
}

const script& release()
{
    // pcall: a PUBLISH the user may not make must not fail the release; waiters then wake by their timers.
    static const script s = make_script(R"lua(
local key, queue, alive = KEYS[1], KEYS[2], KEYS[3]
local token, leave = ARGV[1], ARGV[4] == '1'
drop_dead(queue, alive, server_now())
local owner = redis.call('GET', key)
local freed = owner == token
if freed then redis.call('DEL', key) end
local was_first = head(queue, alive) == token
if leave then
  redis.call('ZREM', queue, token)
  redis.call('ZREM', alive, token)
end
if freed or (leave and was_first and not owner) then
  local next = head(queue, alive) or ''
  redis.pcall('PUBLISH', ARGV[3], ARGV[2] .. '\n' .. next)
end
if owner and not freed then return -1 end
if freed then return 1 end
return 0
)lua");
    return s;
}

request acquire_request(const std::string& key, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds waiter_ttl, std::uint64_t ticket, bool take_ticket,
                        lock_scripts::fence_step fence, std::chrono::milliseconds node_timeout)
{
    auto keys = queue_keys(key);
    keys.push_back(aux_name(key, "ticket"));
    if (fence != lock_scripts::fence_step::none) keys.push_back(fence_counter_key(key));
    request req;
    req.push_script(acquire(), keys,
                    {token, std::to_string(ttl.count()), std::to_string(waiter_ttl.count()), std::to_string(ticket),
                     take_ticket ? "1" : "0", lock_scripts::fence_step_name(fence), release_channel(key)});
    req.set_timeout(node_timeout);
    return req;
}

namespace {
request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout,
                        bool leave)
{
    const auto& key = lease.routing_key();
    request req;
    req.push_script(release(), queue_keys(key),
                    {lease.token, std::string(release_id), release_channel(key), leave ? "1" : "0"});
    req.set_timeout(node_timeout);
    return req;
}
}  // namespace

request release_keeping_place(const lease_spec& lease, std::string_view release_id,
                              std::chrono::milliseconds node_timeout)
{
    return release_request(lease, release_id, node_timeout, false);
}

request release_and_leave(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout)
{
    return release_request(lease, release_id, node_timeout, true);
}

vote classify_acquire(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1 || resp[0].data_type != resp::type::array || resp[0].elements.empty())
        return vote::error;
    const auto& e = resp[0].elements;
    if (e[0].as_integer() == 1 && e.size() >= grant_size) return parse_fence(e[1].text) ? vote::yes : vote::error;
    return refusal(resp) ? vote::no : vote::error;
}

std::optional<std::uint64_t> granted_fence(const response& resp)
{
    if (resp.size() != 1 || resp[0].data_type != resp::type::array || resp[0].elements.size() < grant_size ||
        resp[0].elements[0].as_integer() != 1)
        return std::nullopt;
    return parse_fence(resp[0].elements[1].text);
}

std::optional<std::chrono::milliseconds> wait_hint(const response& resp)
{
    const auto* r = refusal(resp);
    if (!r) return std::nullopt;
    const auto wait = r->elements[1].as_integer();
    if (!wait || *wait < 0) return std::nullopt;  // a key without TTL
    return std::chrono::milliseconds(*wait);
}

std::optional<std::uint64_t> counter(const response& resp)
{
    if (const auto* r = refusal(resp)) return number(r->elements[2]);
    if (granted_fence(resp)) return number(resp[0].elements[2]);
    return std::nullopt;
}

std::optional<std::uint64_t> ticket(const response& resp)
{
    const auto* r = refusal(resp);
    return r ? number(r->elements[3]) : std::nullopt;
}

}  // namespace redlock::detail::fair_scripts
