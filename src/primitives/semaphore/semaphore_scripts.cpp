#include "primitives/fair/fair_scripts.hpp"
#include "primitives/semaphore/semaphore_scripts.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::semaphore_scripts {

namespace {

// After the fair queue's functions (server_now, keep, drop_dead, join): the permits and their units, the limit, and
// the first fair waiter that is not a holder already. Each costs O(1) in the units of a permit; loops run over
// permits only where bounded: the expired ones (each dropped once), the first 64 in wait_for_expiry, and a recount.
constexpr std::string_view permit_functions = R"lua(
local function units_of(units, id)
  return tonumber(redis.call('HGET', units, id)) or 0
end
-- Only after a key or field was deleted or written by hand (or by a client of the old layout, one member per
-- unit): the units held, counted again from the permits. A permit whose units are unknown is forgotten, as by a
-- node that restarted empty (its holder's next successful extension gives it back if it fits).
local function recount(holders, units)
  local known, held = {}, 0
  for _, id in ipairs(redis.call('ZRANGE', holders, 0, -1)) do
    local n = tonumber(redis.call('HGET', units, id))
    if n and n > 0 then
      known[id] = n
      held = held + n
    else
      redis.call('ZREM', holders, id)
    end
  end
  redis.call('DEL', units)
  if held == 0 then return 0 end
  for id, n in pairs(known) do redis.call('HSET', units, id, n) end
  redis.call('HSET', units, 'held', held)
  local life = redis.call('PTTL', holders)
  if life > 0 then redis.call('PEXPIRE', units, life) end
  return held
end
-- The units held once the expired permits are dropped. The hash holds a field per permit and the total: any other
-- count of fields means someone else wrote the keys.
local function settle(holders, units, now)
  local held = redis.call('HGET', units, 'held')
  if held and redis.call('HLEN', units) == redis.call('ZCARD', holders) + 1 then
    held = tonumber(held)
  else
    held = recount(holders, units)
  end
  local expired = redis.call('ZRANGEBYSCORE', holders, '-inf', now)
  if #expired == 0 then return held end
  for _, id in ipairs(expired) do
    held = held - units_of(units, id)
    redis.call('HDEL', units, id)
  end
  redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)
  if held > 0 then redis.call('HSET', units, 'held', held) else redis.call('DEL', units) end
  return held
end
local function add_permit(holders, units, id, n, mine, expires)
  redis.call('ZADD', holders, expires, id)
  redis.call('HSET', units, id, n)
  redis.call('HINCRBY', units, 'held', n - mine)
end
local function drop_permit(holders, units, id, mine)
  if mine == 0 then return end
  redis.call('ZREM', holders, id)
  redis.call('HDEL', units, id)
  if redis.call('HINCRBY', units, 'held', -mine) <= 0 then redis.call('DEL', units) end
end
local function limit_of(limit_key, default, life)
  local stored = redis.call('GET', limit_key)
  if not stored then
    redis.call('SET', limit_key, default, 'PX', life)
    return tonumber(default)
  end
  local limit = tonumber(stored)
  if not limit then return redis.error_reply('the semaphore limit ' .. limit_key .. " holds '" .. stored .. "', not a number") end
  keep(limit_key, life)
  return limit
end
-- ms until `count` more units are free by expiry alone; -1 when fewer are held. Reads the 64 permits that expire
-- first at most: when they hold fewer units, the last of them gives an earlier time (an extra attempt), never a
-- later one.
local function wait_for_expiry(holders, units, count, now)
  local soonest = redis.call('ZRANGE', holders, 0, 63, 'WITHSCORES')
  local freed = 0
  for i = 1, #soonest, 2 do
    freed = freed + units_of(units, soonest[i])
    if freed >= count then return tonumber(soonest[i + 1]) - now end
  end
  if #soonest == 128 then return tonumber(soonest[128]) - now end
  return -1
end
-- The first live waiter that holds no permit (a waiter granted stays queued until it leaves or its heartbeat
-- ends); `id` counts as a waiter wherever it is.
local function first_waiter(queue, alive, holders, id)
  local i = 0
  while true do
    local w = redis.call('ZRANGE', queue, i, i)[1]
    if not w or w == id then return w end
    if not redis.call('ZSCORE', alive, w) then
      redis.call('ZREM', queue, w)
    elseif redis.call('ZSCORE', holders, w) then
      i = i + 1
    else
      return w
    end
  end
end
local function extend_one(holders, units, limit_key, id, ttl, margin, now)
  local expires = redis.call('ZSCORE', holders, id)
  if not expires or tonumber(expires) <= now then return 0 end
  redis.call('ZADD', holders, 'XX', now + ttl, id)
  keep(holders, ttl + margin)
  keep(units, ttl + margin)
  keep(limit_key, ttl + margin)
  return ttl
end
)lua";

