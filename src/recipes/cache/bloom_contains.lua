-- Whether items may be in a Bloom filter kept in one Redis string (doc/cache.md, "Bloom filter").
-- KEYS[1]: the bitmap; KEYS[2]: its shape ({name}:bloom).
-- ARGV[1]: our shape ("m=<bits> k=<hashes> <hash>"); ARGV[2]: k; then k bit positions per item.
-- A filter of another shape on the name is refused with an error reply (BLOOMSHAPE ...).
-- Returns 1 (may be in) or 0 (never added) per item, reading each item's bits up to the first unset one; -1 when
-- the filter is missing (its bitmap or its shape: never added to, or lost to a FLUSHDB, a restart without
-- persistence, an eviction), where no item can be said absent.
local stored = redis.call('GET', KEYS[2])
if stored and stored ~= ARGV[1] then
  return redis.error_reply('BLOOMSHAPE ' .. KEYS[1] .. ' is a filter of ' .. stored .. ', not ' .. ARGV[1])
end
if not stored or redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local k = tonumber(ARGV[2])
local out = {}
for i = 3, #ARGV, k do
  local present = 1
  for j = i, i + k - 1 do
    if redis.call('GETBIT', KEYS[1], ARGV[j]) == 0 then
      present = 0
      break
    end
  end
  out[#out + 1] = present
end
return out
