-- A well-behaved policy using the whole API: format shows every field of
-- n, route returns the label as the mode, gate refuses rm.
-- Used by tests/unit/test_policy.c.
local M = {}

local fields = {
  "type", "monitor_id", "label", "mode", "batch", "suppressed", "state",
  "exit_code", "signal", "duration_ms", "reason", "dropped",
}

function M.format(n)
  if n.label == "number" then return 42 end
  local parts = {}
  for _, k in ipairs(fields) do
    parts[#parts + 1] = k .. "=" .. tostring(n[k])
  end
  parts[#parts + 1] = "lines=" .. #n.lines
  for _, l in ipairs(n.lines) do
    parts[#parts + 1] = string.format("[%d %s %s %s %s]", l.seq, l.stream, l.text,
                                      tostring(l.pattern), tostring(l.truncated))
  end
  local keys = 0
  for _ in pairs(n) do keys = keys + 1 end
  parts[#parts + 1] = "keys=" .. keys
  parts[#parts + 1] = "at=" .. n.at
  return table.concat(parts, " ")
end

function M.route(n)
  return n.label
end

function M.gate(req)
  if req.program == "weird" then return "yes" end
  if req.argv[1] == "rm" then return false, "no rm please" end
  if req.argv[1] == "sh" then return false end
  return true
end

return M
