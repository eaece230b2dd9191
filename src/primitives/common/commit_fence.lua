-- Fencing, phase 2 over N nodes (doc/algorithms.md, "Fencing tokens over N nodes"), for a lease whose keys hold
-- its token.
-- KEYS: the n lock keys, then their n fence counters ({key}:fence).
-- ARGV[1]: the token; ARGV[2]: the fencing token T (decimal).
-- Sets every counter to T if the token still holds every lock key and every counter is below T: strictly, so
-- that of two holders committing the same T on a node only the first succeeds.
-- Returns 1; 0 if the lock is not ours; -1 if a counter is at T or above.

-- #include "common/fence.lib.lua"

local n = #KEYS / 2
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
