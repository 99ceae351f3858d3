"""`vigil setup HARNESS` (issue 23, item 4) on a private HOME and project:
for each harness, into existing config files holding other keys (and
comments, for TOML and YAML), checked with a real parser of each format
(json, tomllib, PyYAML): every other key survives, vigil's entries are what
the harness reads, a second run changes nothing, --dry-run writes nothing
and prints a diff that `patch` turns into the very result, --remove gives
back the original bytes, and a file that does not parse (or that setup
cannot edit with certainty) is refused with nothing written anywhere.
Then the project-aware allowlist on small sample projects, the config it
offers to write, the default scope, and the safety of the files it
touches (links kept, unsafe directories refused)."""

import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "functional"))
from vigiltest import BUILD, VIGIL, VIGILD, run_plain_tests

HARNESS_BIN = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "harness",
                                            "node_modules", ".bin"))
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class Box:
    """A private HOME and a project (a repository) in tmp."""

    def __init__(self, tmp, vigil=os.path.realpath(VIGIL)):
        self.tmp = os.path.realpath(tmp)
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(self.home)
        os.makedirs(os.path.join(self.proj, ".git"))
        self.vigil = vigil

    def env(self, path=SYSTEM_PATH, **extra):
        env = {"HOME": self.home, "PATH": path, "LANG": "C.UTF-8",
               # No engine answers here: setup's last step only says which
               # config a running engine uses.
               "VIGIL_SOCKET": os.path.join(self.tmp, "no-engine.sock")}
        for k in ("VIGIL_TEST_RUN", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        env.update(extra)
        return env

    def setup(self, *args, cwd=None, ok=True, path=SYSTEM_PATH, env=None, stdin=None, pre=()):
        p = subprocess.run([self.vigil] + list(pre) + ["setup"] + list(args), cwd=cwd or self.proj,
                           env=env or self.env(path), capture_output=True, text=True,
                           timeout=180, stdin=stdin or subprocess.DEVNULL)
        if ok is not None:
            assert (p.returncode == 0) == ok, "vigil setup %s: status %d\n%s\n%s" % (
                " ".join(args), p.returncode, p.stdout, p.stderr)
        return p

    def write(self, rel, text):
        path = os.path.join(self.tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def snapshot(self):
        """Every file under tmp (but .git and Codex's own state), path -> bytes."""
        out = {}
        for d, dirs, files in os.walk(self.tmp):
            dirs[:] = [x for x in dirs if x != ".git"]
            for name in files:
                p = os.path.join(d, name)
                rel = os.path.relpath(p, self.tmp)
                if ".codex/" in rel and not rel.endswith((".toml", ".json")):
                    continue
                with open(p, "rb") as f:
                    out[rel] = f.read()
        return out


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".toml"):
        return tomllib.loads(data.decode())
    if path.endswith(".yaml"):
        return yaml.safe_load(data)
    return json.loads(data)


def hook(box, harness, event):
    return "%s hook %s %s" % (box.vigil, harness, event)


def commands(groups):
    """The commands of a grouped hooks.EVENT list."""
    return [h["command"] for g in groups for h in g["hooks"]]


def assert_dry_run_then_apply(box, *args, path=SYSTEM_PATH, pre=()):
    """--dry-run writes nothing; its diff, applied with patch to a copy,
    gives what the real run writes. Returns the real run."""
    before = box.snapshot()
    dry = box.setup(*args, "--dry-run", path=path, pre=pre)
    assert box.snapshot() == before, "--dry-run wrote something"
    assert "(dry run: nothing was written)" in dry.stdout, dry.stdout
    copy = os.path.join(box.tmp, "..", os.path.basename(box.tmp) + "-patched")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(box.tmp, copy, symlinks=True)
    diff = dry.stdout[dry.stdout.index("--- "):dry.stdout.rindex("\n  would ")]
    diff = diff.replace(box.tmp, copy)
    p = subprocess.run(["patch", "-p0", "-s", "-E"], input=diff + "\n", text=True,
                       capture_output=True, cwd="/")
    assert p.returncode == 0, "patch refused the dry run's diff: %s\n%s" % (p.stderr, diff)
    real = box.setup(*args, path=path, pre=pre)
    after = box.snapshot()
    patched = {}
    for d, dirs, files in os.walk(copy):
        dirs[:] = [x for x in dirs if x != ".git"]
        for name in files:
            p2 = os.path.join(d, name)
            rel = os.path.relpath(p2, copy)
            if ".codex/" in rel and not rel.endswith((".toml", ".json")):
                continue
            with open(p2, "rb") as f:
                patched[rel] = f.read()
    shutil.rmtree(copy)
    assert patched == after, "the dry run's diff differs from what was written"
    return real


def assert_second_run_and_remove(box, original, *args, path=SYSTEM_PATH, pre=()):
    """A second run changes nothing and says so; --remove gives back the
    original bytes (files setup made are gone)."""
    done = box.snapshot()
    again = box.setup(*args, path=path, pre=pre)
    assert "nothing to change" in again.stdout, again.stdout
    assert box.snapshot() == done, "a second run changed something"
    box.setup(*args, "--remove", path=path, pre=pre)
    assert box.snapshot() == original, "--remove did not give back the original files"
    gone = box.setup(*args, "--remove", path=path, pre=pre)
    assert "nothing to remove" in gone.stdout, gone.stdout


# --- Claude Code -------------------------------------------------------------

CLAUDE_SETTINGS = """{
    "model": "opus",
    "temperature": 0.7,
    "statusLine": {"type": "command", "command": "echo é"},
    "hooks": {
        "PreToolUse": [
            { "matcher": "Bash", "hooks": [ { "type": "command", "command": "echo pre" } ] }
        ],
        "Stop": [
            { "hooks": [ { "type": "command", "command": "notify-send done" } ] }
        ]
    },
    "permissions": { "allow": ["Bash(ls:*)"], "deny": [] }
}
"""

MCP_JSON = '{"mcpServers": {"db": {"command": "db-mcp", "args": ["--ro"]}}}\n'


def test_claude_code_project(tmp):
    box = Box(tmp)
    box.write("proj/.claude/settings.json", CLAUDE_SETTINGS)
    box.write("proj/.mcp.json", MCP_JSON)
    original = box.snapshot()
    out = assert_dry_run_then_apply(box, "claude-code", "--project").stdout
    assert "changed %s/.mcp.json: added mcpServers.vigil" % box.proj in out, out
    mcp = load(os.path.join(box.proj, ".mcp.json"))
    assert mcp["mcpServers"]["db"] == {"command": "db-mcp", "args": ["--ro"]}, mcp
    assert mcp["mcpServers"]["vigil"] == {"command": box.vigil, "args": ["mcp"], "type": "stdio"}
    s = load(os.path.join(box.proj, ".claude", "settings.json"))
    before = json.loads(CLAUDE_SETTINGS)
    for key in ("model", "temperature", "statusLine"):
        assert s[key] == before[key], (key, s)
    assert s["hooks"]["PreToolUse"] == before["hooks"]["PreToolUse"], s
    # The person's Stop hook stays, vigil's comes after it.
    stop = s["hooks"]["Stop"]
    assert stop[0] == before["hooks"]["Stop"][0], stop
    assert stop[1]["hooks"] == [{"type": "command", "command": hook(box, "claude-code", "Stop"),
                                 "asyncRewake": True, "timeout": 3660}], stop
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse"):
        assert commands(s["hooks"][event]) == [hook(box, "claude-code", event)], s["hooks"]
        assert "matcher" not in s["hooks"][event][0], s["hooks"][event]   # every tool
    assert s["permissions"] == {"allow": ["Bash(ls:*)", "mcp__vigil"], "deny": []}, s
    assert s["enabledMcpjsonServers"] == ["vigil"], s
    # Untouched bytes stay: the number as written, the key order.
    with open(os.path.join(box.proj, ".claude", "settings.json")) as f:
        text = f.read()
    assert '"temperature": 0.7,' in text and text.index('"model"') < text.index('"hooks"'), text
    assert_second_run_and_remove(box, original, "claude-code", "--project")


def test_claude_code_user(tmp):
    box = Box(tmp)
    claude_json = json.dumps({"numStartups": 3, "projects": {"/x": {"allowedTools": []}},
                              "customApiKeyResponses": {"approved": ["k"], "rejected": []}},
                             indent=2) + "\n"
    box.write("home/.claude.json", claude_json)
    original = box.snapshot()
    assert_dry_run_then_apply(box, "claude-code", "--user")
    cj = load(os.path.join(box.home, ".claude.json"))
    assert cj["mcpServers"]["vigil"]["command"] == box.vigil and cj["numStartups"] == 3, cj
    s = load(os.path.join(box.home, ".claude", "settings.json"))
    assert commands(s["hooks"]["Stop"]) == [hook(box, "claude-code", "Stop")], s
    assert "enabledMcpjsonServers" not in s, s   # that is a project's .mcp.json's approval
    # A new user file is private.
    assert stat.S_IMODE(os.stat(os.path.join(box.home, ".claude", "settings.json")).st_mode) == 0o600
    assert_second_run_and_remove(box, original, "claude-code", "--user")


# --- Codex -------------------------------------------------------------------

CODEX_CONFIG = '''# my codex config
model = "gpt-5"   # the model
developer_instructions = """
[mcp_servers.vigil]
a line that looks like a header, in a string
"""
notify = [
  "notify-send",   # a comment in an array
  "codex",
]
tools = { web_search = true, view_image = { enabled = false } }
started = 1979-05-27 07:32:00Z

[mcp_servers.other]
command = 'other'
args = ["a", "b"]

[projects."/somewhere/else"]
trust_level = "trusted"
'''


def codex_dir(box):
    return os.path.join(box.home, ".codex")


def test_codex_user_without_codex_on_path(tmp):
    box = Box(tmp)
    box.write("home/.codex/config.toml", CODEX_CONFIG)
    original = box.snapshot()
    out = assert_dry_run_then_apply(box, "codex", "--user").stdout
    # Without a codex to ask, the one step the person takes.
    assert "One step left (no codex on PATH to ask)" in out and "/hooks" in out, out
    cfg = load(os.path.join(codex_dir(box), "config.toml"))
    before = tomllib.loads(CODEX_CONFIG)
    vigil = cfg["mcp_servers"].pop("vigil")
    assert cfg == before, "another key of config.toml changed"
    assert vigil == {"command": box.vigil, "args": ["mcp"],
                     "env_vars": ["XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "VIGIL_SOCKET",
                                  "VIGIL_CONFIG"]}, vigil
    hooks = load(os.path.join(codex_dir(box), "hooks.json"))["hooks"]
    assert sorted(hooks) == ["PostToolUse", "SessionStart", "Stop", "UserPromptSubmit"], hooks
    for event, groups in hooks.items():
        assert groups == [{"hooks": [{"type": "command", "command": hook(box, "codex", event)}]}]
    assert_second_run_and_remove(box, original, "codex", "--user")


def test_codex_project_and_codex_home(tmp):
    box = Box(tmp)
    # --project writes the project's .codex; --user follows $CODEX_HOME.
    out = box.setup("codex", "--project").stdout
    assert os.path.exists(os.path.join(box.proj, ".codex", "config.toml")), out
    assert "only in a project you trust" in out, out
    other = os.path.join(box.tmp, "codex-home")
    env = box.env(CODEX_HOME=other)
    subprocess.run([VIGIL, "setup", "codex", "--user"], cwd=box.proj, env=env, check=True,
                   capture_output=True)
    assert load(os.path.join(other, "config.toml"))["mcp_servers"]["vigil"]["command"] == box.vigil


def test_codex_trust_through_codex(tmp):
    codex = os.path.join(HARNESS_BIN, "codex")
    assert os.access(codex, os.X_OK), ("the harness package @openai/codex is not installed (%s): "
                                       "run ./scripts/install-deps.sh" % codex)
    box = Box(tmp)
    box.write("home/.codex/config.toml", CODEX_CONFIG)
    original = box.snapshot()
    path = HARNESS_BIN + ":" + SYSTEM_PATH
    out = box.setup("codex", "--user", path=path).stdout
    assert "recorded Codex's trust of vigil's 4 hooks" in out, out
    cfg = load(os.path.join(codex_dir(box), "config.toml"))
    state = cfg["hooks"]["state"]
    hooks_json = os.path.join(codex_dir(box), "hooks.json")
    for event in ("session_start", "user_prompt_submit", "post_tool_use", "stop"):
        key = "%s:%s:0:0" % (hooks_json, event)
        assert state[key]["trusted_hash"].startswith("sha256:"), state
    again = box.setup("codex", "--user", path=path).stdout
    assert "nothing to change" in again and "Codex already trusts vigil's 4 hooks" in again, again
    box.setup("codex", "--user", "--remove", path=path)
    assert box.snapshot() == original, "--remove did not clear the trust entries"


def test_codex_refuses_a_table_it_cannot_splice(tmp):
    box = Box(tmp)
    cases = {
        "dotted": 'mcp_servers.vigil.command = "x"\n',
        "inline": 'mcp_servers = { vigil = { command = "x" } }\n',
        "under its parent": '[mcp_servers]\nvigil = { command = "x" }\n',
        "array": '[[mcp_servers]]\nname = "x"\n',
        "unclosed string": 'a = "never ends\n',
        "unclosed multi-line": 'a = """\nnever ends\n',
        "escaped key": '[projects."C:\\\\x"]\na = 1\n',
    }
    for name, text in cases.items():
        box.write("home/.codex/config.toml", text)
        before = box.snapshot()
        p = box.setup("codex", "--user", ok=False)
        assert p.returncode == 1, (name, p.returncode, p.stderr)
        assert "config.toml: line" in p.stderr and "changes nothing" in p.stderr, (name, p.stderr)
        assert box.snapshot() == before, "%s: something was written" % name
        assert not os.path.exists(os.path.join(codex_dir(box), "hooks.json")), name


# --- Gemini CLI --------------------------------------------------------------

def test_gemini_project(tmp):
    box = Box(tmp)
    # Another event's empty list and hooks.disabled (no event) are the person's.
    settings = {"general": {"vimMode": True}, "mcpServers": {"x": {"command": "x"}},
                "hooks": {"AfterTool": [{"matcher": "write_file",
                                         "hooks": [{"type": "command", "command": "fmt"}]}],
                          "BeforeTool": [], "disabled": ["fmt"]}}
    box.write("proj/.gemini/settings.json", json.dumps(settings, indent=2) + "\n")
    original = box.snapshot()
    assert_dry_run_then_apply(box, "gemini")
    s = load(os.path.join(box.proj, ".gemini", "settings.json"))
    assert s["general"] == settings["general"] and s["mcpServers"]["x"] == {"command": "x"}, s
    assert s["mcpServers"]["vigil"] == {"command": box.vigil, "args": ["mcp"], "trust": True}, s
    assert s["hooks"]["AfterTool"][0] == settings["hooks"]["AfterTool"][0], s
    assert s["hooks"]["BeforeTool"] == [] and s["hooks"]["disabled"] == ["fmt"], s
    for event in ("SessionStart", "BeforeAgent", "AfterTool", "AfterAgent"):
        ours = [g for g in s["hooks"][event] if "matcher" not in g]
        assert ours == [{"hooks": [{"type": "command", "name": "vigil",
                                    "command": hook(box, "gemini", event)}]}], s["hooks"]
    assert_second_run_and_remove(box, original, "gemini")


# --- Cursor ------------------------------------------------------------------

def test_cursor_project_and_user(tmp):
    box = Box(tmp)
    box.write("proj/.cursor/hooks.json",
              '{\n  "version": 1,\n  "hooks": {\n    "stop": [{"command": "./audit.sh"}]\n  }\n}\n')
    original = box.snapshot()
    assert_dry_run_then_apply(box, "cursor", "--project")
    h = load(os.path.join(box.proj, ".cursor", "hooks.json"))
    assert h["version"] == 1 and h["hooks"]["stop"] == [
        {"command": "./audit.sh"}, {"command": hook(box, "cursor", "stop")}], h
    assert sorted(h["hooks"]) == ["beforeSubmitPrompt", "stop"], h
    assert h["hooks"]["beforeSubmitPrompt"] == [
        {"command": hook(box, "cursor", "beforeSubmitPrompt")}], h
    m = load(os.path.join(box.proj, ".cursor", "mcp.json"))
    assert m == {"mcpServers": {"vigil": {"command": box.vigil, "args": ["mcp"]}}}, m
    assert_second_run_and_remove(box, original, "cursor", "--project")
    # The user's: new files, with version 1; removed whole again.
    before = box.snapshot()
    box.setup("cursor", "--user")
    assert load(os.path.join(box.home, ".cursor", "hooks.json"))["version"] == 1
    box.setup("cursor", "--user", "--remove")
    assert box.snapshot() == before


# --- OpenCode ----------------------------------------------------------------

def test_opencode_project(tmp):
    box = Box(tmp)
    config = {"$schema": "https://opencode.ai/config.json", "model": "x/y",
              "mcp": {"other": {"type": "remote", "url": "http://127.0.0.1:1"}}}
    box.write("proj/opencode.json", json.dumps(config, indent=2) + "\n")
    original = box.snapshot()
    assert_dry_run_then_apply(box, "opencode")
    c = load(os.path.join(box.proj, "opencode.json"))
    assert c["mcp"]["vigil"] == {"type": "local", "command": [box.vigil, "mcp"], "enabled": True}
    assert c["model"] == "x/y" and c["mcp"]["other"] == config["mcp"]["other"], c
    plugin = os.path.join(box.proj, ".opencode", "plugin", "vigil.js")
    with open(plugin) as f:
        src = f.read()
    # The repository's plugin, with this vigil's path in place of "__VIGIL_PATH__".
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "plugins", "harness",
                           "opencode.js")) as f:
        want = f.read().replace('"__VIGIL_PATH__"', json.dumps(box.vigil))
    assert src == want, "the plugin written is not plugins/harness/opencode.js"
    assert_second_run_and_remove(box, original, "opencode")


