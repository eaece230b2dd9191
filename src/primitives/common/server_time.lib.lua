-- A library for scripts that keep time on the server (cmake/RedlockLua.cmake says how a script includes one).
-- server_now(): the server's time in ms (TIME: never a client's clock).
-- keep(key, life): the key lives at least `life` ms from now (its TTL only grows).
local function server_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function keep(key, life)
  if redis.call('PTTL', key) < life then redis.call('PEXPIRE', key, life) end
end
