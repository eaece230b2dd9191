-- Adds items to a Bloom filter kept in one Redis string (doc/cache.md, "Bloom filter").
-- KEYS[1]: the bitmap; KEYS[2]: its shape ({name}:bloom), stored by the first add.
-- ARGV[1]: our shape ("m=<bits> k=<hashes> <hash>"); ARGV[2]: k; then k bit positions per item.
-- A filter of another shape on the name is refused with an error reply (BLOOMSHAPE ...): mixing two layouts would
-- lose the members already in.
-- Returns how many items had a bit unset (were new).
local stored = redis.call('GET', KEYS[2])
if stored and stored ~= ARGV[1] then
  return redis.error_reply('BLOOMSHAPE ' .. KEYS[1] .. ' is a filter of ' .. stored .. ', not ' .. ARGV[1])
end
local k = tonumber(ARGV[2])
if not stored then redis.call('SET', KEYS[2], ARGV[1]) end
local added = 0
for i = 3, #ARGV, k do
  local new = 0
  for j = i, i + k - 1 do
    if redis.call('SETBIT', KEYS[1], ARGV[j], 1) == 0 then new = 1 end
  end
  added = added + new
end
return added
