-- The reentrant lock's acquire: the owner named in ARGV[1] takes the lock, or takes it again while it holds it.
-- KEYS[1]: the lock key (it holds the owner's name); KEYS[2]: its holds ({key}:holds, a hash: a field per hold,
-- and '=<owner>' whose value is the fencing token committed to the owner's holds, '0' for none); KEYS[3], with
-- fencing only: the fence counter ({key}:fence).
-- ARGV[1]: the owner; ARGV[2]: the ttl in ms; ARGV[3]: this hold's id; ARGV[4]: the fence step, 'none', 'read'
-- (phase 1 over N nodes) or 'increment' (one node).
-- Refused when another owner holds the key: -(its PTTL), or 0 when it has no TTL. Otherwise adds the hold (the
-- key's TTL becomes at least ttl) and returns 1 for a first hold, 2 for a re-entry; with a counter,
-- {1 or 2, the counter, the token committed to the owner's holds}. On one node, a hold whose owner has no token
-- committed yet takes the next one (the counter + 1) and commits it: the third element is then its token.
-- A first hold starts the holds afresh: no hold, and no committed token, carries over from an earlier owner, nor
-- from a hash that outlived its key (deleted by hand, lost in a failover).

-- #include "primitives/common/track.lib.lua"

local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl > 0 then return -pttl end
  return 0
end
local mark = '=' .. ARGV[1]
local kind = 1
if owner then
  kind = 2
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
else
  redis.call('DEL', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
redis.call('HSETNX', KEYS[2], mark, '0')
redis.call('HSET', KEYS[2], ARGV[3], '1')
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
track(1, 1)
if not KEYS[3] then return kind end
local committed = redis.call('HGET', KEYS[2], mark)
if ARGV[4] == 'increment' and committed == '0' then
  redis.call('INCR', KEYS[3])
  committed = redis.call('GET', KEYS[3])
  redis.call('HSET', KEYS[2], mark, committed)
end
return {kind, redis.call('GET', KEYS[3]) or '0', committed}
