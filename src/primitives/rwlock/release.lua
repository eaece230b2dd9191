-- The read-write lock's release, of either side, and a failed attempt's clean-up (doc/algorithms.md, "Read-write
-- lock").
-- KEYS[1]: the name; KEYS[2]: the readers; KEYS[3]: the waiting writers' marks.
-- ARGV[1]: the token; ARGV[2]: the release id; ARGV[3]: the release channel; ARGV[4]: what goes: 'all' (the write
-- key, the reader's entry and the mark: a release, or a writer that gives up), 'hold' (the key and the entry, the
-- mark stays: a waiting writer's failed attempt), 'write' (the write key only: a failed upgrade, whose reader's
-- entry stays).
-- When what it removed may let others in, publishes "<release id>\n=w" when marks remain and no reader (only
-- writers may pass: one per client is woken) or "<release id>\n+*" when no mark remains (every waiter).
-- Returns 1 when it removed the key or the entry, 0 when nothing of ours was there; -1 when nothing of ours was
-- there and another writer holds the name.
-- Publishes by common/publish.lib.lua (SPUBLISH; PUBLISH on Redis 6.x): a publish the user may not make does not
-- fail the release; waiters then wake by their timers.

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/rwlock/rwlock.lib.lua"
-- #include "common/publish.lib.lua"

local name, readers, writers = KEYS[1], KEYS[2], KEYS[3]
local token, what = ARGV[1], ARGV[4]
local now = server_now()
local wrote = redis.call('GET', name) == token
if wrote then redis.call('DEL', name) end
local read = what ~= 'write' and redis.call('ZREM', readers, token) == 1
local marked = what == 'all' and redis.call('ZREM', writers, token) == 1
local readers_left = settle_readers(name, readers, now)
local marks = live(writers, now)
local holder = redis.call('GET', name)
local writer_holds = holder and holder ~= MARKER
if not writer_holds and (wrote or (read and readers_left == 0) or (marked and marks == 0)) then
  if marks == 0 then
    publish(ARGV[3], ARGV[2] .. '\n+*')
  elseif readers_left == 0 then
    publish(ARGV[3], ARGV[2] .. '\n=w')
  end
end
if wrote or read then return 1 end
if writer_holds then return -1 end
return 0
