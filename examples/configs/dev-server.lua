-- dev-server.lua: a web project's dev server and test watcher, started with
-- the engine in the session "dev", like a Procfile that knows which lines
-- matter.
--
--   vigild --config examples/configs/dev-server.lua --listen
--
-- The agent attaches with session_open {session = "dev"} and is told when
-- the server logs an error or a test fails, not about every request line.
local crash_patterns = {
  "(?i)\\b(error|exception|fatal)\\b",
  "(?i)\\bunhandled\\b",
  "EADDRINUSE",
}

return {
  monitor = {
    allowed_commands = { "npm", "node", "npx", "tail" },
    -- The server's output comes in bursts at start-up; a slightly longer
    -- window keeps one start-up in one notification.
    flush_interval_ms = 500,
    -- Long stack traces are what the agent needs to see whole.
    line_max_bytes = 16384,
    max_monitors_per_session = 4,
  },

  rate_limit = {
    -- A crash loop should be muted rather than killed: the server restarts
    -- itself and the agent can read the ring when it wants to.
    on_overload = "mute",
  },

  monitors = {
    {
      session = "dev",
      label = "dev server",
      description = "npm run dev on port 3000",
      command = "npm run dev",
      env = { PORT = "3000", NODE_ENV = "development" },
      patterns = crash_patterns,
      notify = "matches",
      persistent = true,
    },
    {
      session = "dev",
      label = "tests",
      -- Not started with the engine: `vigil up tests` starts the watcher,
      -- `vigil down tests` stops it.
      group = "tests",
      argv = { "npx", "vitest", "--watch", "--reporter=dot" },
      match_pattern = "(?i)\\b(fail|failed|failing)\\b",
      match_streams = "both",
      notify = "matches",
      -- A watcher that has printed nothing for an hour is stuck or forgotten.
      idle_timeout_ms = 3600000,
      persistent = true,
    },
    {
      session = "dev",
      label = "access log",
      command = "tail -F logs/access.log",
      -- Only 5xx responses.
      match_pattern = "\" 5\\d\\d ",
      notify = "matches",
      -- Any Lua expression works; this is the default cap, written out.
      timeout_ms = 30 * 60 * 1000,
    },
  },
}
