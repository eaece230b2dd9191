-- Releases the plain lock: deletes the keys that hold the token and publishes the release id on their channels,
-- so that a waiter retries at once (the same id from N nodes is one release; each release has its own id).
-- KEYS: the lock keys.
-- ARGV[1]: the token; ARGV[2]: the release id; ARGV[2 + i]: the release channel of KEYS[i] ({key}:released).
-- Returns how many keys it deleted, or -(how many another token holds).
-- Publishes by common/publish.lib.lua (SPUBLISH; PUBLISH on Redis 6.x): a publish the user may not make (an ACL
-- without channel rights) must not turn the DEL that happened into a failed release; waiters then wake by their timers.

-- #include "common/publish.lib.lua"

local released, others = 0, 0
for i = 1, #KEYS do
  local owner = redis.call('GET', KEYS[i])
  if owner == ARGV[1] then
    redis.call('DEL', KEYS[i])
    released = released + 1
    if ARGV[i + 2] then publish(ARGV[i + 2], ARGV[2]) end
  elseif owner then
    others = others + 1
  end
end
if others > 0 then return -others end
return released
