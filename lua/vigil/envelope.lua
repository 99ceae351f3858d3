--[[
vigil.envelope: helpers for writing a policy's format(n).

    local envelope = require "vigil.envelope"

What format(n) returns is only the BODY of the text the agent reads. The
engine always frames it (a BEGIN marker with a fresh nonce, the
"stream_policy: untrusted_observation" declaration and its sentence, the body,
the END marker), escapes every control character in it except newlines, and
refuses a body that shows a process line's text anywhere but on a line that
begins with that notification's line prefix ("[stdout seq=N] " or
"[stderr seq=N] "). The helpers below make that rule the easy path: process
text only ever leaves them behind its prefix, and everything vigil says about
a line goes on a line of its own. docs/policies.md has the whole contract.

Every function takes the notification table `n` (or one of its lines `l`),
never changes it, and returns strings without a trailing newline unless it
says otherwise. Line text, the label and the reason arrive already escaped by
the engine; the helpers pass the label, the monitor id and the reason through
vigil.escape once more all the same (escaping escaped text changes nothing),
so they stay safe if handed a table of your own.

  envelope.prefix(l)      -> "[stdout seq=N] " or "[stderr seq=N] " for line l
                             (stream "stderr" is stderr, anything else stdout).
  envelope.line(l)        -> envelope.prefix(l) .. l.text, plus " [truncated]"
                             when l.truncated.
  envelope.lines(n)       -> every line of n through envelope.line, joined with
                             "\n"; "" when n has no lines.
  envelope.matched(n)     -> "matched: seq=2 (pattern 0), seq=5 (pattern 1)"
                             naming the lines outside incidents that matched a
                             pattern, or nil.
  envelope.who(n)         -> "LABEL (MONITOR_ID)", or "MONITOR_ID" when there
                             is no label or the label is the id, or nil when n
                             belongs to no monitor.
  envelope.incident_head(inc) -> the line before an incident's lines (an entry of
                             n.incidents, or a line's l.incident):
                               "incident 2: crash (node-error)"
                               "incident 2: message (pattern 0)"
                               "incident 1 repeated 39 times in 58.5s (last at T): crash (node-error)"
                             (a summary), and for an incident that came back after
                             the coalescing window ", repeated N times in D (last
                             at T) before this" after its kind.
  envelope.incident_tail(inc) -> "incident 2: 14 more lines not shown (monitor_output
                             incident 2)" when its trace was longer than was kept,
                             else nil.
  envelope.incident_notes(n) -> an array of the "note: ..." lines for
                             n.incidents_withheld, n.incidents_coalesced and
                             n.incidents_dropped (empty when all are 0).
  envelope.monitor(n)     -> "monitor: LABEL (MONITOR_ID)", or
                             "monitor: MONITOR_ID" when there is no label or the
                             label is the id, or nil when n belongs to no
                             monitor (a dropped notification).
  envelope.duration(ms)   -> a duration as vigil writes it: "850ms", "12.3s",
                             "3m12s", "2h05m", "3d04h" (each unit truncated,
                             never rounded up).
  envelope.signal_name(v) -> "SIGTERM" for "SIGTERM", "signal 99" for a signal
                             vigil has no name for (a number); nil for nil.
  envelope.is_ending(n)   -> true for the ending types: exit, stopped,
                             timed_out, idle_timeout, overload.
  envelope.status(n)      -> what the "status:" line says, without "status: ":
                             for an output notification the state ("running");
                             for an ending, how it ended, e.g.
                               "exited with code 1 after 3m12s"
                               "killed by SIGKILL after 12.3s"
                               "stopped by request (SIGTERM) after 5m00s"
                               "timed out (SIGTERM) after 30m00s"
                               "idle timeout (SIGTERM) after 300ms"
                               "overloaded, stopped (SIGTERM) after 2.1s"
                               "failed (exit code 2) after 10ms"
                               "overloaded, output muted; the process is still running"
                             ("after ..." only when n.duration_ms is set).
  envelope.reason(n)      -> n.reason escaped, or nil when there is none.
  envelope.notice_kind(n) -> what an output notification's reason tells:
                             "quiet" or "resumed" (a stall notice,
                             quiet_after_ms), "ready" (ready or not ready),
                             "health" (a health change), "restart" for any
                             other reason (the restart policy's), nil
                             without one.
  envelope.suppressed(n)  -> "note: 12 earlier lines were withheld by the rate
                             limit" ("1 earlier line was"), or nil when n.suppressed
                             is 0 or nil.
  envelope.dropped(n)     -> "note: 4 notifications were dropped because the
                             session queue was full" ("1 notification was") for a
                             dropped notification, else nil.
  envelope.escape(s)      -> vigil.escape(s): control characters, format and
                             other invisible characters (bidi overrides,
                             zero-width characters, tags, line separators,
                             variation selectors) shown as escapes;
                             backslashes kept.
  envelope.body(n)        -> exactly the body of vigil's built-in C envelope for
                             every notification type and both styles (n.style
                             "readable" or "compact"), ending in "\n"; each
                             incident's lines behind envelope.incident_head:
                               monitor: web (mon_...)
                               event: output batch 1
                               [stdout seq=1] a
                               [stdout seq=2] Error: b
                               matched: seq=2 (pattern 0)
                               note: 3 earlier lines were withheld by the rate limit
                               status: running
                             and, for a restart's, "reason: ..." after it.
                             Endings: "event: exit", "status: ...", "reason: ..."
                             (when there is one), "last lines:" and the lines (when
                             there are any), the note. dropped: "event: dropped" and
                             its note. policy_error: "event: policy_error" and
                             "reason: ..." ("(none given)" without one).
  envelope.join(parts)    -> the strings of the array `parts` (nil entries
                             skipped, so optional pieces can be left out) joined
                             with "\n", plus a final "\n"; a convenience for
                             building a body line by line.

Like every module a policy requires, this file runs inside vigil's sandbox:
base (without dofile, loadfile or bytecode), string, table, math, utf8 and the
`vigil` module only.
]]