script make_script(std::string_view body)
{
    std::string text(fair_scripts::queue_lua());
    text.append(permit_functions).append(body);
    return script(std::move(text));
}

std::string units_key(const std::string& name)
{
    return aux_name(name, "units");
}

// The permits' set and their units: every script that removes a permit keeps both in step.
std::vector<std::string> permit_keys(const std::string& name)
{
    return {name, units_key(name)};
}

// And the limit, which lives as long as the permits.
std::vector<std::string> permit_and_limit_keys(const std::string& name)
{
    return {name, units_key(name), limit_key(name)};
}

std::string ms_text(std::chrono::milliseconds d)
{
    return std::to_string(d.count());
}

}  // namespace

const script& acquire()
{
    static const script s = make_script(R"lua(
local holders, units, limit_key = KEYS[1], KEYS[2], KEYS[3]
local id, n, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local life = ttl + tonumber(ARGV[5])
local now = server_now()
local held = settle(holders, units, now)
local limit = limit_of(limit_key, ARGV[4], life)
if type(limit) == 'table' then return limit end
local mine = units_of(units, id)
held = held - mine
if held + n <= limit then
  add_permit(holders, units, id, n, mine, now + ttl)
  keep(holders, life)
  keep(units, life)
  return {1, held + n, limit}
end
-- A grant of an earlier attempt must not outlive this refusal: a refused node gets no clean-up.
drop_permit(holders, units, id, mine)
local wait = -1
if n <= limit then wait = wait_for_expiry(holders, units, held + n - limit, now) end
return {0, wait, held, limit}
)lua");
    return s;
}

const script& fair_acquire()
{
    static const script s = make_script(R"lua(
local holders, units, limit_key, queue, alive, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local id, n, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local life, wttl, ticket, channel = ttl + tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], ARGV[9]
local now = server_now()
drop_dead(queue, alive, now)
if ticket ~= '0' then join(queue, alive, counter, id, ticket, now, wttl) end
local held = settle(holders, units, now)
local limit = limit_of(limit_key, ARGV[4], life)
if type(limit) == 'table' then return limit end
local mine = units_of(units, id)
held = held - mine
local first = first_waiter(queue, alive, holders, id)
if (not first or first == id) and held + n <= limit then
  add_permit(holders, units, id, n, mine, now + ttl)
  keep(holders, life)
  keep(units, life)
  local next = first_waiter(queue, alive, holders, nil)
  if next and held + n < limit then redis.pcall('PUBLISH', channel, id .. ':next\n' .. next) end
  return {1, '0', redis.call('GET', counter) or '0', limit}
end
-- A grant of an earlier attempt while others come first: give it back to them.
if mine > 0 then
  drop_permit(holders, units, id, mine)
  redis.pcall('PUBLISH', channel, '~' .. id .. ':back\n' .. (first or ''))
end
local wait = -1
if held + n > limit and n <= limit then wait = wait_for_expiry(holders, units, held + n - limit, now) end
if first and first ~= id then
  local ends = redis.call('ZSCORE', alive, first)
  if ends and (wait < 0 or tonumber(ends) - now < wait) then wait = tonumber(ends) - now end
end
if ticket == '0' and ARGV[8] == '1' then
  ticket = tostring(redis.call('INCR', counter))
  join(queue, alive, counter, id, ticket, now, wttl)
end
return {0, wait, redis.call('GET', counter) or '0', ticket, limit}
)lua");
    return s;
}

const script& extend()
{
    static const script s = make_script(R"lua(
return extend_one(KEYS[1], KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), server_now())
)lua");
    return s;
}

const script& extend_many()
{
    static const script s = make_script(R"lua(
local margin, now, results = tonumber(ARGV[1]), server_now(), {}
for j = 1, #KEYS / 3 do
  -- pcall: keys of another type fail their own permit ("not held", -1), not the whole batch
  local ok, result = pcall(extend_one, KEYS[3 * j - 2], KEYS[3 * j - 1], KEYS[3 * j], ARGV[2 * j],
                           tonumber(ARGV[2 * j + 1]), margin, now)
  if ok then results[j] = result else results[j] = -1 end
end
return results
)lua");
    return s;
}