def test_opencode_jsonc_is_refused(tmp):
    box = Box(tmp)
    box.write("proj/opencode.jsonc", '{\n  // mine\n  "model": "x"\n}\n')
    before = box.snapshot()
    p = box.setup("opencode", ok=False)
    assert "opencode.jsonc" in p.stderr and "comments" in p.stderr, p.stderr
    assert box.snapshot() == before


# --- Goose -------------------------------------------------------------------

GOOSE_CONFIG = """# goose config
GOOSE_PROVIDER: openai   # mine
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin

  # a comment between entries
  memory:
    enabled: false
    name: memory
    type: builtin
GOOSE_MODEL: gpt-4o
"""


def test_goose_user(tmp):
    box = Box(tmp)
    box.write("home/.config/goose/config.yaml", GOOSE_CONFIG)
    original = box.snapshot()
    out = assert_dry_run_then_apply(box, "goose").stdout
    assert "your user files" in out and "Goose has no hooks" in out, out
    cfg = load(os.path.join(box.home, ".config", "goose", "config.yaml"))
    vigil = cfg["extensions"].pop("vigil")
    assert cfg == yaml.safe_load(GOOSE_CONFIG), cfg
    assert vigil["cmd"] == box.vigil and vigil["type"] == "stdio", vigil
    # Goose has no hooks and drops server notifications: only piggyback
    # brings them to the model, with vigil's tool results, as setup says.
    assert vigil["args"] == ["mcp", "--delivery", "piggyback"], vigil
    assert vigil["enabled"] is True and vigil["name"] == "vigil", vigil
    assert_second_run_and_remove(box, original, "goose")
    # Goose has no project-level config.
    p = box.setup("goose", "--project", ok=False)
    assert p.returncode == 2 and "goose has no project-level config" in p.stderr, p.stderr
    # A new config.yaml, and an empty one, work too.
    shutil.rmtree(os.path.join(box.home, ".config"))
    box.setup("goose")
    assert load(os.path.join(box.home, ".config", "goose", "config.yaml"))["extensions"]["vigil"]
    box.setup("goose", "--remove")
    assert not os.path.exists(os.path.join(box.home, ".config", "goose", "config.yaml"))


