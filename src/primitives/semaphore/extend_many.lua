-- extend.lua for many permits at once (the watchdog's batches).
-- KEYS: per permit, its set, units and limit keys.
-- ARGV[1]: the key margin in ms; then per permit its id and ttl.
-- Returns extend.lua's answer for each permit, in order (-1 for one whose keys are of another type).

-- #include "primitives/common/server_time.lib.lua"
-- #include "primitives/semaphore/permits.lib.lua"

local margin, now, results = tonumber(ARGV[1]), server_now(), {}
for j = 1, #KEYS / 3 do
  -- pcall: keys of another type fail their own permit ("not held", -1), not the whole batch
  local ok, result = pcall(extend_one, KEYS[3 * j - 2], KEYS[3 * j - 1], KEYS[3 * j], ARGV[2 * j],
                           tonumber(ARGV[2 * j + 1]), margin, now)
  if ok then results[j] = result else results[j] = -1 end
end
return results
