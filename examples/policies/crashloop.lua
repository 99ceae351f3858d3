--[[
crashloop: a crash interrupts the agent once; a crash loop says it is one.

The engine already does the coalescing (docs/incidents.md): each incident
has a fingerprint, a repeat of one notified within incident.coalesce_ms is
counted instead of notified, and the series is reported once, by a summary
(an incident entry with summary = true and its repeats) or by the ending.
This policy builds on those fingerprints to decide what is worth
interrupting a turn for:

- an output notification with a new crash (an incident of kind "crash",
  not a summary) goes live_safe;
- a series of LOOP_MIN or more repeats (in a summary, in an incident that
  came back after the window, or in the ending) is a crash loop: it goes
  live_safe too, and the text says so on a line of its own:

    note: crash loop: incident 1 (node-error) repeated 39 times in 58.5s

- an incident whose fingerprint this policy showed less than WINDOW seconds
  ago and that the engine did not coalesce (coalescing switched off with
  incident.coalesce_ms = 0) is dropped: counted in counters.policy_dropped,
  and its count reaches the agent on the next notification;
- everything else (messages, plain lines, clean endings) waits for idle.

State lives in a local table keyed by monitor id and fingerprint, cleared
for a monitor at its ending and bounded (MAX_KEYS). live_safe reaches the
agent early only when the config sets monitor.live_mode_enabled = true.
]]

local envelope = require "vigil.envelope"

local LOOP_MIN = 3          -- repeats that make a series a loop
local WINDOW = 60           -- seconds a fingerprint shown stays known
local MAX_KEYS = 4096       -- fingerprints remembered at once, a bound on memory

local shown = {}            -- "monitor_id fingerprint" -> seconds when shown
local nshown = 0

-- Seconds since the epoch of an RFC 3339 time with milliseconds
-- ("2026-11-21T06:41:42.980+00:00", as in n.at); nil for anything else.
local function seconds(at)
  local y, mo, d, h, mi, s, ms, sign, oh, om =
    tostring(at or ""):match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)%.(%d+)([+-])(%d+):(%d+)$")
  if y == nil then
    return nil
  end
  y, mo = tonumber(y), tonumber(mo)
  -- Days from the civil date (proleptic Gregorian), as in Howard Hinnant's algorithm.
  if mo <= 2 then
    y = y - 1
  end
  local era = y // 400
  local yoe = y - era * 400
  local doy = (153 * ((mo + 9) % 12) + 2) // 5 + tonumber(d) - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  local days = era * 146097 + doe - 719468
  local off = (tonumber(oh) * 3600 + tonumber(om) * 60) * (sign == "-" and -1 or 1)
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s)
    + tonumber(ms) / 1000 - off
end

-- The incidents of n that are crash loops: series of LOOP_MIN or more repeats.
local function loops(n)
  local out = {}
  for _, inc in ipairs(n.incidents or {}) do
    if (inc.repeats or 0) >= LOOP_MIN then
      out[#out + 1] = inc
    end
  end
  return out
end

local function forget(id)
  local prefix = id .. " "
  for k in pairs(shown) do
    if k:sub(1, #prefix) == prefix then
      shown[k] = nil
      nshown = nshown - 1
    end
  end
end

local function route(n)
  local id = n.monitor_id or ""
  if envelope.is_ending(n) then
    forget(id)
    return #loops(n) > 0 and "live_safe" or "idle"
  end
  if n.type ~= "output" then
    return "idle"
  end
  local now = seconds(n.at) or 0
  local new_crash, seen_again = false, 0
  for _, inc in ipairs(n.incidents or {}) do
    if not inc.summary then
      local key = id .. " " .. inc.fingerprint
      local t = shown[key]
      if t ~= nil and now - t < WINDOW and (inc.repeats or 0) == 0 then
        seen_again = seen_again + 1
      else
        if t == nil then
          if nshown >= MAX_KEYS then
            shown, nshown = {}, 0
          end
          nshown = nshown + 1
        end
        shown[key] = now
        new_crash = new_crash or inc.kind == "crash"
      end
    end
  end
  local incidents = n.incidents or {}
  if seen_again > 0 and seen_again == #incidents then
    return "drop"
  end
  if new_crash or #loops(n) > 0 then
    return "live_safe"
  end
  return "idle"
end

local function format(n)
  local body = envelope.body(n)
  local notes = {}
  for _, inc in ipairs(loops(n)) do
    notes[#notes + 1] = "note: crash loop: incident " .. math.tointeger(inc.id)
      .. " (" .. envelope.escape(inc.pattern_name or ("pattern " .. tostring(inc.pattern)))
      .. ") repeated " .. math.tointeger(inc.repeats) .. " times in "
      .. envelope.duration(inc.repeat_span_ms or 0)
  end
  if #notes == 0 then
    return body
  end
  return body .. table.concat(notes, "\n") .. "\n"
end

return { route = route, format = format }
