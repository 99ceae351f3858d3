"""The person sees what the agent runs (issue 23, item 5): in a project, the
`vigil` CLI works in the session `vigil mcp` works in there, from the
project's top or any directory under it, unless --session or
$VIGIL_SESSION says otherwise; `vigil sessions` lists the engine's sessions
with their monitors and marks the project's own.

The agent here is the real `vigil mcp` started in the project's top, as a
harness starts it, driven with JSON-RPC lines on its stdin."""

import json
import os
import re
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import VIGIL, run_tests, socket_only


def client_env(e, **extra):
    """The client's environment: HOME is the test's directory, so the walk
    up to a project's top stops there whatever lies above it in /tmp."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIGIL_SESSION", "VIGIL_SOCKET", "NO_COLOR", "COLUMNS")}
    env["HOME"] = e.dir
    env.update(extra)
    return env


def vigil(e, *args, cwd=None, env=None, timeout=30):
    return subprocess.run([VIGIL, "--socket", e.socket_path] + list(args), capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env or client_env(e))


def vigil_ok(e, *args, **kw):
    p = vigil(e, *args, **kw)
    assert p.returncode == 0, "vigil %s: status %d\nstdout: %s\nstderr: %s" % (
        " ".join(args), p.returncode, p.stdout, p.stderr)
    return p


def make_project(e, name="proj"):
    """A repository (a .git directory) with a src/deep subdirectory."""
    top = os.path.realpath(os.path.join(e.dir, name))
    os.makedirs(os.path.join(top, ".git"))
    os.makedirs(os.path.join(top, "src", "deep"))
    return top


class Agent:
    """`vigil mcp` started in a directory, as a harness starts it."""

    def __init__(self, e, cwd):
        self.proc = subprocess.Popen([VIGIL, "mcp", "--socket", e.socket_path, "--no-spawn"],
                                     cwd=cwd, env=client_env(e), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b""
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "test", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params, timeout=30):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                msg = json.loads(line)
                if msg.get("id") == self.next_id:
                    assert "error" not in msg, msg
                    return msg["result"]
            left = deadline - time.monotonic()
            assert left > 0, "no answer to %s from vigil mcp" % method
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                assert chunk, "vigil mcp exited: %s" % self.proc.stderr.read().decode()
                self.buf += chunk

    def tool(self, name, args):
        res = self.request("tools/call", {"name": name, "arguments": args})
        assert not res.get("isError"), res
        return res["structuredContent"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(15)
        self.proc.stdout.close()
        self.proc.stderr.close()


def rows_with(out, label):
    return [l for l in out.splitlines() if re.search(r"\b%s\b" % re.escape(label), l)]


@socket_only
def test_cli_in_the_project_sees_what_vigil_mcp_started(e):
    top = make_project(e)
    agent = Agent(e, top)
    try:
        mid = agent.tool("monitor_start", {"command": "sleep 300", "label": "agent-dev"})["monitor_id"]
        # From the top and from a subdirectory: the agent's monitor, running.
        for where in (top, os.path.join(top, "src", "deep")):
            out = vigil_ok(e, "list", cwd=where).stdout
            rows = rows_with(out, "agent-dev")
            assert len(rows) == 1 and mid in rows[0] and "running" in rows[0], (where, out)
        # The person can act on it by its label, as on their own.
        st = vigil_ok(e, "--json", "status", "agent-dev", cwd=os.path.join(top, "src")).stdout
        assert json.loads(st)["monitor_id"] == mid, st
        # --session and $VIGIL_SESSION still choose another session.
        out = vigil_ok(e, "list", "-a", "--session", "elsewhere", cwd=top).stdout
        assert "agent-dev" not in out and 'session "elsewhere"' in out, out
        out = vigil_ok(e, "list", "-a", cwd=top,
                       env=client_env(e, VIGIL_SESSION="elsewhere")).stdout
        assert "agent-dev" not in out and 'session "elsewhere"' in out, out
        # Another project does not see it.
        other = make_project(e, "other")
        out = vigil_ok(e, "list", "-a", cwd=other).stdout
        assert "agent-dev" not in out, out
        vigil_ok(e, "stop", "agent-dev", "--grace", "0", cwd=top)
    finally:
        agent.close()


@socket_only
def test_cli_started_monitor_is_the_agents_to_see(e):
    # The other way round: what a person starts in the project, the agent's
    # monitor_list shows.
    top = make_project(e)
    out = vigil_ok(e, "start", "--label", "person-dev", "--", "sleep", "300",
                   cwd=os.path.join(top, "src")).stdout.strip()
    agent = Agent(e, top)
    try:
        listed = agent.tool("monitor_list", {})["monitors"]
        assert [m["monitor_id"] for m in listed] == [out], listed
        agent.tool("monitor_stop", {"monitor_id": out, "grace_ms": 0})
    finally:
        agent.close()


@socket_only
def test_list_says_which_session_it_shows(e):
    top = make_project(e)
    out = vigil_ok(e, "list", "-a", cwd=top).stdout
    m = re.search(r'no monitors in session "(mcp-[0-9a-f]{32})"', out)
    assert m, out
    # The help says where the default comes from.
    h = vigil_ok(e, "list", "--help").stdout
    assert "project" in h and "vigil sessions" in h, h
    # And so does every command's --session line: never the old "cli".
    for args in (["--help"], ["list", "--help"], ["sessions", "--help"]):
        h = vigil_ok(e, *args).stdout
        lines = h.splitlines()
        at = [i for i, l in enumerate(lines) if l.strip().startswith("--session NAME")][0]
        line = " ".join(lines[at:at + 2])      # the option's line and its continuation
        assert '"cli"' not in line and "project" in line, (args, line)
    # vigil mcp's own help: the project's session, not "this directory".
    h = " ".join(vigil_ok(e, "mcp", "--help").stdout.split())
    assert "hash of this directory" not in h and "project" in h.split("Options:")[0], h


@socket_only
def test_sessions_lists_each_agent_session_with_its_monitors(e):
    top = make_project(e)
    other = make_project(e, "other")
    a = Agent(e, top)
    b = Agent(e, other)
    try:
        mine = a.tool("monitor_start", {"command": "sleep 300", "label": "web"})["monitor_id"]
        theirs = b.tool("monitor_start", {"command": "sleep 300", "label": "tests"})["monitor_id"]
        once = b.tool("monitor_start", {"command": "true", "label": "once"})["monitor_id"]
        ended = b.tool("monitor_wait", {"monitor_id": once, "for": "exit", "timeout_ms": 60000})
        assert not ended["timed_out"], ended
        # A gateway's session, opened over the wire, with nothing running.
        gw = e.connect()
        gw.call("session_open", session="gateway-1")
        out = vigil_ok(e, "sessions", cwd=os.path.join(top, "src")).stdout
        lines = out.splitlines()
        # The project's own session first, marked, with its directory.
        assert lines[0].startswith("* mcp-") and "(this project: %s)" % top in lines[0], out
        ours = lines[0].split()[1]
        block = out.split("\n  mcp-")[0]
        assert mine in block and "web" in block and theirs not in block, out
        # The other project's session and the gateway's, unmarked.
        assert re.search(r"^  mcp-[0-9a-f]{32}$", out, re.M), out
        assert theirs in out and "tests" in out, out
        assert re.search(r"^  gateway-1$", out, re.M), out
        assert "once" not in out, out          # ended: only with --all
        assert "0 attached, idle, 0 running" not in out.split("gateway-1")[0], out
        # --json: the same, each with `current` and its monitor list.
        js = json.loads(vigil_ok(e, "--json", "sessions", "--all", cwd=top).stdout)["sessions"]
        byname = {s["session"]: s for s in js}
        assert js[0]["session"] == ours and js[0]["current"] and js[0]["project"] == top, js
        assert [m["monitor_id"] for m in js[0]["monitor_list"]] == [mine], js
        others = [s for s in js if s["session"].startswith("mcp-") and not s["current"]]
        assert len(others) == 1, js
        labels = sorted(m["label"] for m in others[0]["monitor_list"])
        assert labels == ["once", "tests"], others           # --all: the ended one too
        assert byname["gateway-1"]["monitors"] == 0 and byname["gateway-1"]["attached"] == 1, js
        # Listing opened nothing for good: the gateway's session still has
        # one connection attached, and no session was made.
        again = json.loads(vigil_ok(e, "--json", "sessions", cwd=top).stdout)["sessions"]
        assert sorted(s["session"] for s in again) == sorted(byname), again
        gw.close()
    finally:
        a.close()
        b.close()


@socket_only
def test_sessions_in_a_directory_without_monitors(e):
    # A directory whose session the engine does not know yet is still
    # shown (first, marked), saying so.
    top = make_project(e, "fresh")
    out = vigil_ok(e, "sessions", cwd=top).stdout
    assert out.startswith("* mcp-") and "(this project: %s)" % top in out, out
    assert "not in the engine" in out, out
    out = vigil_ok(e, "sessions", "--session", "named", cwd=top).stdout
    assert out.startswith("* named  (this invocation's session)"), out


if __name__ == "__main__":
    sys.exit(run_tests([
        test_cli_in_the_project_sees_what_vigil_mcp_started,
        test_cli_started_monitor_is_the_agents_to_see,
        test_list_says_which_session_it_shows,
        test_sessions_lists_each_agent_session_with_its_monitors,
        test_sessions_in_a_directory_without_monitors,
    ]))
