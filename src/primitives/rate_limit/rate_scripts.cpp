#include "primitives/rate_limit/rate_arguments.hpp"
#include "primitives/rate_limit/rate_scripts.hpp"

#include <redlock/key_layout.hpp>

#include <array>

namespace redlock::detail::rate_scripts {

// Lua numbers are doubles: every value below stays an integer under 2^53, so it is exact. Numbers go to
// redis.call as strings formatted with %.0f, never through Lua's own number-to-string conversion (14 digits).

const script& gcra()
{
    static const script s(R"lua(
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
)lua");
    return s;
}

const script& fixed_window()
{
    static const script s(R"lua(
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
)lua");
    return s;
}

const script& sliding_window()
{
    static const script s(R"lua(
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
)lua");
    return s;
}

std::string log_total_key(const std::string& key)
{
    return aux_name(key, "total");
}

request decision_request(const std::string& key, const rate_limit& limit, std::int64_t cost)
{
    request req;
    switch (limit.strategy) {
        case rate_strategy::gcra: {
            const auto u = gcra_units_of(limit).value_or(gcra_units{});
            req.push_script(gcra(), {key}, {u.interval, u.per_us, u.capacity, cost});
            break;
        }
        case rate_strategy::fixed_window:
            req.push_script(fixed_window(), {key}, {limit.rate, limit.period.count(), cost});
            break;
        case rate_strategy::sliding_window: {
            const auto total = log_total_key(key);
            req.push_script(sliding_window(), {key, total}, {limit.rate, limit.period.count() * 1000, cost});
            break;
        }
    }
    req.set_timeout(limit.node_timeout);
    return req;
}

std::optional<rate_decision> parse_decision(const response& resp)
{
    if (resp.size() != 1) return std::nullopt;
    const auto& reply = resp[0];
    if (reply.data_type != resp::type::array || reply.elements.size() != 6) return std::nullopt;
    std::array<std::int64_t, 6> f{};
    for (std::size_t i = 0; i < f.size(); ++i) {
        const auto n = reply.elements[i].as_integer();
        if (!n) return std::nullopt;
        f[i] = *n;
    }
    const auto [limited, limit, remaining, retry, reset, now] = f;
    if (limited != 0 && limited != 1) return std::nullopt;
    if (limit < 1 || remaining < 0 || reset < 0 || now <= 0) return std::nullopt;
    if (limited == 0 ? retry != -1 : retry < -1) return std::nullopt;

    rate_decision d;
    d.result = limited == 0 ? rate_decision::outcome::allowed
               : retry < 0  ? rate_decision::outcome::never
                            : rate_decision::outcome::limited;
    d.limit = limit;
    d.remaining = remaining;
    d.retry_after = std::chrono::milliseconds(retry);
    d.reset_after = std::chrono::milliseconds(reset);
    d.server_time = std::chrono::microseconds(now);
    return d;
}

vote classify_decision(error_code ec, const response& resp)
{
    if (ec) return vote::error;
    const auto d = parse_decision(resp);
    if (!d) return vote::error;
    return d->allowed() ? vote::yes : vote::no;
}

}  // namespace redlock::detail::rate_scripts
