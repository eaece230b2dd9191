-- The semaphore's acquire (doc/semaphores.md).
-- KEYS[1]: the permits ({name}, a ZSET); KEYS[2]: their units ({name}:units); KEYS[3]: the limit ({name}:limit).
-- ARGV[1]: the permit's id; ARGV[2]: its units n; ARGV[3]: the ttl in ms; ARGV[4]: the caller's limit (a node
-- without one takes it); ARGV[5]: the key margin in ms (how long the keys outlive the longest permit).
-- Grants when the units held by others plus n fit the node's limit (again, idempotently, for an id it holds).
-- Returns {1, units held now, limit}; refused: {0, ms until enough permits expire to fit n (-1: n is above the
-- limit), units held, limit}; a grant of an earlier attempt of ours is given back.

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/semaphore/permits.lib.lua"

local holders, units, limit_key = KEYS[1], KEYS[2], KEYS[3]
local id, n, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local life = ttl + tonumber(ARGV[5])
local now = server_now()
local held = settle(holders, units, now)
local limit = limit_of(limit_key, ARGV[4], life)
if type(limit) == 'table' then return limit end
local mine = units_of(units, id)
held = held - mine
if held + n <= limit then
  add_permit(holders, units, id, n, mine, now + ttl)
  keep(holders, life)
  keep(units, life)
  return {1, held + n, limit}
end
-- A grant of an earlier attempt must not outlive this refusal: a refused node gets no clean-up.
drop_permit(holders, units, id, mine)
local wait = -1
if n <= limit then wait = wait_for_expiry(holders, units, held + n - limit, now) end
return {0, wait, held, limit}
