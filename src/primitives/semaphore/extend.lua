-- Prolongs a permit to the server's time plus ttl, never re-creating it.
-- KEYS[1..3]: the permits, their units, the limit (as acquire.lua).
-- ARGV[1]: the permit's id; ARGV[2]: the ttl in ms; ARGV[3]: the key margin in ms.
-- Returns the ttl (what the permit now has left there), or 0 when the permit is not held there (expired,
-- released, or the node restarted empty).

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/semaphore/permits.lib.lua"

return extend_one(KEYS[1], KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), server_now())