local vigil = vigil
if vigil == nil then
  local ok, m = pcall(require, "vigil")
  if ok then
    vigil = m
  end
end

local concat, format, tointeger, floor = table.concat, string.format, math.tointeger, math.floor

local M = {}

local ENDING = {
  exit = true,
  stopped = true,
  timed_out = true,
  idle_timeout = true,
  overload = true,
}

-- An integer as decimal digits ("3", never "3.0").
local function int(v)
  local i = tointeger(v)
  if i == nil then
    i = floor(tonumber(v) or 0)
  end
  return format("%d", i)
end

function M.escape(s)
  if s == nil then
    return nil
  end
  if vigil and vigil.escape then
    return vigil.escape(s)
  end
  -- Without the engine's escape (never the case inside vigil): show every
  -- control byte as \xNN, which is what the engine would do to it anyway.
  return (tostring(s):gsub("[%z\1-\31\127]", function(c)
    return format("\\x%02x", c:byte())
  end))
end

function M.prefix(l)
  local stream = (l.stream == "stderr" or l.stream == 1) and "stderr" or "stdout"
  return "[" .. stream .. " seq=" .. int(l.seq) .. "] "
end

function M.line(l)
  local s = M.prefix(l) .. (l.text or "")
  if l.truncated then
    s = s .. " [truncated]"
  end
  return s
end

function M.lines(n)
  local out = {}
  for i, l in ipairs(n.lines or {}) do
    out[i] = M.line(l)
  end
  return concat(out, "\n")
end

