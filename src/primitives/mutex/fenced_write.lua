-- A fenced write on a resource kept in Redis (doc/fencing.md, "Fenced writes"): the commands run only if the
-- writer's fencing token is at least the last one the guard saw, and the guard then keeps it.
-- KEYS[1]: the guard; KEYS[2 ..]: the key of each command (all in the guard's hash slot).
-- ARGV[1]: the token (decimal); then per command: its name, how many arguments follow the key, the arguments.
-- Returns {1, the token}; refused: {0, the guard's newer token}.

-- #include "common/fence.lib.lua"

local last = fence_of(KEYS[1])
if less(ARGV[1], last) then return {0, last} end
local a = 2
for k = 2, #KEYS do
  local count = tonumber(ARGV[a + 1])
  redis.call(ARGV[a], KEYS[k], unpack(ARGV, a + 2, a + 1 + count))
  a = a + 2 + count
end
if last ~= ARGV[1] then redis.call('SET', KEYS[1], ARGV[1]) end
return {1, ARGV[1]}
