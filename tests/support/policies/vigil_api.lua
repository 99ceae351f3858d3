-- The vigil module and require, one use per label (tests/unit/test_policy.c).
local uses = {
  nonce = function() return vigil.nonce() end,
  escape = function() return vigil.escape("\27[31mred\u{202e}x\n") end,
  time0 = function() return vigil.time(0) end,
  time = function() return vigil.time() end,
  log = function() vigil.log("warn", "hello from a policy\27[2J") return "logged" end,
  badlog = function() vigil.log("loud", "x") return "logged" end,
  envelope = function()
    local env = require "vigil.envelope"
    return env.wrap("body") .. " loads=" .. tostring(envelope_loads)
  end,
  require_vigil = function() return tostring(require("vigil") == vigil) end,
  missing = function() return tostring(require "nope.none") end,
  loop = function() return tostring(require "loop.a") end,
}

return {
  format = function(n) return uses[n.label]() end,
}
