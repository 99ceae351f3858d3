--[[
system_message: Hermes-style system messages (seed 002), for agents prompted
to expect "[SYSTEM: Background process ...]" text.

A batch with a matched line:

  [SYSTEM: Background process web matched watch pattern 0.
  Matched output:
  [stdout seq=2] Error: b
  Other output:
  [stdout seq=1] a
  (12 earlier matches were suppressed by rate limit)]

A batch without a match says "produced output." and lists its lines under
"Output:". An ending:

  [SYSTEM: Background process web exited with code 1 after 3m12s.
  Last output:
  [stderr seq=57] panic: runtime error
  ]

(or "was killed by SIGKILL", "was stopped by request (SIGTERM)", "timed out
(SIGTERM)", "was stopped by its idle timeout (SIGTERM)", "was stopped for
overload (SIGTERM)", "failed", each with "after <duration>" when known, and a
"Reason: ..." line when vigil gave one).

Alike matched lines are one incident and its repeats: the incident's lines
come behind "incident 1: message (pattern 0)", and its repeats are told, in
an alert or in the ending's last output, as "incident 1 repeated 5 times in
25ms (last at ...): message (pattern 0)" before the last one of them.

Unlike Hermes, the command never appears, only the label (the monitor id when
there is none); each process line keeps its "[stdout seq=N] " prefix; the
pattern is named by its index in the monitor's patterns list; and the closing
"]" ends vigil's own last line, or stands on a line of its own after a
process line, so no process text can seem to close the message.
]]

local envelope = require "vigil.envelope"

local function who(n)
  local label = n.label
  if label == nil or label == "" then
    label = n.monitor_id or "(unknown)"
  end
  return envelope.escape(label)
end

-- "exited with code 1 after 3m12s" -> the sentence after "Background process web ".
local function ending_phrase(n)
  local s = envelope.status(n)
  local state = n.state
  if state == "exited" then
    if n.signal ~= nil then
      return "was " .. s -- was killed by SIGKILL after ...
    end
    return s
  elseif state == "stopped" then
    return "was " .. s -- was stopped by request (SIGTERM) after ...
  elseif state == "idle_timeout" then
    return "was stopped by its " .. s
  elseif state == "overloaded" then
    return "was stopped for overload" .. (s:gsub("^overloaded, stopped", ""))
  elseif state == "running" and n.type == "overload" then
    return "is overloaded: output is muted; the process is still running"
  end
  return s -- timed out (SIGTERM) after ..., failed ...
end

local function plural(k, one, many)
  return k == 1 and one or many
end

-- Closes the message: "]" at the end of the last line when vigil wrote that
-- line, on a line of its own after a process line (so that no process text
-- is ever followed by vigil's own words on the same line).
local function close(out)
  local last = out[#out]
  if last:sub(1, 1) == "[" and (last:find("^%[stdout seq=%d+%] ") or last:find("^%[stderr seq=%d+%] ")) then
    out[#out + 1] = "]"
  else
    out[#out] = last .. "]"
  end
  return table.concat(out, "\n") .. "\n"
end

local function format(n)
  local out = {}
  local function put(s)
    out[#out + 1] = s
  end
  local t = n.type

  if t == "dropped" then
    local k = math.tointeger(n.dropped or 0)
    put("[SYSTEM: " .. k .. plural(k, " background process notification was", " background process notifications were")
      .. " dropped because the session queue was full.")
    return close(out)
  elseif t == "policy_error" then
    put("[SYSTEM: A notification policy failed for background process " .. who(n) .. ".")
    put("Reason: " .. (envelope.reason(n) or "(none given)"))
    return close(out)
  end

  local matched, other, seen = {}, {}, {}
  local idx = {}
  local last_inc = nil
  for _, l in ipairs(n.lines or {}) do
    if l.incident ~= nil then
      -- An incident's lines stay together behind a line that says what it is.
      if l.incident ~= last_inc then
        matched[#matched + 1] = envelope.incident_head(l.incident)
        last_inc = l.incident
      end
      matched[#matched + 1] = envelope.line(l)
      local p = math.tointeger(l.incident.pattern or -1)
      if p >= 0 and not seen[p] then
        seen[p] = true
        idx[#idx + 1] = p
      end
    elseif l.pattern ~= nil then
      matched[#matched + 1] = envelope.line(l)
      local p = math.tointeger(l.pattern)
      if not seen[p] then
        seen[p] = true
        idx[#idx + 1] = p
      end
    else
      other[#other + 1] = envelope.line(l)
    end
  end

  if t == "output" then
    if #matched > 0 then
      table.sort(idx)
      local names = {}
      for i, p in ipairs(idx) do
        names[i] = tostring(p)
      end
      put("[SYSTEM: Background process " .. who(n) .. " matched watch "
        .. plural(#idx, "pattern ", "patterns ") .. table.concat(names, ", ") .. ".")
      put("Matched output:")
      for _, s in ipairs(matched) do
        put(s)
      end
      if #other > 0 then
        put("Other output:")
        for _, s in ipairs(other) do
          put(s)
        end
      end
    else
      put("[SYSTEM: Background process " .. who(n) .. " produced output.")
      put("Output:")
      for _, s in ipairs(other) do
        put(s)
      end
    end
    -- A restart's notification says how the program ended and when it
    -- starts again; a stall notice's (quiet_after_ms), that it has printed
    -- nothing for a while, or prints again; a readiness or health notice's,
    -- what the probe found.
    local r = envelope.reason(n)
    if r then
      local word = { restart = "Restart", quiet = "Quiet", resumed = "Resumed", ready = "Ready",
                     health = "Health" }
      put(word[envelope.notice_kind(n)] .. ": " .. r)
    end
  else
    put("[SYSTEM: Background process " .. who(n) .. " " .. ending_phrase(n) .. ".")
    local r = envelope.reason(n)
    if r then
      put("Reason: " .. r)
    end
    if n.lines and n.lines[1] ~= nil then
      put("Last output:")
      -- An incident's lines (a repeat summary among them) behind the line
      -- that says what it is and how many times it repeated: without it the
      -- agent would see one ERROR line where the process printed six.
      local open = nil
      for _, l in ipairs(n.lines) do
        if l.incident ~= open then
          if l.incident ~= nil then
            put(envelope.incident_head(l.incident))
          end
          open = l.incident
        end
        put(envelope.line(l))
      end
    end
  end
  local k = n.suppressed or 0
  if k > 0 then
    k = math.tointeger(k) or k
    put("(" .. k .. plural(k, " earlier match was", " earlier matches were") .. " suppressed by rate limit)")
  end
  for _, s in ipairs(envelope.incident_notes(n)) do
    put("(" .. s:gsub("^note: ", "") .. ")")
  end
  return close(out)
end

return {
  format = format,
  -- What `vigil policy test` checks (docs/policies.md section 15).
  examples = {
    { name = "a crash names the process by its label only", sample = "crash",
      must = { "[SYSTEM: Background process api matched watch pattern", "Matched output:",
               "[stderr seq=6] KeyError: 'user_id'" },
      must_not = { "mon_sample0crash" } },
    { name = "an exit says how it ended", sample = "exit",
      must = { "[SYSTEM: Background process tests exited with code 1 after 1m23s.",
               "Last output:" } },
    { name = "a batch without a match is output", notification = { type = "output",
        label = "web", lines = { { seq = 1, stream = "stdout", text = "listening on :3000" } } },
      must = { "[SYSTEM: Background process web produced output.", "Output:",
               "[stdout seq=1] listening on :3000" } },
  },
}
