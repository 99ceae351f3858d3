-- A policy that tries what the sandbox forbids, one attack per label:
-- format(n) runs attacks[n.label], and any other label answers "ok LABEL",
-- so a test can check that the state still works after each attack.
-- Used by tests/unit/test_policy.c.
local attacks = {}

attacks.io_open = function() return io.open("/etc/passwd"):read("a") end
attacks.os_execute = function() return tostring(os.execute("true")) end
attacks.require_os = function() return tostring(require "os") end
attacks.require_escape = function() return tostring(require "../etc/passwd") end
attacks.require_slash = function() return tostring(require "vigil/envelope") end

-- A Lua 5.4 binary chunk header (string.dump is gone, so built by hand).
attacks.bytecode = function()
  local header = "\27Lua\x54\x00\x19\x93\r\n\x1a\n\x04\x08\x08"
    .. "\x78\x56\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x28\x77\x40\x01"
  local f, e = load(header)
  local g, e2 = load(header, "x", "b")
  return "f=" .. tostring(f) .. " e=" .. tostring(e) .. " g=" .. tostring(g)
    .. " e2=" .. tostring(e2) .. " dump=" .. tostring(string.dump)
end

attacks.debug_getinfo = function() return tostring(debug.getinfo(1)) end
attacks.debug_sethook = function() debug.sethook() return "unhooked" end
attacks.gc_stop = function() collectgarbage("stop") return "stopped" end

attacks.loop = function() while true do end end
attacks.pcall_loop = function()
  while true do pcall(function() while true do end end) end
end
attacks.recurse = function()
  local function f(x) return 1 + f(x + 1) end
  return tostring(f(1))
end
attacks.recurse_c = function()
  local t = setmetatable({}, {})
  getmetatable(t).__index = function(t, k) return t[k] end
  return tostring(t.x)
end

attacks.big_string = function() return string.rep("x", 2^30) end
-- A 6 MB string made of 1000 copies of 6 KB: string.rep is charged for its
-- copies, and six million of them would pass the budget first.
attacks.format_big = function()
  local s = string.rep("x", 6000):rep(1000)
  return string.format("%s%s%s", s, s, s)
end
attacks.concat_big = function()
  local s = string.rep("x", 6000):rep(1000)
  return table.concat({s, s, s})
end
attacks.rep_loop = function()
  for i = 1, 1e9 do local s = string.rep("x", 1e6) end
end

-- Long C calls: a backtracking pattern, many of them, a huge table.move.
attacks.find = function()
  return tostring(string.find(string.rep("a", 5000), ".-.-.-.-b"))
end
attacks.find_loop = function()
  local s = string.rep("a", 300)
  for i = 1, 1e9 do s:find(".-.-b") end
end
attacks.gsub_loop = function()
  local s = string.rep("a", 300)
  for i = 1, 1e9 do s:gsub(".-.-b", "") end
end
attacks.table_move = function()
  return tostring(#table.move({}, 1, math.maxinteger // 2, 2))
end
-- One VM instruction that compares two distinct 3 MB strings, in a loop:
-- only the wall-clock limit sees that.
attacks.compare_loop = function()
  local a = string.rep("x", 3000):rep(1000)
  local b = a:sub(1, -2) .. "x"
  local same = 0
  while true do if a == b then same = same + 1 end end
end

attacks.write_n = function(n) n.type = "x" return "written" end
attacks.write_line = function(n) n.lines[1].text = "x" return "written" end
attacks.rawset_n = function(n) rawset(n, "type", "x") return "type=" .. n.type end
attacks.setmetatable_n = function(n) setmetatable(n, {}) return "replaced" end
attacks.getmetatable_n = function(n) return "meta=" .. tostring(getmetatable(n)) end

-- xpcall's message handler, which Lua runs at the point of the error: for
-- the budget's error that is inside the count hook, where no hook fires.
attacks.xpcall_loop = function()
  xpcall(function() while true do end end, function(e) while true do end end)
  return "x"
end
attacks.xpcall_error = function()
  xpcall(function() error("x") end, function(e) while true do end end)
  return "x"
end
attacks.xpcall_close = function()
  xpcall(function()
    local x <close> = setmetatable({}, {__close = function() while true do end end})
    error("x")
  end, function(e) while true do end end)
  return "x"
end

return {
  format = function(n)
    local attack = attacks[n.label]
    if attack then return attack(n) end
    return "ok " .. n.label
  end,
}
