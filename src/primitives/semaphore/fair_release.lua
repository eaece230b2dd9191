-- The fair semaphore's release, and a fair waiter that gives up.
-- KEYS[1]: the permits; KEYS[2]: their units; KEYS[3]: the queue; KEYS[4]: the heartbeats.
-- ARGV[1]: the permit's id; ARGV[2]: the release id; ARGV[3]: the release channel; ARGV[4]: '1' to leave the
-- queue too.
-- Removes the permit; publishes "<release id>\n<first waiter>" when it freed units or we left from the front.
-- Returns the units removed.

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/common/fair_queue.lib.lua"
-- #include "primitives/semaphore/permits.lib.lua"
-- #include "common/publish.lib.lua"

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
  publish(ARGV[3], ARGV[2] .. '\n' .. (first_waiter(queue, alive, holders, nil) or ''))
end
return mine