const script& release()
{
    // pcall: a PUBLISH the user may not make must not fail the release; waiters then wake by their timers.
    static const script s = make_script(R"lua(
local holders, units, id = KEYS[1], KEYS[2], ARGV[1]
settle(holders, units, server_now())
local mine = units_of(units, id)
drop_permit(holders, units, id, mine)
if mine > 0 then redis.pcall('PUBLISH', ARGV[3], ARGV[2] .. '\n+' .. mine) end
return mine
)lua");
    return s;
}

const script& fair_release()
{
    static const script s = make_script(R"lua(
local holders, units, queue, alive = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, leave = ARGV[1], ARGV[4] == '1'
local now = server_now()
drop_dead(queue, alive, now)
settle(holders, units, now)
local mine = units_of(units, id)
drop_permit(holders, units, id, mine)
local was_first = first_waiter(queue, alive, holders, id) == id
if leave then
  redis.call('ZREM', queue, id)
  redis.call('ZREM', alive, id)
end
if mine > 0 or (leave and was_first) then
  redis.pcall('PUBLISH', ARGV[3], ARGV[2] .. '\n' .. (first_waiter(queue, alive, holders, nil) or ''))
end
return mine
)lua");
    return s;
}

const script& set_limit()
{
    static const script s = make_script(R"lua(
local holders, units, limit_key, queue, alive = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local new, channel, change = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local old = tonumber(redis.call('GET', limit_key) or '0') or 0
local life = math.max(redis.call('PTTL', holders), redis.call('PTTL', limit_key), tonumber(ARGV[4]))
redis.call('SET', limit_key, ARGV[1], 'PX', life)
-- Every waiter looks again: a larger limit may let it in, a smaller one may put its request above the limit (it
-- then fails at once rather than sleep until its wait ends).
if new ~= old then
  redis.pcall('PUBLISH', channel, change .. '\n+*')
  local now = server_now()
  drop_dead(queue, alive, now)
  settle(holders, units, now)
  local first = first_waiter(queue, alive, holders, nil)
  if first then redis.pcall('PUBLISH', channel, change .. ':first\n' .. first) end
end
return old
)lua");
    return s;
}

std::string limit_key(const std::string& name)
{
    return aux_name(name, "limit");
}

request acquire_request(const std::string& name, const std::string& id, std::int64_t units,
                        std::chrono::milliseconds ttl, std::int64_t limit, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(acquire(), permit_and_limit_keys(name),
                    {id, std::to_string(units), ms_text(ttl), std::to_string(limit), ms_text(key_margin)});
    req.set_timeout(node_timeout);
    return req;
}

request fair_acquire_request(const std::string& name, const std::string& id, std::int64_t units,
                             std::chrono::milliseconds ttl, std::int64_t limit, std::chrono::milliseconds waiter_ttl,
                             std::uint64_t ticket, bool take_ticket, std::chrono::milliseconds node_timeout)
{
    auto keys = permit_and_limit_keys(name);
    keys.insert(keys.end(), {aux_name(name, "queue"), aux_name(name, "alive"), aux_name(name, "ticket")});
    request req;
    req.push_script(fair_acquire(), keys,
                    {id, std::to_string(units), ms_text(ttl), std::to_string(limit), ms_text(key_margin),
                     ms_text(waiter_ttl), std::to_string(ticket), take_ticket ? "1" : "0", release_channel(name)});
    req.set_timeout(node_timeout);
    return req;
}

request extend_request(const lease_spec& permit, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout)
{
    const auto& name = permit.routing_key();
    request req;
    req.push_script(extend(), permit_and_limit_keys(name), {permit.token, ms_text(ttl), ms_text(key_margin)});
    req.set_timeout(node_timeout);
    return req;
}

