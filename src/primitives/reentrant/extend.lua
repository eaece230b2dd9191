-- Prolongs one hold of the reentrant lock, and with it the key and every hold of its owner.
-- KEYS[1]: the lock key; KEYS[2]: its holds.
-- ARGV[1]: the hold's id; ARGV[2]: the ttl in ms; ARGV[3]: the owner.
-- A hold counts only while its owner holds the key and the holds still have it: another owner's first hold, or
-- the same owner's after the key had lapsed, starts the holds afresh.
-- Returns 1 (both keys live at least ttl); 0 when the key or the hold is gone; -1 when another owner has the key.

-- #include "primitives/common/track.lib.lua"

local owner = redis.call('GET', KEYS[1])
if not owner then return 0 end
if owner ~= ARGV[3] then return -1 end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  track(1, 1)
end
return 1
