-- A library for scripts that wake waiters (cmake/RedlockLua.cmake says how a script includes one).
-- publish(channel, message): publishes on the sharded channel (SPUBLISH, Redis >= 7.0), which a Cluster delivers
-- within the shard of the channel's slot, or with PUBLISH where the server has no SPUBLISH (6.x); connections
-- subscribe the same way (SSUBSCRIBE from 7.0). The channel must be in the slot of the script's keys (a Cluster
-- refuses another: key_layout.hpp puts every channel there). Never fails the script: a publish the user may not
-- make (an ACL without channel rights, or without SPUBLISH) is skipped, and waiters then wake by their timers.
local function publish(channel, message)
  local sent = redis.pcall('SPUBLISH', channel, message)
  if type(sent) == 'table' and sent.err then
    -- 'Unknown Redis command called from (Lua) script': no SPUBLISH here. Any other error (NOPERM) stays skipped.
    local err = string.lower(sent.err)
    if string.find(err, 'unknown redis command', 1, true) or string.find(err, 'unknown command', 1, true) then
      redis.pcall('PUBLISH', channel, message)
    end
  end
end
