-- A library: the fair queue, for the fair lock's and the fair semaphore's scripts (included after
-- server_time.lib.lua). A queue is a ZSET of waiters scored by ticket (equal tickets order by token, the same on
-- every node); `alive` a ZSET of the same waiters scored by the server time (ms) their heartbeat ends; `counter`
-- the highest ticket seen. All three expire two waiter TTLs after their last write.
-- drop_dead(queue, alive, now): drops the waiters whose heartbeat ended, from both sets.
-- head(queue, alive): the first live waiter; one without a heartbeat (its alive entry lost, say by hand) is
-- dropped, not waited for.
-- join(queue, alive, counter, token, ticket, now, wttl): the waiter joins with its ticket (once: the same ticket on
-- every node), raises the counter to it and heartbeats.
local function drop_dead(queue, alive, now)
  local dead = redis.call('ZRANGEBYSCORE', alive, '-inf', now)
  for _, waiter in ipairs(dead) do redis.call('ZREM', queue, waiter) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', alive, '-inf', now) end
end
local function head(queue, alive)
  local first = redis.call('ZRANGE', queue, 0, 0)[1]
  while first and not redis.call('ZSCORE', alive, first) do
    redis.call('ZREM', queue, first)
    first = redis.call('ZRANGE', queue, 0, 0)[1]
  end
  return first
end
local function join(queue, alive, counter, token, ticket, now, wttl)
  if not redis.call('ZSCORE', queue, token) then redis.call('ZADD', queue, ticket, token) end
  local highest = redis.call('GET', counter)
  -- KEEPTTL: a waiter with a shorter waiter TTL must not cut the life a longer one gave the counter
  if not highest or tonumber(highest) < tonumber(ticket) then redis.call('SET', counter, ticket, 'KEEPTTL') end
  redis.call('ZADD', alive, now + wttl, token)
  keep(queue, 2 * wttl)
  keep(alive, 2 * wttl)
  keep(counter, 2 * wttl)
end
