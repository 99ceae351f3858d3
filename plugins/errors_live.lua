--[[
errors_live: a routing example. A batch holding a crash interrupts the
agent's turn (live_safe); everything else waits for the agent to be idle.

route(n) returns "live_safe" for an output notification that carries a new
incident of kind "crash" (a matching line with its trace, docs/incidents.md;
not a repeat summary), or at least one line outside any incident (what a
monitor started with incidents = false delivers) containing "panic",
"Error:", "Traceback" or "FATAL" (case matters); and "idle" for every other
notification (a one-line message incident included), endings included. The engine delivers
live_safe only when the config sets monitor.live_mode_enabled = true; without
it every notification stays idle, whatever route says.

The text is the default envelope's (format = envelope.body). To use the same
routing with another wording, copy route into your own policy.
]]

local envelope = require "vigil.envelope"

-- Plain substrings (string.find with plain = true: no pattern magic, no cost
-- beyond a scan).
local CRASH = { "panic", "Error:", "Traceback", "FATAL" }

local function has_crash(n)
  for _, inc in ipairs(n.incidents or {}) do
    if inc.kind == "crash" and not inc.summary then
      return true
    end
  end
  -- The words, for lines outside incidents (a monitor started with
  -- incidents = false): a line of a message incident stays idle.
  for _, l in ipairs(n.lines or {}) do
    if l.incident == nil then
      local text = l.text or ""
      for _, word in ipairs(CRASH) do
        if text:find(word, 1, true) then
          return true
        end
      end
    end
  end
  return false
end

return {
  route = function(n)
    if n.type == "output" and has_crash(n) then
      return "live_safe"
    end
    return "idle"
  end,
  format = envelope.body,
  -- What `vigil policy test` checks (docs/policies.md section 15).
  examples = {
    { name = "a new crash goes live", sample = "crash", route = "live_safe",
      must = { "incident 1: crash (python-traceback)" } },
    { name = "a crash loop's summary waits", sample = "loop", route = "idle" },
    { name = "an ending waits", sample = "exit", route = "idle",
      must = { "status: exited with code 1" } },
    { name = "a FATAL line outside any incident goes live", notification = {
        type = "output", lines = { { seq = 9, stream = "stderr", text = "FATAL: disk full" } } },
      route = "live_safe", must = { "[stderr seq=9] FATAL: disk full" } },
    { name = "a warning waits", sample = "lines", route = "idle" },
  },
}
