-- The fair lock's release, and a fair waiter that gives up or cleans up a failed attempt.
-- KEYS[1]: the lock key; KEYS[2]: the queue; KEYS[3]: the heartbeats.
-- ARGV[1]: the token; ARGV[2]: the release id; ARGV[3]: the release channel; ARGV[4]: '1' to leave the queue too.
-- Deletes the key if ours; publishes "<release id>\n<first waiter's token>" when it freed the key or we left from
-- the front, so that the next in line, and only it, wakes.
-- Returns as the mutex's release: 1 freed, 0 nothing of ours; -1 another token holds the key.
-- Publishes by common/publish.lib.lua (SPUBLISH; PUBLISH on Redis 6.x): a publish the user may not make does not
-- fail the release; waiters then wake by their timers.

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/common/fair_queue.lib.lua"
-- #include "common/publish.lib.lua"

local key, queue, alive = KEYS[1], KEYS[2], KEYS[3]
local token, leave = ARGV[1], ARGV[4] == '1'
drop_dead(queue, alive, server_now())
local owner = redis.call('GET', key)
local freed = owner == token
if freed then redis.call('DEL', key) end
local was_first = head(queue, alive) == token
if leave then
  redis.call('ZREM', queue, token)
  redis.call('ZREM', alive, token)
end
if freed or (leave and was_first and not owner) then
  local next = head(queue, alive) or ''
  publish(ARGV[3], ARGV[2] .. '\n' .. next)
end
if owner and not freed then return -1 end
if freed then return 1 end
return 0
