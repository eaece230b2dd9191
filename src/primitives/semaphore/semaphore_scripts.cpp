#include "primitives/fair/fair_scripts.hpp"
#include "primitives/semaphore/semaphore_scripts.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::semaphore_scripts {

namespace {

// After the fair queue's functions (server_now, keep, drop_dead, join): the permits' units, the limit, and the
// first fair waiter that is not a holder already.
constexpr std::string_view permit_functions = R"lua(
local function unit(id, k)
  if k == 1 then return id end
  return id .. ':' .. k
end
local function units_of(holders, id)
  local k = 0
  while redis.call('ZSCORE', holders, unit(id, k + 1)) do k = k + 1 end
  return k
end
local function drop_units(holders, id, count)
  for k = 1, count do redis.call('ZREM', holders, unit(id, k)) end
end
local function expire_permits(holders, now)
  redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)
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
-- ms until `count` more units are free by expiry alone; -1 when fewer are held
local function wait_for_expiry(holders, count, now)
  local nth = redis.call('ZRANGE', holders, count - 1, count - 1, 'WITHSCORES')
  if not nth[2] then return -1 end
  return tonumber(nth[2]) - now
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
local function extend_one(holders, limit_key, id, ttl, margin, now)
  expire_permits(holders, now)
  local mine = units_of(holders, id)
  if mine == 0 then return 0 end
  for k = 1, mine do redis.call('ZADD', holders, 'XX', now + ttl, unit(id, k)) end
  keep(holders, ttl + margin)
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

std::vector<std::string> queue_keys(const std::string& name)
{
    return {aux_name(name, "queue"), aux_name(name, "alive")};
}

std::string ms_text(std::chrono::milliseconds d)
{
    return std::to_string(d.count());
}

}  // namespace

const script& acquire()
{
    static const script s = make_script(R"lua(
local holders, limit_key = KEYS[1], KEYS[2]
local id, n, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local life = ttl + tonumber(ARGV[5])
local now = server_now()
expire_permits(holders, now)
local limit = limit_of(limit_key, ARGV[4], life)
if type(limit) == 'table' then return limit end
local mine = units_of(holders, id)
local held = redis.call('ZCARD', holders) - mine
if held + n <= limit then
  for k = 1, n do redis.call('ZADD', holders, now + ttl, unit(id, k)) end
  keep(holders, life)
  return {1, held + n, limit}
end
-- A grant of an earlier attempt must not outlive this refusal: a refused node gets no clean-up.
drop_units(holders, id, mine)
local wait = -1
if n <= limit then wait = wait_for_expiry(holders, held + n - limit, now) end
return {0, wait, held, limit}
)lua");
    return s;
}

const script& fair_acquire()
{
    static const script s = make_script(R"lua(
local holders, limit_key, queue, alive, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, n, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local life, wttl, ticket, channel = ttl + tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], ARGV[9]
local now = server_now()
drop_dead(queue, alive, now)
if ticket ~= '0' then join(queue, alive, counter, id, ticket, now, wttl) end
expire_permits(holders, now)
local limit = limit_of(limit_key, ARGV[4], life)
if type(limit) == 'table' then return limit end
local mine = units_of(holders, id)
local held = redis.call('ZCARD', holders) - mine
local first = first_waiter(queue, alive, holders, id)
if (not first or first == id) and held + n <= limit then
  for k = 1, n do redis.call('ZADD', holders, now + ttl, unit(id, k)) end
  keep(holders, life)
  local next = first_waiter(queue, alive, holders, nil)
  if next and held + n < limit then redis.pcall('PUBLISH', channel, id .. ':next\n' .. next) end
  return {1, '0', redis.call('GET', counter) or '0', limit}
end
-- A grant of an earlier attempt while others come first: give it back to them.
if mine > 0 then
  drop_units(holders, id, mine)
  redis.pcall('PUBLISH', channel, '~' .. id .. ':back\n' .. (first or ''))
end
local wait = -1
if held + n > limit and n <= limit then wait = wait_for_expiry(holders, held + n - limit, now) end
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
return extend_one(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), server_now())
)lua");
    return s;
}

const script& extend_many()
{
    static const script s = make_script(R"lua(
local margin, now, results = tonumber(ARGV[1]), server_now(), {}
for j = 1, #KEYS / 2 do
  -- pcall: keys of another type fail their own permit ("not held", -1), not the whole batch
  local ok, result = pcall(extend_one, KEYS[2 * j - 1], KEYS[2 * j], ARGV[2 * j], tonumber(ARGV[2 * j + 1]), margin, now)
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
local holders, id = KEYS[1], ARGV[1]
expire_permits(holders, server_now())
local mine = units_of(holders, id)
drop_units(holders, id, mine)
if mine > 0 then redis.pcall('PUBLISH', ARGV[3], ARGV[2] .. '\n+' .. mine) end
return mine
)lua");
    return s;
}

const script& fair_release()
{
    static const script s = make_script(R"lua(
local holders, queue, alive = KEYS[1], KEYS[2], KEYS[3]
local id, leave = ARGV[1], ARGV[4] == '1'
local now = server_now()
drop_dead(queue, alive, now)
expire_permits(holders, now)
local mine = units_of(holders, id)
drop_units(holders, id, mine)
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
local holders, limit_key, queue, alive = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
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
  expire_permits(holders, now)
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
    req.push_script(acquire(), {name, limit_key(name)},
                    {id, std::to_string(units), ms_text(ttl), std::to_string(limit), ms_text(key_margin)});
    req.set_timeout(node_timeout);
    return req;
}

request fair_acquire_request(const std::string& name, const std::string& id, std::int64_t units,
                             std::chrono::milliseconds ttl, std::int64_t limit, std::chrono::milliseconds waiter_ttl,
                             std::uint64_t ticket, bool take_ticket, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(fair_acquire(),
                    {name, limit_key(name), aux_name(name, "queue"), aux_name(name, "alive"), aux_name(name, "ticket")},
                    {id, std::to_string(units), ms_text(ttl), std::to_string(limit), ms_text(key_margin),
                     ms_text(waiter_ttl), std::to_string(ticket), take_ticket ? "1" : "0", release_channel(name)});
    req.set_timeout(node_timeout);
    return req;
}

request extend_request(const lease_spec& permit, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout)
{
    const auto& name = permit.routing_key();
    request req;
    req.push_script(extend(), {name, limit_key(name)}, {permit.token, ms_text(ttl), ms_text(key_margin)});
    req.set_timeout(node_timeout);
    return req;
}

request extend_batch_request(const std::vector<batch_entry>& permits, std::chrono::milliseconds node_timeout)
{
    std::vector<std::string> keys, args{ms_text(key_margin)};
    keys.reserve(2 * permits.size());
    args.reserve(1 + 2 * permits.size());
    for (const auto& p : permits) {
        keys.push_back(p.lease->routing_key());
        keys.push_back(limit_key(p.lease->routing_key()));
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
    req.push_script(release(), {name}, {permit.token, release_id, release_channel(name)});
    req.set_timeout(node_timeout);
    return req;
}

namespace {
request fair_release_request(const std::string& name, const std::string& id, std::string_view release_id,
                             std::chrono::milliseconds node_timeout, bool leave)
{
    auto keys = queue_keys(name);
    keys.insert(keys.begin(), name);
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
    auto keys = queue_keys(name);
    keys.insert(keys.begin(), {name, limit_key(name)});
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