def test_goose_refuses_what_it_cannot_splice(tmp):
    box = Box(tmp)
    for name, text in {"flow": "extensions: {developer: {enabled: true}}\n",
                       "not yaml": "extensions:\n  a: [unclosed\n",
                       "two documents": "a: 1\n---\nb: 2\n",
                       "list at the top": "- a\n- b\n"}.items():
        box.write("home/.config/goose/config.yaml", text)
        before = box.snapshot()
        p = box.setup("goose", ok=False)
        assert p.returncode == 1 and "config.yaml" in p.stderr, (name, p.stderr)
        assert box.snapshot() == before, name


# --- every hook setup installs is one vigil hook answers -------------------------

def hook_commands(node, vigil, out):
    """Every "VIGIL hook ..." string anywhere in a parsed JSON or TOML file."""
    if isinstance(node, dict):
        for v in node.values():
            hook_commands(v, vigil, out)
    elif isinstance(node, list):
        for v in node:
            hook_commands(v, vigil, out)
    elif isinstance(node, str) and node.startswith(vigil + " hook "):
        out.append(node)
    return out


def test_every_hook_installed_is_one_vigil_hook_answers(tmp):
    # The contract between setup and hook: each command line setup writes
    # is `vigil hook HARNESS EVENT` for an event vigil hook knows. An
    # unknown one fails (status 1) at every turn, in the harness's face.
    box = Box(tmp)
    seen = {}
    for harness in ("claude-code", "codex", "gemini", "cursor"):
        box.setup(harness, "--project")
        for d, dirs, files in os.walk(box.proj):
            dirs[:] = [x for x in dirs if x != ".git"]
            for name in files:
                if name.endswith((".json", ".toml")):
                    for cmd in hook_commands(load(os.path.join(d, name)), box.vigil, []):
                        seen[cmd] = harness
        box.setup(harness, "--project", "--remove")
    # Four events of Claude Code, Codex and Gemini CLI each; Cursor's two.
    assert len(seen) == 14, sorted(seen)
    for cmd, harness in sorted(seen.items()):
        words = cmd.split()
        assert words[:3] == [box.vigil, "hook", harness] and len(words) == 4, cmd
        event = words[3]
        stdin = json.dumps({"cwd": box.proj, "session_id": "s1", "conversation_id": "s1",
                            "hook_event_name": event})
        # No engine answers on the box's socket: a known event is quiet, 0.
        p = subprocess.run(words, input=stdin, capture_output=True, text=True, cwd=box.proj,
                           env=box.env(), timeout=60)
        assert p.returncode == 0 and p.stdout == "", (cmd, p.returncode, p.stdout, p.stderr)


