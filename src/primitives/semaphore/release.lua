-- Releases a permit and wakes up to as many waiters as it frees units.
-- KEYS[1]: the permits; KEYS[2]: their units.
-- ARGV[1]: the permit's id; ARGV[2]: the release id; ARGV[3]: the release channel.
-- Removes the permit and publishes "<release id>\n+<units>".
-- Returns the units removed: 0 when the permit had expired or was not held.
-- Publishes by common/publish.lib.lua (SPUBLISH; PUBLISH on Redis 6.x): a publish the user may not make does not
-- fail the release; waiters then wake by their timers.

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/semaphore/permits.lib.lua"
-- #include "common/publish.lib.lua"

local holders, units, id = KEYS[1], KEYS[2], ARGV[1]
settle(holders, units, server_now())
local mine = units_of(units, id)
drop_permit(holders, units, id, mine)
if mine > 0 then publish(ARGV[3], ARGV[2] .. '\n+' .. mine) end
return mine
