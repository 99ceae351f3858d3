--[[
crashloop: tell the agent about the first crash of a crash loop at once, and
coalesce the repeats.

A dev server under a supervisor (nodemon, `while true; do ./server; done`,
systemd-style restarts) that crashes on start crashes again every second or
two. The first crash is worth interrupting the agent's turn for; the next
fifty are the same news. This policy:

- routes an output batch holding a crash line (panic, Error:, Traceback,
  FATAL, Segmentation fault) "live_safe" when it is the first crash of that
  monitor in WINDOW seconds, and "drop" for the repeats inside the window
  (a dropped notification is counted in the monitor's counters as
  policy_dropped, and its lines stay in monitor_output);
- lets the next crash after the window through live again, saying how many
  repeats it coalesced;
- never drops an ending (the engine would refuse anyway): an ending after a
  crash goes live_safe, a clean one idle, and its text says how many crash
  batches were coalesced since the last one shown;
- routes every other batch "idle".

The text is the default envelope's, plus a "note:" line when repeats were
coalesced:

  monitor: api (mon_2jqldwf9bv5a)
  event: output batch 9
  [stderr seq=212] Error: listen EADDRINUSE: address already in use :::3000
  matched: seq=212 (pattern 0)
  status: running
  note: 14 repeated crash batches were dropped in the last 60s (crash loop)

State lives in a local table keyed by monitor_id. It survives between calls
(each policy has one Lua state for the engine's life, until a reload), is
cleared for a monitor at its ending, and is bounded (MAX_MONITORS).
live_safe reaches the agent early only when the config sets
monitor.live_mode_enabled = true; otherwise everything is idle and only the
coalescing applies.
]]

local envelope = require "vigil.envelope"

local WINDOW = 60          -- seconds a crash keeps its repeats coalesced
local MAX_MONITORS = 1024  -- monitors tracked at once, a bound on memory

local CRASH = { "panic", "Error:", "Traceback", "FATAL", "Segmentation fault" }

local state = {}           -- monitor_id -> { since = time of the last crash shown, dropped = n }
local tracked = 0
local notes = {}           -- monitor_id -> the note for the notification being formatted

-- Seconds since the epoch of an RFC 3339 time as vigil writes it
-- ("2026-11-21T06:41:42.980+00:00", as in n.at and vigil.time()); nil for
-- anything else. The sandbox has no os.time, and the notification's own
-- time is the one that matters anyway.
local function seconds(at)
  local y, mo, d, h, mi, s, ms, sign, oh, om =
    tostring(at):match("^(%d+)-(%d%d)-(%d%d)T(%d%d):(%d%d):(%d%d)%.?(%d*)([+-])(%d%d):(%d%d)$")
  if y == nil then
    return nil
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  -- days since 1970-01-01 (proleptic Gregorian)
  if mo <= 2 then
    y = y - 1
  end
  local era = y // 400
  local yoe = y - era * 400
  local doy = (153 * (mo > 2 and mo - 3 or mo + 9) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  local days = era * 146097 + doe - 719468
  local offset = (tonumber(oh) * 3600 + tonumber(om) * 60) * (sign == "-" and -1 or 1)
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s)
    + (ms ~= "" and tonumber("0." .. ms) or 0) - offset
end

local function has_crash(n)
  for _, l in ipairs(n.lines or {}) do
    local text = l.text or ""
    for _, word in ipairs(CRASH) do
      if text:find(word, 1, true) then
        return true
      end
    end
  end
  return false
end

-- "1 repeated crash batch was", "3 repeated crash batches were"
local function batches(k)
  return k == 1 and "1 repeated crash batch was" or (k .. " repeated crash batches were")
end

local function forget(id)
  if state[id] then
    state[id] = nil
    tracked = tracked - 1
  end
end

local function route(n)
  local id = n.monitor_id or ""
  if envelope.is_ending(n) then
    local st = state[id]
    if st and st.dropped > 0 then
      notes[id] = "note: " .. batches(st.dropped) .. " dropped since the last one shown (crash loop)"
    end
    forget(id)
    local crashed = (n.exit_code ~= nil and n.exit_code ~= 0) or n.signal ~= nil
    return crashed and "live_safe" or "idle"
  end
  if n.type ~= "output" or not has_crash(n) then
    return "idle"
  end
  local t = seconds(n.at)
  if t == nil then
    return "live_safe" -- no usable time: never drop what cannot be timed
  end
  local st = state[id]
  if st and t - st.since < WINDOW then
    st.dropped = st.dropped + 1
    return "drop"
  end
  if st == nil then
    if tracked >= MAX_MONITORS then
      state, tracked = {}, 0
    end
    st = { dropped = 0 }
    state[id] = st
    tracked = tracked + 1
  end
  if st.dropped > 0 then
    notes[id] = "note: " .. batches(st.dropped) .. " dropped in the last "
      .. math.floor(t - st.since) .. "s (crash loop)"
  end
  st.since, st.dropped = t, 0
  return "live_safe"
end

local function format(n)
  local id = n.monitor_id or ""
  local body = envelope.body(n)
  local note = notes[id]
  if note then
    notes[id] = nil
    body = body .. note .. "\n"
  end
  return body
end

return { route = route, format = format }
