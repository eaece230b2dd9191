-- The fair (FIFO) lock's acquire (doc/locks.md, "Fair lock"). Time is the server's (TIME), never a client's.
-- KEYS[1]: the lock key (it holds the holder's token); KEYS[2]: the queue ({key}:queue, a ZSET of waiters by
-- ticket); KEYS[3]: the heartbeats ({key}:alive, a ZSET of waiters by the server time their heartbeat ends);
-- KEYS[4]: the ticket counter ({key}:ticket); KEYS[5], with fencing only: the fence counter ({key}:fence).
-- ARGV[1]: the token; ARGV[2]: the ttl in ms; ARGV[3]: the waiter ttl in ms; ARGV[4]: the waiter's ticket ('0':
-- none yet); ARGV[5]: '1' to take a ticket when refused without one (one node: the counter is the order);
-- ARGV[6]: the fence step ('none', 'read' over N nodes, 'increment' on one node); ARGV[7]: the release channel.
-- Drops waiters whose heartbeat ended (or who have none); a waiter with a ticket joins the queue with it (once: the
-- same ticket on every node), raises the counter to it and heartbeats. Grants when the key is free (or ours) and
-- the queue is empty or starts with us.
-- Returns {1, the fence counter or '0', the ticket counter}; refused: {0, ms until the lock may change without a
-- release message (the holder's PTTL, or when the first waiter's heartbeat ends), the ticket counter, our ticket
-- or 0}. A key of ours it gives back to the first waiter, telling it as a clean-up does.

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/common/fair_queue.lib.lua"
-- #include "common/publish.lib.lua"
-- #include "primitives/common/track.lib.lua"

local key, queue, alive, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, wttl, ticket = ARGV[1], tonumber(ARGV[3]), ARGV[4]
local now = server_now()
drop_dead(queue, alive, now)
if ticket ~= '0' then join(queue, alive, counter, token, ticket, now, wttl) end
local holder = redis.call('GET', key)
local first = head(queue, alive)
if (not holder or holder == token) and (not first or first == token) then
  redis.call('SET', key, token, 'PX', ARGV[2])
  track(1, 1)
  local fence = '0'
  if KEYS[5] then
    if ARGV[6] == 'increment' then redis.call('INCR', KEYS[5]) end
    fence = redis.call('GET', KEYS[5]) or '0'
  end
  return {1, fence, redis.call('GET', counter) or '0'}
end
-- Our key from a clean-up that never arrived, while someone else is first: give it back to the queue.
if holder == token then
  redis.call('DEL', key)
  publish(ARGV[7], '~' .. token .. ':back\n' .. first)
end
local wait = 0
if holder and holder ~= token then
  wait = redis.call('PTTL', key)
else
  local ends = redis.call('ZSCORE', alive, first)
  if ends then wait = tonumber(ends) - now end
end
if ticket == '0' and ARGV[5] == '1' then
  ticket = tostring(redis.call('INCR', counter))
  join(queue, alive, counter, token, ticket, now, wttl)
end
return {0, wait, redis.call('GET', counter) or '0', ticket}
