-- Releases one hold of the reentrant lock; the owner's last hold frees the key and publishes the release.
-- KEYS[1]: the lock key; KEYS[2]: its holds.
-- ARGV[1]: the hold's id; ARGV[2]: the release id; ARGV[3]: the release channel; ARGV[4]: the owner.
-- Returns 1 freed; 2 still held by the owner's other holds; 0 nothing of this hold left (the key gone, or the
-- hold released already: a release sent again after its answer was lost); -1 the key is another owner's.

-- #include "common/publish.lib.lua"

local owner = redis.call('GET', KEYS[1])
if not owner then
  redis.call('DEL', KEYS[2])
  return 0
end
if owner ~= ARGV[4] then return -1 end
if redis.call('HDEL', KEYS[2], ARGV[1]) == 0 then return 0 end
if redis.call('HLEN', KEYS[2]) - redis.call('HEXISTS', KEYS[2], '=' .. owner) > 0 then return 2 end
redis.call('DEL', KEYS[1], KEYS[2])
publish(ARGV[3], ARGV[2])
return 1
