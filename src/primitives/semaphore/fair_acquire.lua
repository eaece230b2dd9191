-- The fair semaphore's acquire (doc/semaphores.md, "Fair semaphore").
-- KEYS[1..3]: the permits, their units, the limit (as acquire.lua); KEYS[4]: the queue ({name}:queue); KEYS[5]:
-- the heartbeats ({name}:alive); KEYS[6]: the ticket counter ({name}:ticket).
-- ARGV[1]: the permit's id; ARGV[2]: its units n; ARGV[3]: the ttl in ms; ARGV[4]: the caller's limit; ARGV[5]:
-- the key margin in ms; ARGV[6]: the waiter ttl in ms; ARGV[7]: the waiter's ticket ('0': none yet); ARGV[8]: '1'
-- to take a ticket when refused without one (one node); ARGV[9]: the release channel.
-- Joins and heartbeats as the fair lock's acquire does. Grants only the first live waiter that holds no permit (or
-- anyone, when nobody waits), and only when its n units fit: a request of several permits at the head waits for
-- them, and everyone behind it waits too. A grant that leaves room tells the next waiter.
-- Returns {1, '0', ticket counter, limit}; refused: {0, ms until the answer may change without a message (enough
-- permits expire, or the first waiter's heartbeat ends; -1: none), ticket counter, our ticket or 0, limit}.

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/common/fair_queue.lib.lua"
-- #include "primitives/semaphore/permits.lib.lua"
-- #include "common/publish.lib.lua"

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
  if next and held + n < limit then publish(channel, id .. ':next\n' .. next) end
  return {1, '0', redis.call('GET', counter) or '0', limit}
end
-- A grant of an earlier attempt while others come first: give it back to them.
if mine > 0 then
  drop_permit(holders, units, id, mine)
  publish(channel, '~' .. id .. ':back\n' .. (first or ''))
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
