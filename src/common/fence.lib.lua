-- A library for scripts that compare fencing tokens (cmake/RedlockLua.cmake says how a script includes one).
-- fence_of(key): the key's counter as a decimal string, '0' when unset; a script error when it is not a number.
-- less(a, b): a < b for such strings. Compared as strings, values past 2^53 (where Lua numbers lose precision)
-- still compare exactly.
local function fence_of(key)
  local f = redis.call('GET', key)
  if not f then return '0' end
  if not string.match(f, '^%d+$') or (#f > 1 and string.sub(f, 1, 1) == '0') then
    error('the fencing counter ' .. key .. ' holds ' .. f .. ', not a number')
  end
  return f
end
local function less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
