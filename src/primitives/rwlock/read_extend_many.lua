-- read_extend.lua for many readers at once (the watchdog's batches).
-- KEYS: per reader, its name and its readers' set.
-- ARGV: per reader, its token and its ttl in ms.
-- Returns read_extend.lua's answer for each reader, in order (-1 for one whose keys are of another type).

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/rwlock/rwlock.lib.lua"

local now, results = server_now(), {}
for j = 1, #KEYS / 2 do
  -- pcall: keys of another type fail their own reader, not the whole batch
  local ok, result = pcall(extend_reader, KEYS[2 * j - 1], KEYS[2 * j], ARGV[2 * j - 1], tonumber(ARGV[2 * j]), now)
  if ok then results[j] = result else results[j] = -1 end
end
return results