def test_a_hook_setup_no_longer_installs_is_taken_out(tmp):
    # An earlier vigil setup cursor installed sessionStart and
    # afterMCPExecution, which vigil hook does not answer: setup (and
    # --remove) takes such a hook of vigil's out, whatever its event, and
    # leaves the person's.
    box = Box(tmp)
    stale = {"version": 1, "hooks": {
        "sessionStart": [{"command": hook(box, "cursor", "sessionStart")}],
        "afterMCPExecution": [{"command": "./audit.sh"},
                              {"command": hook(box, "cursor", "afterMCPExecution")}]}}
    box.write("proj/.cursor/hooks.json", json.dumps(stale, indent=2) + "\n")
    out = box.setup("cursor", "--project").stdout
    said = [l for l in out.splitlines() if "removed hooks" in l]
    assert len(said) == 1 and "sessionStart" in said[0] and "afterMCPExecution" in said[0], out
    h = load(os.path.join(box.proj, ".cursor", "hooks.json"))["hooks"]
    assert h == {"afterMCPExecution": [{"command": "./audit.sh"}],
                 "beforeSubmitPrompt": [{"command": hook(box, "cursor", "beforeSubmitPrompt")}],
                 "stop": [{"command": hook(box, "cursor", "stop")}]}, h
    box.write("proj/.cursor/hooks.json", json.dumps(stale, indent=2) + "\n")
    box.setup("cursor", "--project", "--remove")
    h = load(os.path.join(box.proj, ".cursor", "hooks.json"))
    assert h == {"version": 1, "hooks": {"afterMCPExecution": [{"command": "./audit.sh"}]}}, h


