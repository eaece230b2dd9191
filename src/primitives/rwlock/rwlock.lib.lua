-- A library: the read-write lock's keys (included after server_time.lib.lua). `name` holds the writer's token, or
-- MARKER while readers hold (so that a plain lock's SET NX fails on it as on a writer's key); `readers` is a ZSET of
-- the readers' tokens scored by the server time (ms) each one's lease ends on this node; `writers` a ZSET of the
-- waiting writers' marks scored by the server time their heartbeat ends.
-- live(zset, now): drops the entries (readers, marks) whose time passed; how many are left.
-- last_end(zset): the highest score of a ZSET, 0 when empty.
-- cover(name, readers, ends, now): the marker (unless a writer's token holds `name`) and the readers' set live until
-- `ends` at least.
-- settle_readers(name, readers, now): after readers left: the marker and the set live exactly as long as the last
-- live reader, or go with it; how many readers are live.
-- extend_reader(name, readers, token, ttl, now): a reader's lease extended here: 1; 0 not held here (nobody else's);
-- -1 another writer holds the name. Our own token in the name is a write key left behind (a conversion's request that
-- landed after its clean-up): it becomes the reader's entry, as a downgrade does, rather than the watchdog keeping
-- alive a write key that refuses every other reader here.
local MARKER = '(readers)'  -- redlock::readers_marker (key_layout.hpp)
local function live(zset, now)
  redis.call('ZREMRANGEBYSCORE', zset, '-inf', now)
  return redis.call('ZCARD', zset)
end
local function last_end(zset)
  local last = redis.call('ZRANGE', zset, -1, -1, 'WITHSCORES')
  if #last == 0 then return 0 end
  return tonumber(last[2])
end
local function cover(name, readers, ends, now)
  local holder = redis.call('GET', name)
  if not holder then
    redis.call('SET', name, MARKER, 'PX', ends - now)
  elseif holder == MARKER then
    keep(name, ends - now)
  end
  keep(readers, ends - now)
end
local function settle_readers(name, readers, now)
  local left = live(readers, now)
  local holder = redis.call('GET', name)
  if left == 0 then
    redis.call('DEL', readers)
    if holder == MARKER then redis.call('DEL', name) end
    return 0
  end
  local life = last_end(readers) - now
  redis.call('PEXPIRE', readers, life)
  if not holder then
    redis.call('SET', name, MARKER, 'PX', life)
  elseif holder == MARKER then
    redis.call('PEXPIRE', name, life)
  end
  return left
end
local function extend_reader(name, readers, token, ttl, now)
  local holder = redis.call('GET', name)
  if holder == token then
    redis.call('DEL', name)
    redis.call('ZADD', readers, now + ttl, token)
    cover(name, readers, now + ttl, now)
    return 1
  end
  if holder and holder ~= MARKER then return -1 end
  local ends = redis.call('ZSCORE', readers, token)
  if not ends or tonumber(ends) <= now then return 0 end
  redis.call('ZADD', readers, 'XX', now + ttl, token)
  cover(name, readers, now + ttl, now)
  return 1
end
