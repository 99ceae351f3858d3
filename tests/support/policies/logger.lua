-- Logs in a loop (tests/unit/test_policy.c): format(n) with the label
-- "flood:N" calls vigil.log N times, then answers "logged N".
local function flood(count)
  for i = 1, count do vigil.log("info", "flood line " .. i) end
  return "logged " .. count
end

return {
  format = function(n)
    local count = tonumber(n.label:match("^flood:(%d+)$"))
    return flood(count or 0)
  end,
}
