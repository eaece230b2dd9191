-- Fencing, phase 2 over N nodes, for the reentrant lock (doc/algorithms.md, "Fencing tokens over N nodes"):
-- commits the token to the counter and to the owner's holds, whose re-entries then keep it.
-- KEYS[1]: the lock key; KEYS[2]: its fence counter; KEYS[3]: its holds.
-- ARGV[1]: the owner; ARGV[2]: the fencing token T (decimal).
-- Sets the counter to T and the holds' '=<owner>' to T if the owner still holds the key and the counter is below
-- T (strictly: of two commits of the same T on a node only the first succeeds).
-- Returns 1; 0 if the key is not the owner's; -1 if the counter is at T or above.

-- #include "common/fence.lib.lua"

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if not less(fence_of(KEYS[2]), ARGV[2]) then return -1 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], '=' .. ARGV[1], ARGV[2])
return 1
