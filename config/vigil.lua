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
--
-- A setting in ms may also be a duration, written as a string: a number
-- directly followed by its unit (ms, s, m, h, d), several largest first:
--   unattended_ms = "15m",  linger_ms = "1m30s",  flush_interval_ms = "1.5s"
-- and a setting in bytes a size: "64KiB", "16MiB", "1GiB" (B, KiB, MiB,
-- GiB: powers of 1024). The value must be whole milliseconds or bytes; a
-- string without a unit ("900") is refused, since a plain number already
-- means ms or bytes. The monitors below take the same for timeout_ms,
-- idle_timeout_ms and memory_limit.

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

    -- Whether a child's stdout is line-buffered unless its start says
    -- otherwise (line_buffered = false). A program without a terminal
    -- block-buffers its stdout, so a dev server's lines would arrive only
    -- when a buffer fills or it exits. true gives every child
    -- PYTHONUNBUFFERED=1 and, where coreutils' libstdbuf is installed (the
    -- engine logs which at start), preloads it with _STDBUF_O=L, as
    -- `stdbuf -oL` does; stderr is left as the program has it. A start's
    -- env wins over these, and env_deny still applies to its own LD_PRELOAD.
    line_buffered = true,

    -- Directories a monitor's cwd must lie in (absolute paths of existing
    -- directories, resolved once at load). Empty: any cwd. The cwd is
    -- opened once and judged by where it really is; the child runs in that
    -- opened directory, so a symlink changed meanwhile cannot move it out.
    --   workspace_roots = { "/home/me/projects" },
    workspace_roots = {},

    -- Where a bare program name ("make") is looked up: absolute
    -- directories separated by ":" (an empty or relative entry is
    -- refused). Unset: the engine's own PATH, its relative and empty
    -- entries ignored, or /usr/local/bin:/usr/bin:/bin when it has none.
    -- A PATH in a start's env reaches the program but never chooses it.
    --   path = "/usr/local/bin:/usr/bin:/bin",

    -- Environment variables a start's env may not set: names, or PREFIX*
    -- for every name that starts with PREFIX, compared without regard to
    -- case (npm reads NPM_CONFIG_X and Npm_Config_X alike). Each lets the
    -- caller, not the allowlisted program, choose code that runs as the
    -- engine's user: a loader or interpreter start-up hook (a preloaded
    -- library, a sourced script, a module imported first), a program the
    -- child runs by name or by variable (PATH finds the interpreter of a
    -- `#!/usr/bin/env node` script; EDITOR, CC, GIT_SSH_COMMAND), or a place
    -- it reads such code or names from (HOME's ~/.gitconfig and ~/.npmrc, a
    -- tool's settings: npm_config_*, CARGO_*, GOFLAGS). core/proc/childenv.c
    -- says why each entry is here. A refused name is `denied` and nothing
    -- starts. The child keeps the engine's own PATH and HOME (env_inherit).
    -- Setting this list replaces it whole; a tool allowed below whose
    -- variables are not here (uv, poetry, bun, docker, kubectl, aws ...)
    -- needs its own added.
    env_deny = {
      "LD_*", "DYLD_*", "GCONV_PATH", "GLIBC_TUNABLES", "OPENSSL_CONF",
      "OPENSSL_ENGINES", "OPENSSL_MODULES", "TERMINFO", "TERMINFO_DIRS", "BASH_ENV",
      "ENV", "BASH_FUNC_*", "SHELLOPTS", "BASHOPTS", "PS4", "CDPATH", "ZDOTDIR",
      "PATH", "SHELL", "EDITOR", "VISUAL", "SUDO_EDITOR", "PAGER", "MANPAGER",
      "LESS*", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS", "PYTHON", "HOME", "XDG_*",
      "GIT_*", "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE",
      "npm_config_*", "YARN_*", "PNPM_*", "COREPACK_*", "PYTHONSTARTUP", "PYTHONPATH",
      "PYTHONHOME", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "PYTHONEXECUTABLE",
      "PYTHONBREAKPOINT", "PIP_*", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYENV_*",
      "MAKE*", "MFLAGS", "GNUMAKEFLAGS", "AR", "AS", "CC", "CXX", "CPP", "FC", "LD",
      "NM", "RANLIB", "STRIP", "OBJCOPY", "OBJDUMP", "M4", "LEX", "YACC", "RM", "PC",
      "CO", "GET", "LINT", "MAKEINFO", "TEX", "TEXI2DVI", "WEAVE", "CWEAVE", "TANGLE",
      "CTANGLE", "M2C", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LDLIBS",
      "FFLAGS", "ASFLAGS", "ARFLAGS", "LFLAGS", "YFLAGS", "PFLAGS", "RFLAGS",
      "GFLAGS", "COFLAGS", "LINTFLAGS", "GCC_EXEC_PREFIX", "COMPILER_PATH",
      "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
      "OBJC_INCLUDE_PATH", "PKG_CONFIG*", "CCACHE_*", "CMAKE_*", "CARGO", "CARGO_*",
      "RUSTC*", "RUSTDOC*", "RUSTFLAGS", "RUSTUP_*", "GOFLAGS", "GOROOT",
      "GOTOOLCHAIN", "GOENV", "GOPATH", "GOMODCACHE", "GOCACHE", "GOPROXY", "GOSUMDB",
      "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOVCS", "GOWORK", "GOBIN",
      "CGO_*", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "GEM_HOME",
      "GEM_PATH", "BUNDLE_*", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS",
      "_JAVA_OPTIONS", "JAVA_OPTS", "JAVA_HOME", "CLASSPATH", "MAVEN_OPTS",
      "MAVEN_ARGS", "GRADLE_OPTS", "GRADLE_USER_HOME", "SSL_CERT_FILE",
      "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
      "NODE_TLS_REJECT_UNAUTHORIZED",
    },
    -- Names exempted from env_deny, for a deployment that needs one (e.g.
    -- "PYTHONPATH" for a trusted test runner). The default: names of denied
    -- families that choose nothing that runs (git's author and committer,
    -- cargo's output style). Setting this list replaces it whole: keep
    -- those you want.
    env_allow = {
      "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
      "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT",
      "CARGO_TERM_*", "CARGO_INCREMENTAL", "CARGO_BUILD_JOBS", "CGO_ENABLED",
      "CMAKE_BUILD_PARALLEL_LEVEL",
    },
    -- What a child inherits of the engine's own environment (names or
    -- PREFIX*); a start's env comes on top. Everything else the engine
    -- holds (an API key, a token) stays with the engine. { "*" } passes
    -- everything.
    env_inherit = { "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_*", "TERM", "TZ", "TMPDIR" },

    -- Longest line kept; the rest of a longer line is discarded and counted.
    line_max_bytes = 8192,               -- 256..1048576 bytes
    -- Raw bytes kept per stream (the last ones) for monitor_logs.
    capture_max_bytes = 1048576,         -- 1024..1073741824 bytes
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
    max_monitors_per_session = 16,       -- 1..16 monitors
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

  -- The signal stage: incidents, not lines (docs/incidents.md).
  incident = {
    -- An open incident (a header and its trace) closes after this long
    -- without a line.
    quiet_ms = 150,                      -- 10..10000 ms
    -- An incident still growing this long after its first line closes as
    -- it stands (a trace that never ends cannot hold its notification).
    max_open_ms = 2000,                  -- 100..60000 ms
    -- Lines and text bytes kept per incident; the rest of a trace is counted.
    max_lines = 60,                      -- 1..1000 lines
    max_bytes = 8192,                    -- 256..1048576 bytes
    -- An incident whose fingerprint was notified this recently is counted
    -- as a repeat, not notified again; 0: off.
    coalesce_ms = 300000,                -- 0..86400000 ms
    -- A series of repeats is summarised this long after its last repeat.
    summary_after_ms = 10000,            -- 100..3600000 ms
    -- Fingerprints remembered per monitor; incidents kept for
    -- monitor_output {incident}.
    fingerprints_max = 256,              -- 1..100000 fingerprints
    history_max = 256,                   -- 1..100000 incidents
    -- Fingerprints a session may ignore (incident_ignore, vigil ignore).
    ignore_max = 256,                    -- 1..4096 fingerprints
  },

  envelope = {
    -- The built-in frame: "readable" or "compact" (the same guarantees in
    -- fewer bytes). A monitor may choose its own with `envelope`.
    style = "readable",                  -- "readable" | "compact"
  },

  -- The keeper: a small process of vigil's own that is the parent of each
  -- monitored process when the engine has a state directory, so that it
  -- outlives the engine (docs/restart.md).
  keeper = {
    -- How long a monitored process may run while no engine is attached
    -- before its keeper stops it (SIGTERM, then SIGKILL after
    -- monitor.kill_grace_ms). 15 minutes.
    unattended_ms = 900000,              -- 1000..604800000 ms
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
    -- Named model cursors per session (cursor_take, cursor_advance: what
    -- the model has been given). A reload applies to cursors made after it.
    max_cursors = 16,                    -- 1..256 cursors
  },

  -- The engine's log (stderr). Logging never makes the engine wait: lines
  -- go through a buffer that a thread of their own writes out, and when
  -- stderr is not read fast enough the lines that do not fit are dropped,
  -- counted (api_info counters.log_lines_dropped) and reported by one
  -- "N log lines dropped" line once there is room again.
  log = {
    -- Log lines waiting for stderr.
    buffer_bytes = 1048576,              -- 16384..67108864 bytes
    -- vigil.log lines one policy may write per second, and per call of
    -- format, route or gate (or while its file loads); the rest are
    -- dropped, counted (counters.policy_log_lines_dropped) and summed up in
    -- one line at most every 10 s per policy.
    policy_lines_per_s = 100,            -- 1..100000 lines
    policy_lines_per_call = 20,          -- 1..10000 lines
  },

  rpc = {
    -- Largest msgpack-rpc message accepted (process_run's stdin included);
    -- a larger one is skipped unread and answered limit_exceeded, then a
    -- socket connection is closed (a --stdio one goes on).
    max_message_bytes = 1048576,         -- 1024..67108864 bytes
    -- Bytes waiting to be written to one connection: past it, notifications
    -- wait in their session (sent as the host reads) and the connection's
    -- calls wait for it to read their answers.
    max_output_bytes = 16777216,         -- 65536..1073741824 bytes
    -- A connection whose output waits past max_output_bytes and that reads
    -- none of it for this long has stopped reading, and is closed.
    output_stall_ms = 60000,             -- 1000..3600000 ms
    -- Slow requests (monitor_wait, process_run) one connection may have
    -- waiting.
    max_pending = 64,                    -- 1..10000 requests
    -- Connections at once; one more is closed at once, logged and counted.
    max_connections = 256,               -- 1..65536 connections
  },

  -- The engine's state directory (docs/restart.md): private (0700, never
  -- a link, no access for group or others), locked so that two engines
  -- never share one. Unset: "state" beside the socket, none with --stdio.
  -- An absolute path. vigild's --state-dir and --no-state override it, and
  -- a reload does not move it (the change is logged; it applies at the
  -- next start).
  state = {
    -- dir = "/home/me/.local/state/vigil",
    -- How long a named session's journal may grow before it is rewritten
    -- as what the session holds (or twice that rewrite's size, if more).
    journal_max_bytes = 16777216,        -- 1048576..1073741824 bytes
  },

  -- A fleet (docs/fleet.md): with a url, every named session's notifications
  -- are also published into NATS JetStream, for gateways on other machines.
  -- Read at start only; vigild --nats URL and --nats-engine NAME override.
  nats = {
    -- url = "nats://127.0.0.1:4222",
    -- creds = "/etc/vigil/engine.creds",
    -- TLS (a tls:// url, or any of these, turns it on): the CA that signed
    -- the server's certificate when it is not one the system trusts, and
    -- for a server that asks for client certificates (verify: true) this
    -- engine's certificate and its key, the two together. Absolute paths,
    -- PEM; a file that cannot be loaded stops the start, naming it.
    -- tls_ca = "/etc/vigil/nats-ca.pem",
    -- tls_cert = "/etc/vigil/engine-cert.pem",
    -- tls_key = "/etc/vigil/engine-key.pem",
    -- stream = "VIGIL",
    -- engine = "build-host-1",       -- default: the host name
    connect_timeout_ms = 2000,           -- 100..60000 ms
    ack_timeout_ms = 5000,               -- 100..600000 ms
    -- A session's notifications sent and not acknowledged yet, at most.
    max_in_flight = 32,                  -- 1..1024 notifications
    retry_min_ms = 100,                  -- 10..60000 ms
    retry_max_ms = 10000,                -- 100..3600000 ms
    -- The stream's limits, when the engine creates it.
    max_age_ms = 604800000,              -- 60000..31536000000 ms
    max_bytes = 1073741824,              -- 1048576..1099511627776 bytes
    duplicate_window_ms = 120000,        -- 1000..86400000 ms
    -- Requests over NATS (vigil.<engine>.rpc, docs/fleet.md section 6): each
    -- requester has a virtual connection, closed when idle this long.
    max_clients = 128,                   -- 1..4096 connections
    client_idle_ms = 60000,              -- 1000..86400000 ms
  },

  -- The policy that formats and routes notifications when a monitor names
  -- none: "envelope" is the built-in untrusted-observation envelope.
  policy = "envelope",

  -- The policy whose gate(req) decides every start, whatever policy the
  -- caller names (docs/policies.md section 7). Its true allows a start in
  -- place of monitor.allowed_commands and allow_shell (so it may allow
  -- more), its false denies; enabled, workspace_roots, allow_persistent and
  -- the caps still apply after it. It must name a policy with a gate
  -- function. Without it, the gate of `policy` above decides, and without
  -- one there (envelope has none) the allowlist and allow_shell do. A
  -- policy a caller names may add its own gate, which can only deny.
  --   gate = "gate",   -- examples/policies/gate.lua: allow by argv shape

  -- Extra directories to look in for policy plugins, besides the bundled
  -- plugins/ (non-empty strings).
  --   plugin_paths = { "/home/me/.config/vigil/plugins" },

  -- Monitors started with the engine, each in the session it names (created
  -- if needed), like a Procfile; those with a group start with their group
  -- instead (`vigil up GROUP`, `vigil down GROUP`). Each takes the arguments of monitor_start
  -- (docs/protocol.md section 5) and goes through the same gate: the allowlist,
  -- allow_shell, workspace_roots, env_deny, the per-session cap.
  -- vigild --check-config runs every one of those checks (patterns
  -- compiled, program looked up, cwd opened) without starting anything.
  -- Fields:
  --   session          required, non-empty string
  --   command | argv   exactly one: a command line split like a shell splits
  --                    words (no shell; | & ; < > $( ` refused), or the exact
  --                    argv as an array of strings
  --   shell            run command with /bin/sh -c (needs allow_shell)
  --   label, description, cwd
  --   env              { NAME = "value", ... } added to the environment
  --                    (checked against env_deny / env_allow)
  --   line_buffered    false: leave the child's stdout as it buffers
  --                    (default: monitor.line_buffered above)
  --   patterns         array of PCRE2 patterns (at most max_patterns, each at
  --                    most pattern_max_length bytes); first match wins
  --   match_pattern    one pattern; the same as patterns = { it }
  --   match_streams    "both" | "stdout" | "stderr"
  --   notify           "auto" | "matches" | "lines" | "exit" | "none"
  --   mode             "idle" | "live_safe"
  --   policy           the policy for this monitor's notifications
  --   timeout_ms       runtime cap, 1..max_runtime_ms ("90s" as well)
  --   persistent       no runtime cap (needs allow_persistent)
  --   idle_timeout_ms  stop after this long without output, 0..3600000
  --   quiet_after_ms   tell once after this long without a line (never stops
  --                    it), and again when it prints: 0, or 100..86400000
  --   memory_limit     bytes, at least 1 MiB ("512MiB" as well)
  --   cpu_limit        cores, e.g. 0.5
  --   group            a name (1..64 of A-Z a-z 0-9 . _ -): not started at
  --                    boot but by `vigil up GROUP` (group_up), stopped by
  --                    `vigil down GROUP`; needs a label, unique in the group
  --   autostart        with group: start at boot as well (default false)
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
  --     -- Not started at boot: `vigil up workers` starts both, `vigil down
  --     -- workers` stops them.
  --     { session = "dev", group = "workers", label = "queue", command = "npm run queue" },
  --     { session = "dev", group = "workers", label = "mailer", command = "npm run mailer" },
  --   },
  monitors = {},
}