# --- through NATS: the entries reach an engine on another machine ---------------

NATS_URL = "nats://127.0.0.1:1"  # nothing listens there: the hooks stay quiet
REMOTE = ["--nats", NATS_URL, "--engine", "build-1", "--session", "web"]
# Where each harness keeps its MCP entry's arguments (setup's scope for it).
REMOTE_HARNESSES = {
    "claude-code": ("--project", "proj/.mcp.json", lambda c: c["mcpServers"]["vigil"]["args"]),
    "codex": ("--user", "home/.codex/config.toml", lambda c: c["mcp_servers"]["vigil"]["args"]),
    "gemini": ("--project", "proj/.gemini/settings.json",
               lambda c: c["mcpServers"]["vigil"]["args"]),
    "cursor": ("--project", "proj/.cursor/mcp.json", lambda c: c["mcpServers"]["vigil"]["args"]),
    "opencode": ("--project", "proj/opencode.json", lambda c: c["mcp"]["vigil"]["command"][1:]),
    "goose": ("--user", "home/.config/goose/config.yaml",
              lambda c: c["extensions"]["vigil"]["args"]),
}


def test_through_nats_every_entry_names_the_remote_engine(tmp):
    # `vigil --nats URL --engine NAME --session S setup HARNESS`
    # (docs/fleet.md section 6): the MCP server and every hook go to that
    # engine's session S through the broker; a second run changes nothing, --remove gives the files back,
    # and setup run without --nats turns them back into socket entries.
    box = Box(tmp)
    for harness, (scope, rel, args_of) in REMOTE_HARNESSES.items():
        original = box.snapshot()
        out = assert_dry_run_then_apply(box, harness, scope, pre=REMOTE).stdout
        assert "reaches engine build-1 through the NATS server at %s" % NATS_URL in out, out
        args = args_of(load(os.path.join(box.tmp, rel)))
        assert args[:7] == REMOTE + ["mcp"], (harness, args)
        hooks, local_hooks = [], []
        for d, dirs, files in os.walk(box.tmp):
            dirs[:] = [x for x in dirs if x != ".git"]
            for name in files:
                if name.endswith((".json", ".toml")):
                    parsed = load(os.path.join(d, name))
                    hook_commands(parsed, " ".join([box.vigil] + REMOTE), hooks)
                    hook_commands(parsed, box.vigil, local_hooks)
        assert local_hooks == [], (harness, local_hooks)
        if harness in ("claude-code", "codex", "gemini", "cursor"):
            assert hooks, harness
        if harness == "codex":
            env_vars = load(os.path.join(box.tmp, rel))["mcp_servers"]["vigil"]["env_vars"]
            assert "VIGIL_NATS_CREDS" in env_vars and "VIGIL_NATS_INBOX" in env_vars, env_vars
            for tls in ("VIGIL_NATS_CA", "VIGIL_NATS_CERT", "VIGIL_NATS_KEY"):
                assert tls in env_vars, env_vars
        # No broker answers: a hook is quiet, as with no engine on a socket.
        for cmd in hooks:
            words = cmd.split()
            stdin = json.dumps({"cwd": box.proj, "session_id": "s1", "conversation_id": "s1",
                                "hook_event_name": words[-1]})
            p = subprocess.run(words, input=stdin, capture_output=True, text=True,
                               cwd=box.proj, env=box.env(), timeout=60)
            assert p.returncode == 0 and p.stdout == "", (cmd, p.returncode, p.stdout, p.stderr)
        # Setup without --nats puts the socket's entries in their place.
        local = box.setup(harness, scope)
        assert "updated" in local.stdout, local.stdout
        assert args_of(load(os.path.join(box.tmp, rel)))[0] == "mcp", harness
        assert_second_run_and_remove(box, original, harness, scope)
        # And one set up through NATS is taken out by a --remove without it.
        box.setup(harness, scope, pre=REMOTE)
        box.setup(harness, scope, "--remove")
        assert box.snapshot() == original, harness