function M.matched(n)
  local parts = {}
  for _, l in ipairs(n.lines or {}) do
    if l.pattern ~= nil and l.pattern >= 0 and l.incident == nil then
      parts[#parts + 1] = "seq=" .. int(l.seq) .. " (pattern " .. int(l.pattern) .. ")"
    end
  end
  if #parts == 0 then
    return nil
  end
  return "matched: " .. concat(parts, ", ")
end

function M.who(n)
  local id = n.monitor_id or ""
  local label = n.label
  local has_label = label ~= nil and label ~= "" and label ~= id
  if id == "" and not has_label then
    return nil
  end
  if has_label then
    local s = M.escape(label)
    if id ~= "" then
      s = s .. " (" .. M.escape(id) .. ")"
    end
    return s
  end
  return M.escape(id)
end

function M.monitor(n)
  local who = M.who(n)
  return who and "monitor: " .. who or nil
end

local KINDS = {crash = "crash", health = "health"}

-- "crash (node-error)", "message (pattern 2)" or "health (unhealthy)".
local function incident_what(inc)
  local s = KINDS[inc.kind] or "message"
  if inc.pattern_name ~= nil then
    s = s .. " (" .. M.escape(inc.pattern_name) .. ")"
  elseif inc.pattern ~= nil then
    s = s .. " (pattern " .. int(inc.pattern) .. ")"
  end
  return s
end

-- " N times in D (last at T)".
local function incident_repeats(inc)
  local k = inc.repeats or 0
  return " " .. int(k) .. (k == 1 and " time" or " times") .. " in "
    .. M.duration(inc.repeat_span_ms or 0) .. " (last at " .. M.escape(inc.last_repeat_at or "") .. ")"
end

function M.incident_head(inc)
  if inc.summary then
    return "incident " .. int(inc.id) .. " repeated" .. incident_repeats(inc) .. ": "
      .. incident_what(inc)
  end
  local s = "incident " .. int(inc.id) .. ": " .. incident_what(inc)
  if (inc.repeats or 0) > 0 then
    s = s .. ", repeated" .. incident_repeats(inc) .. " before this"
  end
  return s
end

function M.incident_tail(inc)
  local k = inc.truncated_lines or 0
  if k == 0 then
    return nil
  end
  return "incident " .. int(inc.id) .. ": " .. int(k) .. (k == 1 and " more line" or " more lines")
    .. " not shown (monitor_output incident " .. int(inc.id) .. ")"
end

function M.duration(ms)
  local v = tointeger(ms) or floor(tonumber(ms) or 0)
  if v < 0 then
    v = 0
  end
  if v < 1000 then
    return format("%dms", v)
  elseif v < 60 * 1000 then
    return format("%d.%ds", v // 1000, v % 1000 // 100)
  elseif v < 3600 * 1000 then
    return format("%dm%02ds", v // 60000, v // 1000 % 60)
  elseif v < 86400 * 1000 then
    return format("%dh%02dm", v // 3600000, v // 60000 % 60)
  end
  return format("%dd%02dh", v // 86400000, v // 3600000 % 24)
end

function M.signal_name(v)
  if v == nil or v == 0 then
    return nil
  end
  if type(v) == "number" then
    return "signal " .. int(v)
  end
  return M.escape(v)
end

function M.is_ending(n)
  return ENDING[n.type] == true
end

-- " (SIGTERM)", " (exit code 0)" or "": how the process itself ended when
-- vigil ended it.
local function how(n)
  local sig = M.signal_name(n.signal)
  if sig then
    return " (" .. sig .. ")"
  elseif n.exit_code ~= nil then
    return " (exit code " .. int(n.exit_code) .. ")"
  end
  return ""
end

local WORDS = {
  stopped = "stopped by request",
  timed_out = "timed out",
  idle_timeout = "idle timeout",
  overloaded = "overloaded, stopped",
  failed = "failed",
}

function M.status(n)
  local state = n.state
  local s
  if state == "exited" then
    local sig = M.signal_name(n.signal)
    if sig then
      s = "killed by " .. sig
    elseif n.exit_code ~= nil then
      s = "exited with code " .. int(n.exit_code)
    else
      s = "exited"
    end
  elseif WORDS[state] then
    s = WORDS[state] .. how(n)
  elseif n.type == "overload" then
    s = "overloaded, output muted; the process is still running"
  else
    s = state and M.escape(state) or "unknown"
  end
  if M.is_ending(n) and n.duration_ms ~= nil then
    s = s .. " after " .. M.duration(n.duration_ms)
  end
  return s
end

function M.reason(n)
  if n.reason == nil or n.reason == "" then
    return nil
  end
  return M.escape(n.reason)
end

-- The engine's reason words say which notice an output notification is
-- (monitor_quiet.c, monitor_restart.c).
function M.notice_kind(n)
  if n.type ~= "output" or n.reason == nil or n.reason == "" then
    return nil
  elseif n.reason:find("^no output for ") then
    return "quiet"
  elseif n.reason:find("^output resumed after ") then
    return "resumed"
  elseif n.reason:find("^unhealthy: ") or n.reason:find("^healthy again ") then
    return "health"
  elseif n.reason:find("^ready after ") or n.reason:find("^not ready after ") then
    return "ready"
  end
  return "restart"
end

-- "note: N THING(S) WAS/WERE WHAT", or nil when k is 0.
local function note(k, one, many, what)
  k = k or 0
  if k == 0 then
    return nil
  end
  return "note: " .. int(k) .. " " .. (k == 1 and one or many) .. (k == 1 and " was " or " were ")
    .. what
end

function M.suppressed(n)
  return note(n.suppressed, "earlier line", "earlier lines", "withheld by the rate limit")
end

function M.incident_notes(n)
  local out = {}
  out[#out + 1] = note(n.incidents_withheld, "incident", "incidents", "withheld by the rate limit")
  out[#out + 1] = note(n.incidents_coalesced, "repeat of an earlier incident",
    "repeats of earlier incidents", "counted but not shown")
  out[#out + 1] = note(n.incidents_dropped, "incident", "incidents",
    n.type == "dropped" and "among them" or "dropped by a policy")
  return out
end

function M.dropped(n)
  if n.type ~= "dropped" then
    return nil
  end
  local k = n.dropped or 0
  if k == 1 then
    return "note: 1 notification was dropped because the session queue was full"
  end
  return "note: " .. int(k) .. " notifications were dropped because the session queue was full"
end

function M.join(parts)
  local out = {}
  -- Not ipairs: a nil entry (an optional piece left out) must not end the list.
  local last = 0
  for k in pairs(parts) do
    if type(k) == "number" and k > last then
      last = k
    end
  end
  for i = 1, last do
    local p = parts[i]
    if p ~= nil and p ~= false then
      out[#out + 1] = p
    end
  end
  if #out == 0 then
    return ""
  end
  return concat(out, "\n") .. "\n"
end

-- The C envelope's body, piece by piece, in its order.
function M.body(n)
  local out = {}
  local function put(s)
    if s ~= nil then
      out[#out + 1] = s
    end
  end
  local function put_lines()
    local open = nil
    -- An incident without lines (a health change before any output) is
    -- said first, on its own.
    for _, inc in ipairs(n.incidents or {}) do
      if #inc.lines == 0 and not inc.summary then
        put(M.incident_head(inc))
      end
    end
    for _, l in ipairs(n.lines or {}) do
      if l.incident ~= open then
        if open ~= nil then
          put(M.incident_tail(open))
        end
        if l.incident ~= nil then
          put(M.incident_head(l.incident))
        end
        open = l.incident
      end
      out[#out + 1] = M.line(l)
    end
    if open ~= nil then
      put(M.incident_tail(open))
    end
    put(M.matched(n))
  end
  local function put_notes()
    put(M.suppressed(n))
    for _, s in ipairs(M.incident_notes(n)) do
      put(s)
    end
  end

  local t = n.type
  if n.style == "compact" then
    local who = M.who(n)
    local first
    if t == "output" then
      first = "output " .. int(n.batch or 0)
    elseif t == "dropped" or t == "policy_error" then
      first = t
    else
      first = M.status(n)
    end
    put((who and who .. ": " or "") .. first)
    if t == "dropped" and M.reason(n) == nil and (n.dropped or 0) > 0 then
      put(M.dropped(n))
    end
    local r = M.reason(n)
    if r then
      put("reason: " .. r)
    end
    put_lines()
    put_notes()
    return concat(out, "\n") .. "\n"
  end

  put(M.monitor(n))
  if t == "output" then
    put("event: output batch " .. int(n.batch or 0))
    put_lines()
    put_notes()
    put("status: " .. (n.state and M.escape(n.state) or "unknown"))
    -- A restart's (the restart policy): how the program ended, when it
    -- starts again.
    local r = M.reason(n)
    if r then
      put("reason: " .. r)
    end
  elseif t == "dropped" then
    put("event: dropped")
    put(M.dropped(n))
    put_notes()
  elseif t == "policy_error" then
    put("event: policy_error")
    put("reason: " .. (M.reason(n) or "(none given)"))
  else
    put("event: " .. M.escape(t or "unknown"))
    put("status: " .. M.status(n))
    local r = M.reason(n)
    if r then
      put("reason: " .. r)
    end
    if n.lines and n.lines[1] ~= nil then
      put("last lines:")
      put_lines()
    end
    put_notes()
  end
  return concat(out, "\n") .. "\n"
end

return M
