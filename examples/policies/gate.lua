--[[
gate: decides which commands may start, for monitors that use this policy.

- Never: rm, dd, shred, mkfs and mkfs.* (by program name, wherever they are
  installed), nor a shell command line that mentions them as a word.
- Shell commands (shell = true): only for monitors labelled "deploy", since a
  shell line can do anything; every other label is told why not.
- Anything else: only the programs in ALLOW below.

What a gate's answer means to the engine: false (with a reason) denies the
start, and the reason reaches the caller in the `denied` error. true allows it
in place of the config's allowed_commands and allow_shell, which is why this
file keeps its own ALLOW list: a gate that said true to everything would let
any program run. true cannot re-enable what the config turned off elsewhere
(persistent monitors, workspace_roots, the per-session cap, ...).

The wording of notifications is the built-in envelope's (no format here).
]]

local SHELL_LABEL = "deploy"

local ALLOW = {
  npm = true, node = true, pnpm = true, yarn = true,
  python3 = true, pytest = true, cargo = true, go = true, make = true,
  tail = true, echo = true, printf = true, sleep = true, cat = true,
}

-- Programs refused whatever else is said.
local DENY = { rm = true, dd = true, shred = true, mkfs = true }

local function basename(path)
  return (path or ""):match("([^/]*)$")
end

local function denied_program(prog)
  return DENY[prog] or prog:find("^mkfs%.") ~= nil
end

-- A dangerous word in a shell command line: "rm", "dd", "mkfs", "mkfs.ext4",
-- "/bin/rm", each standing as a word of its own.
local function dangerous_words(line)
  for word in line:gmatch("[%w%._/%-]+") do
    if denied_program(basename(word)) then
      return basename(word)
    end
  end
  return nil
end

local function gate(req)
  local prog = basename(req.program)
  if denied_program(prog) then
    return false, prog .. " is never allowed by the gate policy"
  end
  if req.shell then
    if req.label ~= SHELL_LABEL then
      return false, "shell commands are allowed only for the monitor labelled \"" .. SHELL_LABEL .. "\""
    end
    local bad = dangerous_words(req.argv[3] or "")
    if bad then
      return false, "the shell command mentions " .. bad .. ", which the gate policy never allows"
    end
    return true
  end
  if ALLOW[prog] then
    return true
  end
  return false, prog .. " is not in the gate policy's ALLOW list"
end

return { gate = gate }
