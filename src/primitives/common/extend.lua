-- Prolongs a lease whose keys hold its token, only where every key still holds it: an extension delayed past a
-- release or a loss must never re-create a key nobody owns.
-- KEYS: the lock keys.
-- ARGV[1]: the token; ARGV[2]: the ttl in ms.
-- Returns 1; 0 when a key is missing (the node restarted empty, or the key lapsed) and none is held by another
-- token; -1 when another token holds one.

-- #include "primitives/common/track.lib.lua"

local missing = false
for i = 1, #KEYS do
  local owner = redis.call('GET', KEYS[i])
  if owner == false then
    missing = true
  elseif owner ~= ARGV[1] then
    return -1
  end
end
if missing then return 0 end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
track(1, #KEYS)
return 1