def test_through_nats_a_bad_url_or_engine_writes_nothing(tmp):
    box = Box(tmp)
    box.write("proj/.mcp.json", MCP_JSON)
    before = box.snapshot()
    for pre, says in (
            (["--nats", "nats://alice:s3cret@n1:4222", "--engine", "e1"],
             "the URL carries a user, password or token"),
            (["--nats", "nats://tok3n@n1:4222", "--engine", "e1"],
             "the URL carries a user, password or token"),
            (["--nats", "nats://n1:99999", "--engine", "e1"],
             '"nats://n1:99999" is not a NATS URL: its port is not a number from 1 to 65535'),
            (["--nats", "http://n1:4222", "--engine", "e1"],
             "its scheme is neither nats:// nor tls://"),
            (["--nats", "nats://n1:4222", "--engine", "e.1"],
             '--engine: "e.1" is not an engine name'),
            (["--nats", "nats://n1:4222"], "--nats needs --engine NAME"),
            (["--session", "bad name"], '--session: "bad name" is not a session name'),
            (["--engine", "e1"], "give --nats URL too")):
        p = box.setup("claude-code", ok=False, pre=pre)
        assert p.returncode == 2 and says in p.stderr, (pre, p.returncode, p.stderr)
        assert "s3cret" not in p.stderr and "tok3n" not in p.stderr, p.stderr
        assert box.snapshot() == before, pre