request extend_batch_request(const std::vector<batch_entry>& permits, std::chrono::milliseconds node_timeout)
{
    std::vector<std::string> keys, args{ms_text(key_margin)};
    keys.reserve(3 * permits.size());
    args.reserve(1 + 2 * permits.size());
    for (const auto& p : permits) {
        auto own = permit_and_limit_keys(p.lease->routing_key());
        keys.insert(keys.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
        args.push_back(p.lease->token);
        args.push_back(ms_text(p.ttl));
    }
    request req;
    req.push_script(extend_many(), keys, args);
    req.set_timeout(node_timeout);
    return req;
}

request release_request(const lease_spec& permit, std::string_view release_id, std::chrono::milliseconds node_timeout)
{
    const auto& name = permit.routing_key();
    request req;
    req.push_script(release(), permit_keys(name),
                    std::vector<std::string>{permit.token, std::string(release_id), release_channel(name)});
    req.set_timeout(node_timeout);
    return req;
}

namespace {
request fair_release_request(const std::string& name, const std::string& id, std::string_view release_id,
                             std::chrono::milliseconds node_timeout, bool leave)
{
    auto keys = permit_keys(name);
    keys.insert(keys.end(), {aux_name(name, "queue"), aux_name(name, "alive")});
    request req;
    req.push_script(fair_release(), keys,
                    std::vector<std::string>{id, std::string(release_id), release_channel(name), leave ? "1" : "0"});
    req.set_timeout(node_timeout);
    return req;
}
}  // namespace

request fair_release_and_leave(const lease_spec& permit, std::string_view release_id,
                               std::chrono::milliseconds node_timeout)
{
    return fair_release_request(permit.routing_key(), permit.token, release_id, node_timeout, true);
}

request fair_release_keeping_place(const lease_spec& permit, std::string_view release_id,
                                   std::chrono::milliseconds node_timeout)
{
    return fair_release_request(permit.routing_key(), permit.token, release_id, node_timeout, false);
}

request set_limit_request(const std::string& name, std::int64_t limit, std::string_view change_id,
                          std::chrono::milliseconds least_life, std::chrono::milliseconds node_timeout)
{
    auto keys = permit_and_limit_keys(name);
    keys.insert(keys.end(), {aux_name(name, "queue"), aux_name(name, "alive")});
    request req;
    req.push_script(set_limit(), keys,
                    std::vector<std::string>{std::to_string(limit), release_channel(name), std::string(change_id),
                                             ms_text(least_life)});
    req.set_timeout(node_timeout);
    return req;
}

request inspect_request(const std::string& name, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push("ZRANGE", name, 0, -1, "WITHSCORES");
    req.push("HGETALL", units_key(name));
    req.push("GET", limit_key(name));
    req.push("TIME");
    req.push("ZCARD", aux_name(name, "queue"));
    req.set_timeout(node_timeout);
    return req;
}

namespace {

// Either acquire's answer: a grant {1, .., limit} of 3 (plain) or 4 (fair) elements, a refusal {0, wait, ..,
// limit} of 4 or 5.
const resp::value* answer(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1 || resp[0].data_type != resp::type::array) return nullptr;
    const auto& e = resp[0].elements;
    const auto kind = e.empty() ? std::nullopt : e[0].as_integer();
    if (kind == 1 && (e.size() == 3 || e.size() == 4)) return &resp[0];
    if (kind == 0 && (e.size() == 4 || e.size() == 5)) return &resp[0];
    return nullptr;
}

std::optional<std::int64_t> script_result(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return std::nullopt;
    return resp[0].as_integer();
}

}  // namespace

vote classify_acquire(error_code ec, const response& resp)
{
    const auto* a = answer(ec, resp);
    if (!a || !reported_limit(resp)) return vote::error;
    return a->elements[0].as_integer() == 1 ? vote::yes : vote::no;
}

std::optional<std::int64_t> reported_limit(const response& resp)
{
    const auto* a = answer({}, resp);
    if (!a) return std::nullopt;
    auto limit = a->elements.back().as_integer();
    if (!limit || *limit < 0) return std::nullopt;
    return limit;
}

std::optional<std::chrono::milliseconds> wait_hint(const response& resp)
{
    const auto* a = answer({}, resp);
    if (!a || a->elements[0].as_integer() != 0) return std::nullopt;
    const auto wait = a->elements[1].as_integer();
    if (!wait || *wait < 0) return std::nullopt;
    return std::chrono::milliseconds(*wait);
}

vote classify_extend(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n > 0 ? vote::yes : vote::no;
}

std::optional<std::chrono::milliseconds> extended_for(const response& resp)
{
    auto n = script_result({}, resp);
    if (!n || *n <= 0) return std::nullopt;
    return std::chrono::milliseconds(*n);
}

bool not_held(const response& resp)
{
    return script_result({}, resp) == 0;
}

vote classify_release(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n || *n < 0) return vote::error;
    return *n > 0 ? vote::yes : vote::no;
}

}  // namespace redlock::detail::semaphore_scripts
