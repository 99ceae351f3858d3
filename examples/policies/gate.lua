--[[
gate: an allow-by-shape gate. A start is allowed only when its argv has one
of the exact shapes below, with the program named by one of the absolute
paths in PROGRAMS; everything else is denied, with a reason.

  /usr/bin/make [TARGET]
      TARGET: letters, digits and _ . / -, not starting with "-", "." or
      "/", no "=": never an option (-f FILE, -C DIR, --eval) nor a variable
      (CC=...), which would make make run something else.
  /usr/bin/npm run SCRIPT  |  /usr/bin/npm test
      SCRIPT: letters, digits and _ : . -, not starting with "-"; nothing
      after it.
  /usr/bin/pytest [ARGS]  |  /usr/bin/python3 -m pytest [ARGS]
      ARGS: the flags in PYTEST_FLAGS (-q, -v, -x, -k EXPR, --tb=short, ...)
      and test paths or node ids relative to the working directory, without
      "..". Never -p (loads a plugin), --pyargs, -c, -o, --rootdir,
      --confcutdir or an absolute path: those load code or configuration
      from elsewhere.
  and extra environment only from SAFE_ENV (CI, NO_COLOR, ...): PATH,
  PYTHONPATH, PYTEST_ADDOPTS, MAKEFLAGS, npm_config_* and the like would
  change what the programs above load or run.

How it decides:
- By the exact absolute path of the program. A bare name ("make") is
  refused, because which file it names is the engine's search path's
  answer (monitor.path or the engine's PATH), which the gate does not see;
  "/tmp/x/make" and "/usr/bin/../../tmp/make" are not
  "/usr/bin/make". The paths are where Debian installs these tools: edit
  PROGRAMS to match your machine (`command -v make`).
- Never by the label, the session or anything else the caller merely says
  about the start (the label is the caller's words, not a credential).
- Never a shell command (shell = true): a shell line can do anything, and no
  word filter can tell what it will run (r''m, $(printf r)m, ${X}m, ...).

What it is NOT:
- Not a sandbox. make runs the Makefile it finds in the working directory,
  npm runs the scripts of package.json, pytest imports the test files and
  conftest.py: allowing these shapes allows whatever that code does. Keep
  monitor.workspace_roots to directories whose contents you trust, and run
  vigild as a user that may do only what you would let those builds do.
- Not a judge of names: a TARGET or SCRIPT does whatever the project defines
  under that name.
- Not a limit on time, memory or output: the engine's settings are.

Where it applies: set it as the config's gate (gate = "gate", with this
directory in plugin_paths). It then decides every start, whatever policy the
caller names, in place of monitor.allowed_commands and monitor.allow_shell
(monitor.enabled, workspace_roots, allow_persistent and the caps still apply
after it). Named by a caller as a monitor's policy instead, it can only
narrow what the config's gate (or allowlist) already allowed.

The wording of notifications is the built-in envelope's (no format here).
]]

-- The programs, by absolute path, and the shape each must have.
local PROGRAMS = {
  ["/usr/bin/make"] = "make",
  ["/usr/bin/npm"] = "npm",
  ["/usr/local/bin/npm"] = "npm",
  ["/usr/bin/pytest"] = "pytest",
  ["/usr/local/bin/pytest"] = "pytest",
  ["/usr/bin/python3"] = "python3",
}

-- pytest flags allowed on their own, and those that take the next argument
-- as their value (a pytest expression, checked against EXPR).
local PYTEST_FLAGS = {
  ["-q"] = true, ["-qq"] = true, ["-v"] = true, ["-vv"] = true, ["-x"] = true,
  ["-s"] = true, ["-l"] = true, ["-ra"] = true, ["--lf"] = true, ["--ff"] = true,
  ["--sw"] = true, ["--no-header"] = true, ["--tb=short"] = true, ["--tb=long"] = true,
  ["--tb=line"] = true, ["--tb=no"] = true, ["--tb=native"] = true,
}
local PYTEST_VALUE_FLAGS = { ["-k"] = true, ["-m"] = true }
-- A -k or -m expression: words, spaces, parentheses; no quotes, no dots.
local EXPR = "^[%w_ ()%-]+$"
-- --maxfail=N and --durations=N.
local PYTEST_NUMERIC = { "^%-%-maxfail=%d+$", "^%-%-durations=%d+$" }

-- Extra environment a start may add.
local SAFE_ENV = {
  CI = true, NO_COLOR = true, FORCE_COLOR = true, TERM = true, TZ = true, LANG = true,
}

-- Longest argument looked at; anything longer is refused.
local ARG_MAX = 256

local function word(s, pattern)
  return #s <= ARG_MAX and s:find(pattern) ~= nil
end

-- Checks make's arguments (argv[2..]); nil when fine, else the reason.
local function check_make(argv)
  if #argv > 2 then
    return "make takes at most one target"
  end
  if argv[2] and not word(argv[2], "^[%w_][%w_./%-]*$") then
    return "make's target must be a name (letters, digits, _ . / -; no option, no variable)"
  end
end

local function check_npm(argv)
  if #argv == 2 and argv[2] == "test" then
    return nil
  end
  if #argv == 3 and argv[2] == "run" and word(argv[3], "^[%w_][%w_:.%-]*$") then
    return nil
  end
  return "npm is allowed only as `npm run SCRIPT` or `npm test`"
end

-- A test path or node id: relative, no "..", no option.
local function test_path(arg)
  return word(arg, "^[%w_][%w_./:%[%]%-]*$") and not arg:find("..", 1, true)
end

-- pytest's arguments from argv[first] on.
local function check_pytest(argv, first)
  local i = first
  while i <= #argv do
    local arg = argv[i]
    if PYTEST_VALUE_FLAGS[arg] then
      local value = argv[i + 1]
      if not value or not word(value, EXPR) then
        return "pytest " .. arg .. " takes an expression of words, spaces and parentheses"
      end
      i = i + 2
    else
      local numeric = false
      for _, pattern in ipairs(PYTEST_NUMERIC) do
        numeric = numeric or word(arg, pattern)
      end
      if not (PYTEST_FLAGS[arg] or numeric or test_path(arg)) then
        return "pytest's argument " .. string.format("%q", arg:sub(1, 64))
          .. " is neither an allowed flag nor a relative test path (no -p, --pyargs, -c, -o,"
          .. " --rootdir, absolute paths or ..)"
      end
      i = i + 1
    end
  end
end

local function check_python3(argv)
  if argv[2] ~= "-m" or argv[3] ~= "pytest" then
    return "python3 is allowed only as `python3 -m pytest ...`"
  end
  return check_pytest(argv, 4)
end

local CHECKS = {
  make = check_make,
  npm = check_npm,
  pytest = function(argv) return check_pytest(argv, 2) end,
  python3 = check_python3,
}

local function gate(req)
  if req.shell then
    return false, "shell commands are never allowed by the gate policy (a shell line can run "
      .. "anything); give the exact argv"
  end
  local program = req.argv[1] or ""
  if program:sub(1, 1) ~= "/" then
    return false, string.format("%q", program:sub(1, 64)) .. " is not an absolute path; the gate"
      .. " policy allows programs only by their absolute path (/usr/bin/make, ...)"
  end
  local shape = PROGRAMS[program]
  if not shape then
    return false, string.format("%q", program:sub(1, 64)) .. " is not a program the gate policy"
      .. " allows"
  end
  for name in pairs(req.env) do
    if not SAFE_ENV[name] then
      return false, "the gate policy allows no env " .. string.format("%q", name:sub(1, 64))
        .. " (only CI, NO_COLOR, FORCE_COLOR, TERM, TZ, LANG)"
    end
  end
  local why = CHECKS[shape](req.argv)
  if why then
    return false, why
  end
  return true
end

return { gate = gate }
