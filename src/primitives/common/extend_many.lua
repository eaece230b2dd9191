-- extend.lua for many leases at once (the watchdog's batches).
-- KEYS: the leases' keys, lease after lease.
-- ARGV: per lease, three values: its key count, its token, its ttl in ms.
-- Returns an array with extend.lua's answer for each lease, in order. A key of another type counts as another
-- owner's (-1) for its lease, without failing the others.

-- #include "primitives/common/track.lib.lua"

local results, k = {}, 1
for a = 1, #ARGV, 3 do
  local n, token, ttl = tonumber(ARGV[a]), ARGV[a + 1], ARGV[a + 2]
  local result = 1
  for i = k, k + n - 1 do
    local owner = redis.pcall('GET', KEYS[i])
    if type(owner) == 'table' then
      result = -1
    elseif owner == false then
      if result == 1 then result = 0 end
    elseif owner ~= token then
      result = -1
    end
  end
  if result == 1 then
    for i = k, k + n - 1 do redis.call('PEXPIRE', KEYS[i], ttl) end
    track(k, k + n - 1)
  end
  results[#results + 1] = result
  k = k + n
end
return results
