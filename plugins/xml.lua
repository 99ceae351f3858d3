--[[
xml: one XML element per notification, in the style of kimi-code's
<notification type="monitor_line"> (seed 004), for hosts and models that read
tagged context best.

The element's `type` attribute is "monitor_line" for output, else the
notification's own type (exit, stopped, timed_out, idle_timeout, overload,
dropped, policy_error). Its attributes carry what vigil knows (monitor_id,
label, batch, state, exit_code, signal, duration_ms, suppressed, dropped);
inside, each process line stands on a line of its own behind its
"[stdout seq=N] " prefix, and what vigil says about the lines is in child
elements on lines of their own. Every attribute value and every line's text
is XML-escaped (& < > " '), after the engine's escaping of control
characters. For the batch "a", "Error: b" of a monitor labelled web:

  <notification type="monitor_line" monitor_id="mon_2jqldwf9bv5a" label="web" batch="1">
  [stdout seq=1] a
  [stdout seq=2] Error: b
  <matched seq="2" pattern="0"/>
  <status>running</status>
  </notification>

An incident (docs/incidents.md) stands in an element of its own:

  <incident id="3" kind="crash" pattern="python-traceback">
  [stderr seq=41] Traceback (most recent call last):
  ...
  </incident>

with summary="true", repeats, repeat_span_ms and last_repeat_at for a
series of repeats, and more_lines when its trace was longer than was kept.

and for its ending:

  <notification type="exit" monitor_id="mon_2jqldwf9bv5a" label="web" state="exited" exit_code="0" duration_ms="12">
  <status>exited with code 0 after 12ms</status>
  </notification>
]]

local envelope = require "vigil.envelope"

local XML = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&apos;" }

local function xml(s)
  return (tostring(s):gsub("[&<>\"']", XML))
end

-- ' name="value"', or "" when value is nil.
local function attr(name, value)
  if value == nil then
    return ""
  end
  if type(value) == "number" then
    value = math.tointeger(value) or value
  end
  return " " .. name .. '="' .. xml(value) .. '"'
end

-- "note: 3 earlier lines ..." -> "3 earlier lines ..."
local function note_text(s)
  return (s:gsub("^note: ", ""))
end

local function format(n)
  local out = {}
  local function put(s)
    out[#out + 1] = s
  end
  local t = n.type
  local ending = envelope.is_ending(n)
  local label = n.label
  if label ~= nil then
    label = envelope.escape(label)
  end

  local open = "<notification" .. attr("type", t == "output" and "monitor_line" or t)
    .. attr("monitor_id", n.monitor_id) .. attr("label", label)
  if t == "output" then
    open = open .. attr("batch", n.batch)
  end
  if ending then
    open = open .. attr("state", n.state) .. attr("exit_code", n.exit_code)
      .. attr("signal", envelope.signal_name(n.signal)) .. attr("duration_ms", n.duration_ms)
  end
  if (n.suppressed or 0) > 0 then
    open = open .. attr("suppressed", n.suppressed)
  end
  if t == "dropped" then
    open = open .. attr("dropped", n.dropped or 0)
  end
  put(open .. ">")

  if t == "output" or ending then
    if ending then
      put("<status>" .. xml(envelope.status(n)) .. "</status>")
    end
    -- An ending's why, or a restart's (an output notification saying how
    -- the program ended and when it starts again).
    local r = envelope.reason(n)
    if r then
      put("<reason>" .. xml(r) .. "</reason>")
    end
    -- An incident's lines go inside an <incident> element, opened and
    -- closed on lines of their own.
    local open_inc = nil
    for _, l in ipairs(n.lines or {}) do
      if l.incident ~= open_inc then
        if open_inc ~= nil then
          put("</incident>")
        end
        local inc = l.incident
        if inc ~= nil then
          put("<incident" .. attr("id", inc.id) .. attr("kind", inc.kind)
            .. attr("pattern", inc.pattern_name or inc.pattern)
            .. (inc.summary and attr("summary", "true") or "")
            .. ((inc.repeats or 0) > 0 and attr("repeats", inc.repeats)
              .. attr("repeat_span_ms", inc.repeat_span_ms) .. attr("last_repeat_at", inc.last_repeat_at) or "")
            .. ((inc.truncated_lines or 0) > 0 and attr("more_lines", inc.truncated_lines) or "")
            .. ">")
        end
        open_inc = inc
      end
      local s = envelope.prefix(l) .. xml(l.text or "")
      if l.truncated then
        s = s .. " [truncated]"
      end
      put(s)
    end
    if open_inc ~= nil then
      put("</incident>")
    end
    for _, l in ipairs(n.lines or {}) do
      if l.pattern ~= nil and l.incident == nil then
        put('<matched seq="' .. math.tointeger(l.seq) .. '" pattern="' .. math.tointeger(l.pattern) .. '"/>')
      end
    end
    local note = envelope.suppressed(n)
    if note then
      put("<note>" .. xml(note_text(note)) .. "</note>")
    end
    for _, s in ipairs(envelope.incident_notes(n)) do
      put("<note>" .. xml(note_text(s)) .. "</note>")
    end
    if t == "output" then
      put("<status>" .. xml(envelope.status(n)) .. "</status>")
    end
  elseif t == "dropped" then
    put("<note>" .. xml(note_text(envelope.dropped(n))) .. "</note>")
  else
    put("<reason>" .. xml(envelope.reason(n) or "(none given)") .. "</reason>")
  end
  put("</notification>")
  return table.concat(out, "\n") .. "\n"
end

return {
  format = format,
  -- What `vigil policy test` checks (docs/policies.md section 15).
  examples = {
    { name = "a crash is one incident element, its text escaped", sample = "crash",
      must = { '<notification type="monitor_line" monitor_id="mon_sample0crash" label="api"',
               '<incident id="1" kind="crash" pattern="python-traceback">',
               "[stderr seq=6] KeyError: &apos;user_id&apos;" },
      must_not = { "KeyError: 'user_id'" } },
    { name = "an exit carries its code as an attribute", sample = "exit",
      must = { '<notification type="exit"', 'exit_code="1"',
               "<status>exited with code 1 after 1m23s</status>" } },
    { name = "withheld lines are a note", sample = "overload",
      must = { 'suppressed="18234"', "<note>18234 earlier lines were withheld" } },
  },
}
