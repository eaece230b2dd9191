-- Proclaims an election leader's value: where the election key still holds the leader's token, writes the token, the
-- term, the value and the revision into the leader hash and publishes on the elected channel, so that observers read
-- the leader again at once. A revision of the same token at or above this one is kept (a proclaim that arrives late
-- never undoes a later one).
-- KEYS[1]: the election key (a plain lock: the leader's token); KEYS[2]: the leader hash ({name}:leader).
-- ARGV[1]: the token; ARGV[2]: the term (the lease's fencing token); ARGV[3]: the value; ARGV[4]: the revision;
-- ARGV[5]: the elected channel ({name}:elected); ARGV[6]: the message (unique to this proclaim).
-- Returns 1 written (or a later revision of this token is there), 0 not the leader here (the key holds another token,
-- or none).
-- Publishes by common/publish.lib.lua (SPUBLISH; PUBLISH on Redis 6.x): a publish the user may not make leaves
-- observers to their deadlines.

-- #include "common/publish.lib.lua"

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local held = redis.call('HMGET', KEYS[2], 'token', 'revision')
if held[1] == ARGV[1] and tonumber(held[2] or '0') >= tonumber(ARGV[4]) then return 1 end
redis.call('HSET', KEYS[2], 'token', ARGV[1], 'term', ARGV[2], 'value', ARGV[3], 'revision', ARGV[4])
publish(ARGV[5], ARGV[6])
return 1
