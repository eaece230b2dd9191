-- wrk: POST /items/{item}/reserve, one item (every request waits for the same lock) or one of ITEMS items.
-- Usage: wrk -s reserve.lua URL -- [ITEMS]
local items = 1
function init(args)
  items = tonumber(args[1] or "1")
end
function request()
  local item = "bench-" .. math.random(0, items - 1)
  return wrk.format("POST", "/items/" .. item .. "/reserve", nil, "")
end
function done(summary, latency, requests)
  local codes = {}
  io.write(string.format("non-2xx: %d, socket errors: %d\n", summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
