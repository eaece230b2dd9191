-- A fixed window on the node's clock (doc/rate-limiting.md).
-- KEYS[1]: the window's counter.
-- ARGV[1]: the rate; ARGV[2]: the window in ms; ARGV[3]: the cost.
-- Admits when count + cost <= rate: INCRBY, and PEXPIRE when the INCRBY created the counter (in the same
-- script: the expiry is never lost; a counter found without one gets it too). The window starts at its first
-- admission.
-- Returns {limited (0 or 1), the limit, remaining, retry after in ms (-1: never, or admitted), reset after in ms,
-- the server's time in us}: CL.THROTTLE's fields, read by rate_scripts::parse_decision.
-- Lua numbers are doubles: every value stays an integer under 2^53, so it is exact. Numbers go to redis.call as
-- strings formatted with %.0f, never through Lua's own number-to-string conversion (14 digits).
local rate, cost = tonumber(ARGV[1]), tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local count = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -1 then
  -- a counter without expiry would never reset (an INCR whose EXPIRE was lost, written by someone else)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
if ttl < 0 then ttl = 0 end
local limited, retry = 1, -1
if cost <= rate then
  if count + cost <= rate then
    limited = 0
    count = redis.call('INCRBY', KEYS[1], ARGV[3])
    if count == cost then
      redis.call('PEXPIRE', KEYS[1], ARGV[2])
      ttl = tonumber(ARGV[2])
    end
  else
    retry = math.max(ttl, 1)
  end
end
return {limited, rate, math.max(rate - count, 0), retry, ttl, now}
