-- The read-write lock's write acquire (doc/algorithms.md, "Read-write lock"); also its upgrade (a reader's own token)
-- and the repair of a writer's key a node lost. Time is the server's (TIME), never a client's.
-- KEYS[1]: the name; KEYS[2]: the readers ({name}:readers); KEYS[3]: the waiting writers' marks ({name}:writers);
-- KEYS[4], with fencing only: the fence counter ({name}:fence).
-- ARGV[1]: the token; ARGV[2]: the ttl in ms; ARGV[3]: the waiter ttl in ms; ARGV[4]: '1' for a writer that waits:
-- it marks its wait (granted or refused: a failed attempt's grants, cleaned up, keep the mark), '0' for a try, an
-- upgrade or a repair; ARGV[5]: the fence step ('none', 'read' over N nodes, 'increment' on one node).
-- Grants when the name is free, ours or the readers' marker and no reader but the token itself is live: the name
-- holds the token with the ttl (an upgrading reader keeps its entry, which a failed upgrade falls back on).
-- Returns 1, or {1, the fence counter} with fencing ('increment': after INCR, the token); refused: -(ms until it
-- may pass without a release message: the writer's PTTL, or when the last reader's entry ends), or 0 without such
-- a time (a writer's key without TTL).

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/rwlock/rwlock.lib.lua"
-- #include "common/fence.lib.lua"
-- #include "primitives/common/track.lib.lua"

local name, readers, writers = KEYS[1], KEYS[2], KEYS[3]
local token, ttl, wttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = server_now()
local others = live(readers, now)
live(writers, now)
if ARGV[4] == '1' then
  redis.call('ZADD', writers, now + wttl, token)
  keep(writers, 2 * wttl)
end
local holder = redis.call('GET', name)
if redis.call('ZSCORE', readers, token) then others = others - 1 end
if (not holder or holder == token or holder == MARKER) and others == 0 then
  redis.call('SET', name, token, 'PX', ttl)
  -- Our mark lives no longer than the key: a holder that dies holds readers back until its TTL, not its waiter TTL.
  redis.call('ZADD', writers, 'XX', 'LT', now + ttl, token)
  track(1, 1)
  if not KEYS[4] then return 1 end
  local fence = fence_of(KEYS[4])
  if ARGV[5] == 'increment' then fence = tostring(redis.call('INCR', KEYS[4])) end
  return {1, fence}
end
if holder and holder ~= MARKER and holder ~= token then
  local pttl = redis.call('PTTL', name)
  if pttl > 0 then return -pttl end
  return 0
end
return -math.max(1, last_end(readers) - now)  -- never 1 or 0, which mean a grant and no hint
