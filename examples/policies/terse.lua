--[[
terse: one-line summaries for a noisy test watcher.

A watcher (pytest -f, jest --watch, cargo watch -x test) prints hundreds of
lines per run; the agent needs to know whether anything failed and where to
look, not every line. This policy turns each batch into one summary line and,
when something failed, the last failing line behind its prefix (process text
is only ever shown on a prefixed line of its own, which the engine requires):

  tests: 3 failed (seq 120-140), last:
  [stderr seq=140] FAILED tests/test_api.py::test_login - AssertionError

  tests: 57 lines, no failure (seq 141-197)

  tests: exited with code 1 after 3m12s; 3 failed lines in its last output, last:
  [stderr seq=140] FAILED tests/test_api.py::test_login - AssertionError

("tests" is the monitor's label.) A line counts as failed when it matched one
of the monitor's patterns, or, without patterns, when it contains FAIL,
failed, Error or error. The agent reads the rest with monitor_output
(since_sequence = the first seq shown).

Use it: copy this file into a directory listed in plugin_paths, then start the
watcher with policy = "terse", notify = "lines" (every batch summarised) or
patterns that catch the failures.
]]

local envelope = require "vigil.envelope"

local WORDS = { "FAIL", "failed", "Error", "error" }

local function failed(l)
  if l.pattern ~= nil then
    return true
  end
  local text = l.text or ""
  for _, w in ipairs(WORDS) do
    if text:find(w, 1, true) then
      return true
    end
  end
  return false
end

local function name(n)
  local label = n.label
  if label == nil or label == "" then
    label = n.monitor_id or "monitor"
  end
  return envelope.escape(label)
end

-- count of failed lines, first and last seq of the batch, the last failed line
local function scan(n)
  local count, first, last, worst = 0, nil, nil, nil
  for _, l in ipairs(n.lines or {}) do
    first = first or l.seq
    last = l.seq
    if failed(l) then
      count = count + 1
      worst = l
    end
  end
  return count, first, last, worst
end

local function span(first, last)
  if first == nil then
    return ""
  elseif first == last then
    return " (seq " .. math.tointeger(first) .. ")"
  end
  return " (seq " .. math.tointeger(first) .. "-" .. math.tointeger(last) .. ")"
end

local function format(n)
  local count, first, last, worst = scan(n)
  local head = name(n) .. ": "
  local out
  if n.type == "output" then
    if count > 0 then
      out = { head .. count .. " failed" .. span(first, last) .. ", last:", envelope.line(worst) }
    else
      local total = 0
      for _ in ipairs(n.lines or {}) do
        total = total + 1
      end
      out = { head .. total .. (total == 1 and " line" or " lines") .. ", no failure" .. span(first, last) }
    end
  elseif envelope.is_ending(n) then
    local s = head .. envelope.status(n)
    if count > 0 then
      out = { s .. "; " .. count .. " failed " .. (count == 1 and "line" or "lines")
        .. " in its last output, last:", envelope.line(worst) }
    else
      out = { s }
    end
  else
    -- dropped, policy_error: the default wording is already short.
    return envelope.body(n)
  end
  local note = envelope.suppressed(n)
  if note then
    out[#out + 1] = note
  end
  return table.concat(out, "\n") .. "\n"
end

return { format = format }
