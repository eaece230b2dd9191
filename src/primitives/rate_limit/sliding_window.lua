-- A sliding window (an exact log) on the node's clock (doc/rate-limiting.md).
-- KEYS[1]: the log, a sorted set of one member "<sequence>:<cost>" per admitted call, scored by its time in us;
-- KEYS[2]: a hash of the log's total cost ('total') and member sequence ('sequence') ({key}:total).
-- ARGV[1]: the rate; ARGV[2]: the window in us; ARGV[3]: the cost.
-- Drops the calls that left the window (at or before now - window), admits when total + cost <= rate.
-- Returns {limited (0 or 1), the limit, remaining, retry after in ms (-1: never, or admitted), reset after in ms,
-- the server's time in us}: CL.THROTTLE's fields, read by rate_scripts::parse_decision.
-- Lua numbers are doubles: every value stays an integer under 2^53, so it is exact. Numbers go to redis.call as
-- strings formatted with %.0f, never through Lua's own number-to-string conversion (14 digits).
local rate, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local function cost_of(member) return tonumber(string.match(member, ':(%d+)$')) or 0 end
local function ms_up(us) return math.floor((us + 999) / 1000) end
local horizon = string.format('%.0f', now - window)
local total = tonumber(redis.call('HGET', KEYS[2], 'total'))
if total and redis.call('EXISTS', KEYS[1]) == 1 then
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', horizon)) do
    total = total - cost_of(member)
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', horizon)
else
  -- a first call, or one of the two keys was lost (evicted): the log itself says what is left
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', horizon)
  total = 0
  for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do total = total + cost_of(member) end
end
-- Until the newest call left the window: the log is empty then.
local function until_empty()
  local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if #newest < 2 then return 0 end
  return ms_up(tonumber(newest[2]) + window - now)
end
local limited, retry = 1, -1
if cost <= rate then
  if total + cost <= rate then
    limited, total = 0, total + cost
    local sequence = redis.call('HINCRBY', KEYS[2], 'sequence', 1)
    redis.call('ZADD', KEYS[1], string.format('%.0f', now), string.format('%.0f:%.0f', sequence, cost))
    redis.call('HSET', KEYS[2], 'total', string.format('%.0f', total))
    local ttl = string.format('%.0f', ms_up(window))
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[2], ttl)
  else
    -- Admitted once the oldest calls holding total + cost - rate units left; each holds at least one.
    local needed, freed = total + cost - rate, 0
    local oldest = redis.call('ZRANGE', KEYS[1], 0, string.format('%.0f', needed - 1), 'WITHSCORES')
    for i = 1, #oldest, 2 do
      freed = freed + cost_of(oldest[i])
      if freed >= needed then
        retry = ms_up(tonumber(oldest[i + 1]) + window - now)
        break
      end
    end
    if retry < 0 then retry = until_empty() end
    retry = math.max(retry, 1)
  end
end
return {limited, rate, math.max(rate - total, 0), retry, until_empty(), now}
