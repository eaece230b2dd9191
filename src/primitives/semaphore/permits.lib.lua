-- A library: the semaphore's permits (included after server_time.lib.lua). The semaphore's name is a ZSET of the
-- permits held, one member per permit (its id), scored by the server time (ms) it expires at; `units`
-- ({name}:units) a hash of each permit's id -> its units, plus 'held' -> their sum (no id is 'held': ids are 32 hex digits). The set and the hash
-- hold the same permits, so the hash has one field more than the set has members; the script that drops the last
-- permit deletes both. Each function costs O(1) in the units of a permit; loops run over permits only where
-- bounded: the expired ones (each dropped once), the first 64 in wait_for_expiry, and a recount.
local function units_of(units, id)
  return tonumber(redis.call('HGET', units, id)) or 0
end
-- Only after a key or field was deleted or written by hand (or by a client of the old layout, one member per
-- unit): the units held, counted again from the permits. A permit whose units are unknown is forgotten, as by a
-- node that restarted empty (its holder's next successful extension gives it back if it fits).
local function recount(holders, units)
  local known, held = {}, 0
  for _, id in ipairs(redis.call('ZRANGE', holders, 0, -1)) do
    local n = tonumber(redis.call('HGET', units, id))
    if n and n > 0 then
      known[id] = n
      held = held + n
    else
      redis.call('ZREM', holders, id)
    end
  end
  redis.call('DEL', units)
  if held == 0 then return 0 end
  for id, n in pairs(known) do redis.call('HSET', units, id, n) end
  redis.call('HSET', units, 'held', held)
  local life = redis.call('PTTL', holders)
  if life > 0 then redis.call('PEXPIRE', units, life) end
  return held
end
-- The units held once the expired permits are dropped. The hash holds a field per permit and the total: any other
-- count of fields means someone else wrote the keys.
local function settle(holders, units, now)
  local held = redis.call('HGET', units, 'held')
  if held and redis.call('HLEN', units) == redis.call('ZCARD', holders) + 1 then
    held = tonumber(held)
  else
    held = recount(holders, units)
  end
  local expired = redis.call('ZRANGEBYSCORE', holders, '-inf', now)
  if #expired == 0 then return held end
  for _, id in ipairs(expired) do
    held = held - units_of(units, id)
    redis.call('HDEL', units, id)
  end
  redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)
  if held > 0 then redis.call('HSET', units, 'held', held) else redis.call('DEL', units) end
  return held
end
local function add_permit(holders, units, id, n, mine, expires)
  redis.call('ZADD', holders, expires, id)
  redis.call('HSET', units, id, n)
  redis.call('HINCRBY', units, 'held', n - mine)
end
local function drop_permit(holders, units, id, mine)
  if mine == 0 then return end
  redis.call('ZREM', holders, id)
  redis.call('HDEL', units, id)
  if redis.call('HINCRBY', units, 'held', -mine) <= 0 then redis.call('DEL', units) end
end
local function limit_of(limit_key, default, life)
  local stored = redis.call('GET', limit_key)
  if not stored then
    redis.call('SET', limit_key, default, 'PX', life)
    return tonumber(default)
  end
  local limit = tonumber(stored)
  if not limit then return redis.error_reply('the semaphore limit ' .. limit_key .. " holds '" .. stored .. "', not a number") end
  keep(limit_key, life)
  return limit
end
-- ms until `count` more units are free by expiry alone; -1 when fewer are held. Reads the 64 permits that expire
-- first at most: when they hold fewer units, the last of them gives an earlier time (an extra attempt), never a
-- later one.
local function wait_for_expiry(holders, units, count, now)
  local soonest = redis.call('ZRANGE', holders, 0, 63, 'WITHSCORES')
  local freed = 0
  for i = 1, #soonest, 2 do
    freed = freed + units_of(units, soonest[i])
    if freed >= count then return tonumber(soonest[i + 1]) - now end
  end
  if #soonest == 128 then return tonumber(soonest[128]) - now end
  return -1
end
-- The first live waiter that holds no permit (a waiter granted stays queued until it leaves or its heartbeat
-- ends); `id` counts as a waiter wherever it is.
local function first_waiter(queue, alive, holders, id)
  local i = 0
  while true do
    local w = redis.call('ZRANGE', queue, i, i)[1]
    if not w or w == id then return w end
    if not redis.call('ZSCORE', alive, w) then
      redis.call('ZREM', queue, w)
    elseif redis.call('ZSCORE', holders, w) then
      i = i + 1
    else
      return w
    end
  end
end
local function extend_one(holders, units, limit_key, id, ttl, margin, now)
  local expires = redis.call('ZSCORE', holders, id)
  if not expires or tonumber(expires) <= now then return 0 end
  redis.call('ZADD', holders, 'XX', now + ttl, id)
  keep(holders, ttl + margin)
  keep(units, ttl + margin)
  keep(limit_key, ttl + margin)
  return ttl
end
