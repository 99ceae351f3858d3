--[[
events: one line per event, the way monitor_events (and seed 000's
watch_process_events) render the event log, so a notification reads like the
next page of `vigil events`.

Each line of a batch is an event: "[SEQ] AT match (pattern N)" for a line that
matched, "[SEQ] AT output" for one that did not (notify = "lines"), where SEQ
is the line's seq and AT the notification's time. The process text never
shares a line with what vigil says, so it follows on the next line, behind
its "[stdout seq=N] " prefix. An ending is one "[end] AT TYPE" line in the
event log's words (exited, stopped, timed_out, idle_timeout, overload) with
exit=N, signal=NAME, duration=D and the reason, then the last lines. Lines
withheld by the rate limit are told first, like the event log's own NOTE:

  monitor: web (mon_2jqldwf9bv5a)
  [1] 2026-11-21T06:41:42.980+00:00 output
  [stdout seq=1] a
  [2] 2026-11-21T06:41:42.980+00:00 match (pattern 0)
  [stdout seq=2] Error: b

An incident (docs/incidents.md) is one event, its lines after it:

  [41] 2026-11-21T06:41:44.020+00:00 incident 3: crash (python-traceback)
  [stderr seq=41] Traceback (most recent call last):
  ...

  monitor: web (mon_2jqldwf9bv5a)
  [end] 2026-11-21T06:41:43.112+00:00 exited exit=0 duration=12ms
]]

local envelope = require "vigil.envelope"

local EVENT = {
  exit = "exited",
  stopped = "stopped",
  timed_out = "timed_out",
  idle_timeout = "idle_timeout",
  overload = "overload",
}

-- The notification's time: n.at is RFC 3339 already (vigil.time(ms) would
-- make one from milliseconds since the epoch).
local function when(at)
  if type(at) == "number" then
    return vigil.time(math.tointeger(at) or math.floor(at))
  end
  return envelope.escape(at or "")
end

local function format(n)
  local out = {}
  local function put(s)
    if s ~= nil then
      out[#out + 1] = s
    end
  end
  local at = when(n.at)
  put(envelope.monitor(n))
  local k = n.suppressed or 0
  if k > 0 then
    k = math.tointeger(k) or k
    put("NOTE: " .. k .. " earlier line" .. (k == 1 and " was" or "s were") .. " withheld by the rate limit")
  end

  for _, s in ipairs(envelope.incident_notes(n)) do
    put("NOTE: " .. s:gsub("^note: ", ""))
  end

  local t = n.type
  if t == "output" then
    -- A restart's notification: how the program ended, when it starts again;
    -- a stall notice's (quiet_after_ms): no output for a while, or output
    -- again; a readiness or health notice's: what the probe found.
    local r = envelope.reason(n)
    if r then
      put("[" .. envelope.notice_kind(n) .. "] " .. at .. " " .. r)
    end
    local last_inc = nil
    for _, l in ipairs(n.lines or {}) do
      if l.incident ~= nil then
        -- One event per incident, its lines after it.
        if l.incident ~= last_inc then
          last_inc = l.incident
          put("[" .. math.tointeger(l.seq) .. "] " .. at .. " " .. envelope.incident_head(l.incident))
        end
      else
        local what = l.pattern ~= nil and ("match (pattern " .. math.tointeger(l.pattern) .. ")") or "output"
        put("[" .. math.tointeger(l.seq) .. "] " .. at .. " " .. what)
      end
      put(envelope.line(l))
    end
  elseif EVENT[t] then
    local s = "[end] " .. at .. " " .. EVENT[t]
    if n.exit_code ~= nil then
      s = s .. " exit=" .. math.tointeger(n.exit_code)
    end
    local sig = n.signal
    if sig ~= nil then
      s = s .. " signal=" .. (type(sig) == "number" and tostring(math.tointeger(sig)) or envelope.escape(sig))
    end
    if n.duration_ms ~= nil then
      s = s .. " duration=" .. envelope.duration(n.duration_ms)
    end
    if t == "overload" and n.state == "running" then
      s = s .. " output muted, still running"
    end
    local r = envelope.reason(n)
    if r then
      s = s .. " " .. r
    end
    put(s)
    if n.lines and n.lines[1] ~= nil then
      put("last lines:")
      for _, l in ipairs(n.lines) do
        put(envelope.line(l))
      end
    end
  elseif t == "dropped" then
    local d = math.tointeger(n.dropped or 0)
    put("NOTE: " .. d .. " notification" .. (d == 1 and " was" or "s were")
      .. " dropped because the session queue was full")
  else
    put("[error] " .. at .. " " .. envelope.escape(t or "unknown") .. " " .. (envelope.reason(n) or "(none given)"))
  end
  return table.concat(out, "\n") .. "\n"
end

return {
  format = format,
  -- What `vigil policy test` checks (docs/policies.md section 15).
  examples = {
    { name = "a crash is one incident event", sample = "crash",
      must = { "monitor: api (mon_sample0crash)", " incident 1: crash (python-traceback)",
               "[stderr seq=6] KeyError: 'user_id'" } },
    { name = "an exit is one end event", sample = "exit",
      must = { "[end] ", " exited exit=1 duration=1m23s", "last lines:" } },
    { name = "withheld lines come first", sample = "overload",
      must = { "NOTE: 18234 earlier lines were withheld by the rate limit" } },
  },
}