# --- every JSON harness: a malformed file is refused ----------------------------

def test_malformed_json_is_refused_and_nothing_written(tmp):
    box = Box(tmp)
    cases = [("claude-code", "proj/.claude/settings.json"),
             ("claude-code", "proj/.mcp.json"),
             ("gemini", "proj/.gemini/settings.json"),
             ("cursor", "proj/.cursor/hooks.json"),
             ("opencode", "proj/opencode.json"),
             ("codex", "home/.codex/hooks.json")]
    for harness, rel in cases:
        for text, what in (('{"a": 1,\n  "b": }\n', "line 2"), ('{"a": 1, "a": 2}', "duplicate"),
                           ("[1, 2]", "not an object")):
            shutil.rmtree(box.proj)
            os.makedirs(os.path.join(box.proj, ".git"))
            shutil.rmtree(os.path.join(box.home, ".codex"), ignore_errors=True)
            box.write(rel, text)
            before = box.snapshot()
            scope = "--user" if rel.startswith("home/") else "--project"
            p = box.setup(harness, scope, ok=False)
            assert p.returncode == 1, (harness, rel, p.returncode)
            assert os.path.join(box.tmp, rel) in p.stderr and what in p.stderr, (rel, p.stderr)
            assert box.snapshot() == before, "%s %s: something was written" % (harness, rel)


# --- moving vigil, links, unsafe directories ------------------------------------

