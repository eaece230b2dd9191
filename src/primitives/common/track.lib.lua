-- Client tracking (CLIENT TRACKING on NOLOOP) stops following a key its own client writes: a script that writes a
-- lease's keys reads them last, so that the holder hears at once when another client, an expiry or an eviction
-- changes them (doc/algorithms.md, "Lease loss known at once").
local function track(first, last)
  for i = first, last do redis.call('EXISTS', KEYS[i]) end
end
