-- Prolongs a reader's lease to the server's time plus ttl, only while its entry is live here: an extension delayed
-- past a release or a loss never re-creates it (a repair does, after a quorum extended).
-- KEYS[1]: the name; KEYS[2]: the readers ({name}:readers).
-- ARGV[1]: the token; ARGV[2]: the ttl in ms.
-- Returns 1; 0 when the entry is gone here (expired, released, the node restarted empty) and no writer holds the
-- name; -1 when another writer holds it.

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/rwlock/rwlock.lib.lua"

return extend_reader(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), server_now())
