-- Takes every lock key for a lease whose keys hold its token: the plain lock's acquire, and the repair of a
-- lease on a node that lost its keys.
-- KEYS: the lock keys.
-- ARGV[1]: the token; ARGV[2]: the ttl in ms.
-- Sets every key to the token with the ttl if no key is held by another token (all or none; taking them again
-- is idempotent).
-- Returns 1; refused: -(the holder's PTTL), or 0 when the holder's key has no TTL.

-- #include "primitives/common/track.lib.lua"

for i = 1, #KEYS do
  local owner = redis.call('GET', KEYS[i])
  if owner and owner ~= ARGV[1] then
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl > 0 then return -pttl end
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
track(1, #KEYS)
return 1
