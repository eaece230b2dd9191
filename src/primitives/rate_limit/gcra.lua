-- GCRA (the generic cell rate algorithm) on the node's clock (doc/rate-limiting.md).
-- KEYS[1]: the subject's key, holding its theoretical arrival time (TAT) as "<us>:<remainder in 1/k us>".
-- ARGV: the interval, units per us (k), the capacity (burst + 1) and the cost, as gcra_units
-- (rate_arguments.hpp).
-- Admits when TAT - now + cost x interval <= capacity x interval, and then moves the TAT by cost x interval.
-- Returns {limited (0 or 1), the limit, remaining, retry after in ms (-1: never, or admitted), reset after in ms,
-- the server's time in us}: CL.THROTTLE's fields, read by rate_scripts::parse_decision.
-- Lua numbers are doubles: every value stays an integer under 2^53, so it is exact. Numbers go to redis.call as
-- strings formatted with %.0f, never through Lua's own number-to-string conversion (14 digits).
local interval, k, capacity, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tolerance = capacity * interval
local function ms_up(units)
  local per_ms = k * 1000
  return math.floor((units + per_ms - 1) / per_ms)
end
local function store(units)
  local us = math.floor(units / k)
  redis.call('SET', KEYS[1], string.format('%.0f:%.0f', now + us, units - us * k),
             'PX', string.format('%.0f', math.max(ms_up(units), 1)))
end
-- How far the TAT ("<us>:<remainder>", in units of 1/k us) is ahead of now, in units: 0 when it is past.
-- An admission never leaves it more than the tolerance ahead, so a TAT beyond that means the node's clock
-- was stepped back: it counts (and is stored again) as the tolerance, so that the step costs one bucket's
-- refill rather than its own length.
local ahead, stepped_back = 0, false
local stored = redis.call('GET', KEYS[1])
if stored then
  local us, rest = string.match(stored, '^(%d+):(%d+)$')
  if us then
    local d = tonumber(us) - now
    if d >= 0 then ahead = d * k + math.min(tonumber(rest), k - 1) end
    if ahead > tolerance then ahead, stepped_back = tolerance, true end
  end
end
local limited, retry = 1, -1
if cost <= capacity then
  local wanted = ahead + cost * interval
  if wanted <= tolerance then
    limited, ahead = 0, wanted
    store(ahead)
  else
    retry = ms_up(wanted - tolerance)
  end
end
if limited == 1 and stepped_back then store(ahead) end
return {limited, capacity, math.floor((tolerance - ahead) / interval), retry, ms_up(ahead), now}