def test_a_moved_vigil_replaces_its_entries(tmp):
    box = Box(tmp)
    moved = os.path.join(box.tmp, "bin", "vigil")
    os.makedirs(os.path.dirname(moved))
    shutil.copy2(VIGIL, moved)
    box.setup("claude-code")
    p = subprocess.run([moved, "setup", "claude-code"], cwd=box.proj, env=box.env(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "updated mcpServers.vigil" in p.stdout and "updated hooks" in p.stdout, p.stdout
    s = load(os.path.join(box.proj, ".claude", "settings.json"))
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        assert commands(s["hooks"][event]) == ["%s hook claude-code %s" % (moved, event)], s
    assert load(os.path.join(box.proj, ".mcp.json"))["mcpServers"]["vigil"]["command"] == moved


def test_a_linked_file_stays_a_link(tmp):
    box = Box(tmp)
    target = box.write("dotfiles/claude/settings.json", '{"model": "opus"}\n')
    os.makedirs(os.path.join(box.home, ".claude"))
    link = os.path.join(box.home, ".claude", "settings.json")
    os.symlink(target, link)
    box.setup("claude-code", "--user")
    assert os.path.islink(link) and os.readlink(link) == target
    assert "mcp__vigil" in load(target)["permissions"]["allow"]
    box.setup("claude-code", "--user", "--remove")
    # The link is kept (setup did not make it), its target as it was.
    assert os.path.islink(link)
    with open(target) as f:
        assert f.read() == '{"model": "opus"}\n'


def test_unsafe_directories_are_refused(tmp):
    box = Box(tmp)
    os.chmod(box.proj, 0o777)          # anyone may swap a file in it
    before = box.snapshot()
    p = box.setup("claude-code", ok=False)
    assert p.returncode == 1 and "may be written by everyone" in p.stderr, p.stderr
    assert box.proj in p.stderr and box.snapshot() == before
    os.chmod(box.proj, 0o755)
    if os.geteuid() == 0:              # only root can hand a directory to another user
        os.chown(box.proj, 65534, 65534)
        p = box.setup("claude-code", ok=False)
        assert "owned by uid 65534" in p.stderr and box.snapshot() == before, p.stderr


# --- scope, usage ------------------------------------------------------------------

def test_default_scope_and_usage_errors(tmp):
    box = Box(tmp)
    # In a subdirectory of a project: the project's top.
    os.makedirs(os.path.join(box.proj, "src", "deep"))
    out = box.setup("gemini", cwd=os.path.join(box.proj, "src", "deep")).stdout
    assert "(%s)" % box.proj in out.splitlines()[0], out
    assert os.path.exists(os.path.join(box.proj, ".gemini", "settings.json"))
    # Outside any project: the user's.
    loose = os.path.join(box.tmp, "loose")
    os.makedirs(loose)
    out = box.setup("gemini", cwd=loose).stdout
    assert "(your user files)" in out and os.path.exists(
        os.path.join(box.home, ".gemini", "settings.json")), out
    p = box.setup("claude", ok=False)
    assert p.returncode == 2 and 'did you mean "claude-code"' in p.stderr, p.stderr
    p = box.setup("vim", ok=False)
    assert p.returncode == 2 and "claude-code, codex, gemini, opencode, cursor, goose" in p.stderr
    p = box.setup("codex", "--project", "--user", ok=False)
    assert p.returncode == 2 and "--project and --user" in p.stderr, p.stderr


# --- the project-aware allowlist -----------------------------------------------------

def calls_for(out):
    line = [l for l in out.splitlines() if l.startswith("This project calls for:")]
    assert line, out
    return [w.split(" (")[0] for w in line[0][len("This project calls for: "):].split(", ")]


def test_allowlist_detection(tmp):
    box = Box(tmp)
    samples = {
        "yarn": ({"package.json": '{"scripts": {"dev": "vite"}}', "yarn.lock": ""},
                 ["yarn", "node"]),
        "field": ({"package.json": '{"packageManager": "pnpm@9.1.0"}', "package-lock.json": "{}"},
                  ["pnpm", "node"]),
        "bun": ({"package.json": "{}", "bun.lock": ""}, ["bun", "node"]),
        "bare": ({"package.json": "{}"}, ["npm", "node"]),
        "native": ({"Makefile": "all:\n", "Cargo.toml": "", "go.mod": "module x\n"},
                   ["make", "cargo", "go"]),
        "poetry": ({"pyproject.toml": "[tool.poetry]\n[tool.pytest.ini_options]\n",
                    "uv.lock": ""}, ["python3", "uv", "poetry", "pytest"]),
        "reqs": ({"requirements.txt": "flask\npytest==8\n"}, ["python3", "pytest"]),
    }
    for name, (files, want) in samples.items():
        root = os.path.join(box.tmp, "samples", name)
        os.makedirs(os.path.join(root, ".git"))
        for rel, text in files.items():
            box.write(os.path.join("samples", name, rel), text)
        out = box.setup("gemini", "--dry-run", cwd=root).stdout
        assert calls_for(out) == want, (name, out)
    # npx never: it would run any package of the registry.
    assert "npx" not in out


def test_allowlist_config_written_with_yes(tmp):
    box = Box(tmp)
    box.write("proj/package.json", '{"scripts": {"dev": "vite"}}')
    box.write("proj/yarn.lock", "")
    mine = os.path.join(box.home, ".config", "vigil", "vigil.lua")
    # Without a terminal and without --yes: what it would write, and how.
    out = box.setup("claude-code").stdout
    assert "does not allow \"yarn\"" in out and "--yes" in out and mine in out, out
    assert not os.path.exists(mine)
    out = box.setup("claude-code", "--yes").stdout
    assert "wrote %s" % mine in out, out
    check = subprocess.run([VIGILD, "--check-config", mine], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    with open(mine) as f:
        text = f.read()
    assert '"yarn", -- added by vigil setup for %s' % box.proj in text, text
    # The person's config is never rewritten: setup says what to add.
    with open(mine, "w") as f:
        f.write("return {\n  monitor = {\n    allowed_commands = { \"make\" },\n  },\n}\n")
    before = box.snapshot()
    out = box.setup("claude-code", "--yes").stdout
    assert box.snapshot() == before, "the person's config was rewritten"
    assert ('%s does not allow them all: add "yarn", "node" to monitor.allowed_commands '
            "(line 3), then run vigil reload" % mine) in out, out
    # ... and the command it names exists.
    r = subprocess.run([box.vigil, "reload", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "config" in r.stdout, (r.returncode, r.stderr)
    # $VIGIL_CONFIG is the config when set.
    other = box.write("other.lua", 'return { monitor = { allowed_commands = {"yarn", "node"} } }\n')
    p = box.setup("claude-code", env=box.env(VIGIL_CONFIG=other))
    assert "%s allows all of them" % other in p.stdout, p.stdout


if __name__ == "__main__":
    sys.exit(run_plain_tests([
        test_claude_code_project,
        test_claude_code_user,
        test_codex_user_without_codex_on_path,
        test_codex_project_and_codex_home,
        test_codex_trust_through_codex,
        test_codex_refuses_a_table_it_cannot_splice,
        test_gemini_project,
        test_cursor_project_and_user,
        test_opencode_project,
        test_opencode_jsonc_is_refused,
        test_goose_user,
        test_goose_refuses_what_it_cannot_splice,
        test_every_hook_installed_is_one_vigil_hook_answers,
        test_a_hook_setup_no_longer_installs_is_taken_out,
        test_through_nats_every_entry_names_the_remote_engine,
        test_through_nats_a_bad_url_or_engine_writes_nothing,
        test_malformed_json_is_refused_and_nothing_written,
        test_a_moved_vigil_replaces_its_entries,
        test_a_linked_file_stays_a_link,
        test_unsafe_directories_are_refused,
        test_default_scope_and_usage_errors,
        test_allowlist_detection,
        test_allowlist_config_written_with_yes,
    ], prefix="vigil-setup-"))
