-- vigil.lua: the default configuration of the vigil engine.
--
-- This file is Lua 5.4, evaluated once in the same sandbox as the policies:
-- string, table, math and utf8 are there; io, os, require, dofile and print
-- are not, and the file has a budget of 10 million instructions and 16 MiB.
-- It must return one table. Every key is checked: a key the engine does not
-- know is refused ("monitor.flush_intervall_ms: unknown field"), and so is a
-- value out of bounds, naming the field, the bound and the value:
--
--   config/vigil.lua: monitor.max_monitors_per_session must be 1..16, got 40
--
-- Check a file without starting the engine:  vigild --check-config FILE
-- Reload a running engine:                    kill -HUP <pid> (or config_reload)
--
-- Every setting below is written out with its default value, so this file
-- configures exactly what the engine does without any file, except for the
-- allowlist. The comment after each one gives its bounds. Integers may be
-- written as 30000 or 3e4 but not 1.5. A setting you delete falls back to
-- the same default; docs/settings.md is the same table, generated.

return {
  monitor = {
    -- Whether monitor_start (and the `monitors` below) may start anything.
    -- false answers every start with `disabled`.
    enabled = true,

    -- Whether a monitor may ask for mode = "live_safe" (notifications that
    -- may interrupt a turn). When false, such a monitor starts as "idle" and
    -- the start result carries a note.
    live_mode_enabled = false,

    -- The programs that may run: the allowlist compares argv[0] with each
    -- entry exactly. A bare name ("make") allows that name looked up through
    -- PATH, never "/usr/bin/make" or "./make"; an entry with a slash allows
    -- exactly that path. An empty list denies every start (fail closed),
    -- which is what the engine does with no config file at all.
    --
    -- This list is the one difference from the built-in defaults: a small
    -- set of build and test tools for trying vigil out. No shell is on it
    -- (sh, bash, ...): a shell would run anything, so shell commands are
    -- governed by allow_shell instead.
    allowed_commands = {
      "python3", "tail", "make", "npm", "node", "cargo", "go", "pytest",
    },

    -- Whether a start may ask for shell = true (/bin/sh -c COMMAND). The
    -- allowlist cannot judge a shell command, so this is all or nothing.
    allow_shell = false,

    -- Whether a start may ask for persistent = true (no runtime cap).
    allow_persistent = true,

    -- Directories a monitor's cwd must lie in (absolute paths of existing
    -- directories, resolved once at load). Empty: any cwd.
    --   workspace_roots = { "/home/me/projects" },
    workspace_roots = {},

    -- Longest line kept; the rest of a longer line is discarded and counted.
    line_max_bytes = 8192,               -- 256..1048576 bytes
    -- Raw bytes kept per stream (the last ones) for monitor_logs.
    capture_max_bytes = 1048576,         -- 4096..1073741824 bytes
    -- Lines kept per monitor for monitor_output.
    ring_max_lines = 1000,               -- 1..1000000 lines
    -- Text bytes kept per monitor for monitor_output.
    -- At least line_max_bytes.
    ring_max_bytes = 1048576,            -- 4096..1073741824 bytes
    -- Patterns per monitor.
    max_patterns = 32,                   -- 1..32 patterns
    -- Longest pattern source.
    pattern_max_length = 512,            -- 1..65536 bytes
    -- PCRE2 match limit per line; a line over it is a counted match error.
    match_limit = 1000000,               -- 1000..100000000 steps
    -- PCRE2 backtracking depth limit per line.
    depth_limit = 10000,                 -- 100..10000000 frames
    -- A batch is delivered this long after its first line.
    flush_interval_ms = 200,             -- 10..60000 ms
    -- A batch is delivered early at this many lines.
    batch_max_lines = 50,                -- 1..10000 lines
    -- A batch is delivered early at this many text bytes.
    batch_max_bytes = 16384,             -- 1024..1048576 bytes
    -- Runtime cap of a monitor that gives no timeout_ms (30 minutes).
    max_runtime_ms = 1800000,            -- 1000..604800000 ms
    -- Time between the stop signal and SIGKILL to the process group.
    kill_grace_ms = 2000,                -- 0..600000 ms
    -- After the child exits, how long to keep reading pipes a grandchild
    -- holds open.
    exit_drain_ms = 1000,                -- 0..60000 ms
    -- Processes and threads a monitor may have at once; 0: no limit. Enforced
    -- with the cgroup pids.max where vigil has a cgroup (see api_info's
    -- containment); without one with RLIMIT_NPROC, which counts every
    -- process of the user and does not bind root.
    max_processes = 4096,                -- 0..4194304 processes
    -- Events kept per monitor; the oldest ~10% go at once when full.
    event_log_max = 1024,                -- 16..1000000 events
    -- Last lines carried by an ending notification.
    exit_lines = 10,                     -- 0..1000 lines
    -- Running monitors per session (ended ones free their slot).
    max_monitors_per_session = 3,        -- 1..16 monitors
    -- Running monitors in the whole engine.
    max_monitors = 1000,                 -- 1..100000 monitors
    -- Ended monitors a session keeps for list/status/output; the oldest go
    -- first.
    max_ended_monitors = 64,             -- 0..10000 monitors
  },

  rate_limit = {
    -- Output notifications per monitor in any window.
    max_notifications = 8,               -- 1..1000 notifications
    -- The rate limit's sliding window.
    window_ms = 10000,                   -- 1000..3600000 ms
    -- Withholding this long with no clean window is sustained overload.
    -- At least window_ms.
    overload_ms = 45000,                 -- 1000..86400000 ms
    -- On sustained overload, "stop" the process group or "mute" its output.
    on_overload = "stop",                -- "stop" | "mute"
  },

  session = {
    -- Notifications a session holds (waiting, and kept for resume).
    queue_max = 256,                     -- 1..100000 notifications
    -- How long a named session outlives its last connection.
    linger_ms = 300000,                  -- 0..86400000 ms
    -- The longest linger a client may ask for in session_open (7 days).
    max_linger_ms = 604800000,           -- 0..2592000000 ms
    -- Named sessions in the whole engine (a connection's own one does not
    -- count).
    max_sessions = 1024,                 -- 1..100000 sessions
  },

  rpc = {
    -- Largest msgpack-rpc message accepted; a larger one closes the
    -- connection.
    max_message_bytes = 1048576,         -- 1024..67108864 bytes
    -- Bytes waiting to be written to one connection before it is closed as
    -- too slow.
    max_output_bytes = 16777216,         -- 65536..1073741824 bytes
    -- Slow requests (monitor_wait, process_run) one connection may have
    -- waiting.
    max_pending = 64,                    -- 1..10000 requests
    -- Connections at once; one more is closed at once, logged and counted.
    max_connections = 256,               -- 1..65536 connections
  },

  -- The policy that formats and routes notifications when a monitor names
  -- none: "envelope" is the built-in untrusted-observation envelope.
  policy = "envelope",

  -- Extra directories to look in for policy plugins, besides the bundled
  -- plugins/ (non-empty strings).
  --   plugin_paths = { "/home/me/.config/vigil/plugins" },

  -- Monitors started with the engine, each in the session it names (created
  -- if needed), like a Procfile. Each takes the arguments of monitor_start
  -- (PROTOCOL.md section 4) and goes through the same gate: the allowlist,
  -- allow_shell, workspace_roots, the per-session cap. Fields:
  --   session          required, non-empty string
  --   command | argv   exactly one: a command line split like a shell splits
  --                    words (no shell; | & ; < > $( ` refused), or the exact
  --                    argv as an array of strings
  --   shell            run command with /bin/sh -c (needs allow_shell)
  --   label, description, cwd
  --   env              { NAME = "value", ... } added to the environment
  --   patterns         array of PCRE2 patterns (at most max_patterns, each at
  --                    most pattern_max_length bytes); first match wins
  --   match_pattern    one pattern; the same as patterns = { it }
  --   match_streams    "both" | "stdout" | "stderr"
  --   notify           "auto" | "matches" | "lines" | "exit" | "none"
  --   mode             "idle" | "live_safe"
  --   policy           the policy for this monitor's notifications
  --   timeout_ms       runtime cap, 1..max_runtime_ms
  --   persistent       no runtime cap (needs allow_persistent)
  --   idle_timeout_ms  stop after this long without output, 0..3600000
  --
  -- Example:
  --   monitors = {
  --     {
  --       session = "dev",
  --       label = "api server",
  --       command = "npm run dev",
  --       cwd = "/home/me/projects/api",
  --       env = { PORT = "3000" },
  --       patterns = { "(?i)\\berror\\b", "listening on" },
  --       notify = "matches",
  --       persistent = true,
  --     },
  --   },
  monitors = {},
}
