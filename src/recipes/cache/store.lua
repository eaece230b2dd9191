-- The cache guard's write of a loaded value (doc/cache.md): refused when the stored value was written under a
-- newer rebuild lock, so a stalled loader never overwrites what a later one loaded.
-- KEYS[1]: the value's key.
-- ARGV[1]: the writer's fencing token (decimal); ARGV[2]: the entry ("rlc1 <kind> <token> ...", cache_entry.hpp);
-- ARGV[3]: its TTL in ms.
-- Returns {1} written; {0, the stored entry} when that entry carries a newer token.

-- #include "common/fence.lib.lua"

local current = redis.call('GET', KEYS[1])
if current then
  local newer = string.match(current, '^rlc1 [vn] (%d+) ')
  if newer and less(ARGV[1], newer) then return {0, current} end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return {1}
