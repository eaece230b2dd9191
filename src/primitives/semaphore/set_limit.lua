-- Sets the semaphore's limit (semaphore::async_set_limit): never revokes a permit.
-- KEYS[1..3]: the permits, their units, the limit; KEYS[4]: the queue; KEYS[5]: the heartbeats.
-- ARGV[1]: the new limit; ARGV[2]: the release channel; ARGV[3]: the change's id; ARGV[4]: the least TTL of the
-- limit key in ms.
-- Keeps the limit as long as the permits live; a changed limit wakes every waiter ("+*") and the first fair
-- waiter (larger: they may fit now; smaller: a request above it fails at once).
-- Returns the previous limit, 0 when there was none.

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/common/fair_queue.lib.lua"
-- #include "primitives/semaphore/permits.lib.lua"
-- #include "common/publish.lib.lua"

local holders, units, limit_key, queue, alive = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local new, channel, change = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local old = tonumber(redis.call('GET', limit_key) or '0') or 0
local life = math.max(redis.call('PTTL', holders), redis.call('PTTL', limit_key), tonumber(ARGV[4]))
redis.call('SET', limit_key, ARGV[1], 'PX', life)
-- Every waiter looks again: a larger limit may let it in, a smaller one may put its request above the limit (it
-- then fails at once rather than sleep until its wait ends).
if new ~= old then
  publish(channel, change .. '\n+*')
  local now = server_now()
  drop_dead(queue, alive, now)
  settle(holders, units, now)
  local first = first_waiter(queue, alive, holders, nil)
  if first then publish(channel, change .. ':first\n' .. first) end
end
return old
