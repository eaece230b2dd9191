-- The read-write lock's read acquire (doc/algorithms.md, "Read-write lock"); also its downgrade (the writer's own
-- token) and the repair of a reader's entry a node lost. Time is the server's (TIME), never a client's.
-- KEYS[1]: the name (the writer's token, or the marker while readers hold); KEYS[2]: the readers ({name}:readers);
-- KEYS[3]: the waiting writers' marks ({name}:writers).
-- ARGV[1]: the token; ARGV[2]: the ttl in ms.
-- Grants when no writer holds the name and no waiting writer's mark is live (writer preference): the token joins
-- the readers until now + ttl, and the marker lives at least as long. The token holding the name as writer becomes a
-- reader in the same step, marks or not (a downgrade lets no writer in between), and leaves its own mark; a live
-- reader is granted again.
-- Returns 1; refused: -(ms until readers may pass without a release message: the later of the writer's PTTL and the
-- last mark's end), or 0 without such a time (a writer's key without TTL).

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/rwlock/rwlock.lib.lua"

local name, readers, writers = KEYS[1], KEYS[2], KEYS[3]
local token, ttl = ARGV[1], tonumber(ARGV[2])
local now = server_now()
live(readers, now)
local marks = live(writers, now)
local holder = redis.call('GET', name)
if holder == token then
  redis.call('DEL', name)
  redis.call('ZREM', writers, token)
elseif holder and holder ~= MARKER then
  local wait = redis.call('PTTL', name)
  if wait < 0 then return 0 end
  if marks > 0 then wait = math.max(wait, last_end(writers) - now) end
  return -math.max(1, wait)
elseif marks > 0 and not redis.call('ZSCORE', readers, token) then
  return -math.max(1, last_end(writers) - now)  -- never 1 or 0, which mean a grant and no hint
end
redis.call('ZADD', readers, now + ttl, token)
cover(name, readers, now + ttl, now)
return 1
