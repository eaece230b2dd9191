-- The plain lock's acquire with fencing on one node: grants as common/acquire.lua and issues the token in the
-- same round trip.
-- KEYS: the n lock keys, then their n fence counters ({key}:fence).
-- ARGV[1]: the token; ARGV[2]: the ttl in ms.
-- Sets every counter to 1 + the highest of them (INCR keeps the arithmetic exact).
-- Returns {1, that new value: the fencing token}; refused: -(the holder's PTTL), or 0 when the holder's key has
-- no TTL.

-- #include "common/fence.lib.lua"
-- #include "primitives/common/track.lib.lua"

local n = #KEYS / 2
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
track(1, n)
local highest = '0'
for i = n + 1, #KEYS do
  local f = fence_of(KEYS[i])
  if less(highest, f) then highest = f end
end
for i = n + 1, #KEYS do
  if fence_of(KEYS[i]) ~= highest then redis.call('SET', KEYS[i], highest) end
  redis.call('INCR', KEYS[i])
end
return {1, redis.call('GET', KEYS[#KEYS])}
