"""vigil mcp and vigil hook against an engine on another machine, through
NATS (docs/fleet.md section 6, "vigil mcp and hooks"): the harness's MCP
server and hooks run on host A with `vigil --nats URL --engine e1`, the dev
server runs under vigild --nats on host B, and the user is a NATS user
granted the one session.

Each test starts a real nats-server (JetStream on, in its own directory, on
a free port; stopped always) and a vigild publishing to it as engine e1,
and drives `vigil mcp` as a harness does: JSON-RPC lines on its stdin and
stdout. No vigil process of this test reaches the engine by its socket
except the test itself, to look at what the engine did.
"""

import json
import os
import subprocess
import sys
import threading
import time

import msgpack

sys.path.insert(0, os.path.dirname(__file__))
import vigiltest  # noqa: E402
from vigiltest import run_plain_tests  # noqa: E402
import test_fleet_rpc as fleet_rpc  # noqa: E402
from test_fleet_rpc import NATS_SERVER, NatsServer, Requester  # noqa: E402

# The engine's user may do anything; s1 is granted the session s1 of e1
# (its requests, its notifications' subject, its own inbox prefix); blind
# may send s1's requests but not read its notifications.
AUTH = """
authorization {
  users = [
    {user: engine, password: engpw}
    {user: s1, password: s1pw,
     permissions: {publish: ["vigil.e1.s1.>"], subscribe: ["_INBOX_s1.>", "vigil.e1.s1.n"]}}
    {user: blind, password: blindpw,
     permissions: {publish: ["vigil.e1.s1.>"], subscribe: ["_INBOX_blind.>"]}}
  ]
}
"""

ERROR_LINE = "ERROR: disk full"


def monitor_command(line):
    return "sh -c 'echo calm; echo \"%s\"; sleep 60'" % line


class Adapter:
    """`vigil --nats URL --engine ENGINE mcp --session s1` on pipes, read by a
    thread: answers by id, everything else (notifications) in order."""

    count = 0

    def __init__(self, tmp, url, inbox="_INBOX_s1", engine="e1", extra=()):
        Adapter.count += 1
        self.stderr_path = os.path.join(tmp, "mcp-%d.log" % Adapter.count)
        self.stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [vigiltest.VIGIL, "--nats", url, "--engine", engine, "mcp", "--session", "s1"]
            + list(extra),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, cwd=tmp,
            env=client_env(tmp, inbox))
        self.lock = threading.Condition()
        self.answers = {}
        self.notes = []
        self.ended = False
        self.next_id = 1
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            msg = json.loads(line)
            with self.lock:
                if "id" in msg and ("result" in msg or "error" in msg):
                    self.answers[msg["id"]] = msg
                else:
                    self.notes.append(msg)
                self.lock.notify_all()
        with self.lock:
            self.ended = True
            self.lock.notify_all()

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params=None, timeout=60):
        with self.lock:
            rid = self.next_id
            self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        with self.lock:
            assert self.lock.wait_for(lambda: rid in self.answers or self.ended, timeout), \
                "no answer to %s within %ss; stderr:\n%s" % (method, timeout, self.log())
            assert rid in self.answers, "vigil mcp ended; stderr:\n%s" % self.log()
            return self.answers.pop(rid)

    def initialize(self):
        r = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "test", "version": "0"}})
        assert r["result"]["serverInfo"]["name"] == "vigil", r
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def tool(self, name, args, timeout=90):
        r = self.request("tools/call", {"name": name, "arguments": args}, timeout)
        assert "result" in r, r
        return r["result"]

    def ok(self, name, args, timeout=90):
        result = self.tool(name, args, timeout)
        assert not result.get("isError"), (name, result, self.log())
        return result

    def wait_note(self, pred, what, timeout=60):
        with self.lock:
            found = self.lock.wait_for(lambda: any(pred(n) for n in self.notes) or self.ended,
                                       timeout)
            hits = [n for n in self.notes if pred(n)]
        assert found and hits, "%s never came; stderr:\n%s" % (what, self.log())
        return hits[0]

    def channel(self, pred=lambda n: True):
        """The channel notifications so far that pred accepts."""
        with self.lock:
            return [n for n in self.notes
                    if n.get("method") == "notifications/claude/channel" and pred(n)]

    def log(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def wait_log(self, text, timeout=60):
        deadline = time.monotonic() + timeout
        while text not in self.log():
            assert time.monotonic() < deadline, "%r never in the adapter's stderr:\n%s" % (
                text, self.log())
            assert self.proc.poll() is None or text in self.log(), self.log()
            time.sleep(0.05)  # a file another process appends to: polled

    def close(self):
        """Ends stdin as a harness does; the adapter exits 0."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        return self.proc.returncode


def client_env(tmp, inbox):
    """Host A's environment: no engine of its own (a socket path nothing
    listens on), the user's inbox prefix, no session chosen by the caller."""
    env = dict(os.environ, VIGIL_SOCKET=os.path.join(tmp, "host-a", "vigil.sock"),
               VIGIL_NATS_INBOX=inbox)
    env.pop("VIGIL_SESSION", None)
    return env


def is_channel_of(mid, text):
    return lambda n: (n.get("method") == "notifications/claude/channel"
                      and n["params"]["meta"].get("monitor_id") == mid
                      and text in n["params"]["content"])


def hook(tmp, url, event, session_id, inbox="_INBOX_s1", extra=(), timeout=120):
    """`vigil --nats URL --engine e1 --session s1 hook claude-code EVENT` with
    the hook's JSON on stdin."""
    payload = {"session_id": session_id, "cwd": tmp, "hook_event_name": event,
               "transcript_path": os.path.join(tmp, "transcript.jsonl")}
    if event == "UserPromptSubmit":
        payload["prompt"] = "go on"
    return subprocess.run(
        [vigiltest.VIGIL, "--nats", url, "--engine", "e1", "--session", "s1", "hook",
         "claude-code", event] + list(extra),
        input=json.dumps(payload), capture_output=True, text=True, timeout=timeout,
        env=client_env(tmp, inbox), cwd=tmp)


def with_fleet(tmp, fn, **config):
    """fn(holder, engine): holder["server"] is the broker (AUTH's users),
    which a test may restart and put back there."""
    fleet_rpc.with_fleet(tmp, fn, nats_config=AUTH, url_user=("engine", "engpw"), holder={},
                         **config)


# --- the adapter as a user granted one session -------------------------------

def test_mcp_serves_a_remote_session_and_hooks_take_once(tmp):
    """Tools through the broker; the line's notification pushed as a channel
    message, framed as the socket frames it; a hook takes it once from the
    engine's cursor and a second take, and the next tool result, have
    nothing of it."""
    def body(fleet, engine):
        url = fleet["server"].url("s1", "s1pw")
        a = Adapter(tmp, url)
        try:
            a.initialize()
            tools = [t["name"] for t in a.request("tools/list")["result"]["tools"]]
            assert "monitor_start" in tools and "notifications_read" in tools, tools
            started = a.ok("monitor_start", {"command": monitor_command(ERROR_LINE),
                                             "label": "build", "patterns": ["^ERROR"]})
            mid = started["structuredContent"]["monitor_id"]
            note = a.wait_note(is_channel_of(mid, ERROR_LINE), "the channel notification")
            content = note["params"]["content"]
            assert content.startswith("<<<VIGIL OBSERVATION "), content
            assert "stream_policy: untrusted_observation" in content, content
            assert note["params"]["meta"]["source"] == "vigil", note
            assert "requests on vigil.e1.s1.rpc at nats://***@127.0.0.1:" in a.log(), a.log()
            assert "notifications read live" in a.log(), a.log()
            assert "s1pw" not in a.log(), "the password reached the log"
            # The monitor runs in s1 of the remote engine, as its socket shows;
            # host A got no socket directory or state file of its own.
            engine.call("session_open", session="s1")
            mons = engine.call("monitor_list", session="s1")["monitors"]
            assert [m["monitor_id"] for m in mons] == [mid], mons
            assert not os.path.exists(os.path.join(tmp, "host-a")), os.listdir(tmp)

            # The hook takes it from the engine's cursor, once.
            first = hook(tmp, url, "UserPromptSubmit", "h1")
            assert first.returncode == 0, (first.stdout, first.stderr)
            ctx = json.loads(first.stdout)["hookSpecificOutput"]["additionalContext"]
            assert ERROR_LINE in ctx and "<<<VIGIL OBSERVATION " in ctx, ctx
            second = hook(tmp, url, "UserPromptSubmit", "h1")
            assert second.returncode == 0, (second.stdout, second.stderr)
            assert ERROR_LINE not in second.stdout, second.stdout
            # The next tool result carries nothing of it either: the cursor
            # is past it for every reader of the session.
            listed = a.ok("monitor_list", {})
            assert len(listed["content"]) == 1, listed  # the list alone, no notification
            assert "notifications" not in listed["structuredContent"], listed
            seq = note["params"]["meta"]["seq"]
            assert len(a.channel(lambda n: n["params"]["meta"]["seq"] == seq)) == 1, a.notes
            a.ok("monitor_stop", {"monitor_id": mid})
        finally:
            rc = a.close()
        assert rc == 0, (rc, a.log())
        # The adapter's virtual connection sent the same Vigil-Client for
        # every call: one connection on s1's subject.
        rpc = engine.call("api_info")["nats"]["rpc"]
        assert rpc["refused"] == 0 and rpc["malformed"] == 0, rpc
    with_fleet(tmp, body)


def test_a_stop_hook_waits_for_the_next_notification(tmp):
    """Claude Code's Stop (asyncRewake): nothing above the cursor, so the
    hook waits; the session's next notification, read from its subject,
    wakes it, and it answers with it (status 2, on stderr)."""
    def body(fleet, engine):
        url = fleet["server"].url("s1", "s1pw")
        engine.call("session_open", session="s1")
        payload = {"session_id": "h2", "cwd": tmp, "hook_event_name": "Stop",
                   "transcript_path": os.path.join(tmp, "transcript.jsonl")}
        input_path = os.path.join(tmp, "stop.json")
        with open(input_path, "w") as f:
            json.dump(payload, f)
        with open(input_path) as hook_input:
            proc = subprocess.Popen(
                [vigiltest.VIGIL, "--nats", url, "--engine", "e1", "--session", "s1", "hook",
                 "claude-code", "Stop", "--wait=120"],
                stdin=hook_input, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=client_env(tmp, "_INBOX_s1"), cwd=tmp)
        try:
            # The hook's four calls on the existing session (session_open,
            # session_state idle, cursor_get, notifications_since: nothing
            # above the cursor) are answered: it waits.
            vigiltest.wait_for(
                lambda: engine.call("api_info")["nats"]["rpc"]["answered"] >= 4,
                "the hook's look at the cursor")
            assert proc.poll() is None, proc.communicate()
            engine.call("monitor_start", session="s1", command=monitor_command("ERROR: late"),
                        patterns=["^ERROR"])
            out, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 2, (proc.returncode, out, err)
        assert "ERROR: late" in err and "<<<VIGIL OBSERVATION " in err, err
        # Taken: the cursor is past it.
        again = hook(tmp, url, "UserPromptSubmit", "h2")
        assert "ERROR: late" not in again.stdout, again.stdout
    with_fleet(tmp, body)


def test_a_user_without_the_notification_subject_gets_them_from_the_cursor(tmp):
    """A user who may not subscribe to the session's subject: the adapter
    says so and serves; what it cannot push, notifications_read takes from
    the engine's cursor."""
    def body(fleet, engine):
        a = Adapter(tmp, fleet["server"].url("blind", "blindpw"), inbox="_INBOX_blind")
        try:
            a.initialize()
            a.wait_log("no live notifications")
            assert "vigil.e1.s1.n" in a.log(), a.log()
            started = a.ok("monitor_start", {"command": monitor_command(ERROR_LINE),
                                             "patterns": ["^ERROR"]})
            mid = started["structuredContent"]["monitor_id"]
            got = a.ok("notifications_read", {"wait_ms": 30000})
            ns = got["structuredContent"]["notifications"]
            assert any(n["monitor_id"] == mid and ERROR_LINE in n["text"] for n in ns), got
            assert a.channel() == [], a.notes
        finally:
            rc = a.close()
        assert rc == 0, (rc, a.log())
    with_fleet(tmp, body)


def test_hostile_messages_on_the_subject_are_dropped_and_counted(tmp):
    """Anything on vigil.e1.s1.n that is not a notification of e1's s1 (no
    headers, another session in the payload, another engine in the headers)
    reaches no harness; the adapter counts it on stderr; one well formed
    but not the engine's reaches no harness either; a real one still
    comes."""
    def body(fleet, engine):
        server = fleet["server"]
        a = Adapter(tmp, server.url("s1", "s1pw"))
        forger = Requester(server.port, "engine", "engpw")
        try:
            a.initialize()
            a.ok("monitor_list", {})
            subject = b"vigil.e1.s1.n"

            def hpub(headers, payload):
                h = b"NATS/1.0\r\n" + b"".join(b"%s: %s\r\n" % kv for kv in headers) + b"\r\n"
                forger._send(b"HPUB %s %d %d\r\n%s%s\r\n" % (subject, len(h), len(h) + len(payload),
                                                             h, payload))

            epoch = b"00000000000000ab"
            forged = {"session": "s2", "seq": 99, "epoch": epoch.decode(), "type": "output",
                      "text": "FORGED one", "monitor_id": "mon_forged000000"}
            forger._send(b"PUB %s 5\r\nhello\r\n" % subject)
            hpub([(b"Vigil-Engine", b"e1"), (b"Vigil-Session", b"s1"), (b"Vigil-Seq", b"99"),
                  (b"Vigil-Epoch", epoch)], msgpack.packb(forged))
            forged.update(session="s1", text="FORGED two")
            hpub([(b"Vigil-Engine", b"e2"), (b"Vigil-Session", b"s1"), (b"Vigil-Seq", b"99"),
                  (b"Vigil-Epoch", epoch)], msgpack.packb(forged))
            forged.update(text="FORGED three")
            hpub([(b"Vigil-Engine", b"e1"), (b"Vigil-Session", b"s1"), (b"Vigil-Seq", b"98"),
                  (b"Vigil-Epoch", epoch)], msgpack.packb(forged))
            forger.flush()
            # Said at the first, the second and the fourth: not once each.
            a.wait_log("(4 dropped so far)")
            assert "(3 dropped so far)" not in a.log(), a.log()
            log = a.log()
            assert "dropped a message on vigil.e1.s1.n" in log, log
            assert "the payload's session" in log, log
            # One that passes every check (headers and payload agree, for
            # e1's s1) is only a wake-up: the adapter reads the engine, which
            # has no such notification, so its text reaches no harness and
            # its seq moves nothing.
            whole = {"session": "s1", "seq": 500, "epoch": epoch.decode(), "type": "output",
                     "text": "FORGED whole", "monitor_id": "mon_forged000000"}
            hpub([(b"Nats-Msg-Id", epoch + b":s1:500"), (b"Vigil-Engine", b"e1"),
                  (b"Vigil-Session", b"s1"), (b"Vigil-Seq", b"500"), (b"Vigil-Epoch", epoch)],
                 msgpack.packb(whole))
            forger.flush()
            started = a.ok("monitor_start", {"command": monitor_command(ERROR_LINE),
                                             "patterns": ["^ERROR"]})
            mid = started["structuredContent"]["monitor_id"]
            a.wait_note(is_channel_of(mid, ERROR_LINE), "the real notification")
            assert a.channel(lambda n: "FORGED" in n["params"]["content"]) == [], a.notes
        finally:
            forger.close()
            rc = a.close()
        assert rc == 0, (rc, a.log())
    with_fleet(tmp, body)


def test_the_adapter_keeps_its_virtual_connection_open(tmp):
    """An engine that closes a requester's connection after 1 s without a
    request: the adapter pings inside that (a third of it, which api_info
    tells), so its connection, and with it the session's reader, stays
    while the harness sends nothing; every request carries one
    Vigil-Client."""
    def body(fleet, engine):
        a = Adapter(tmp, fleet["server"].url("s1", "s1pw"))
        try:
            a.initialize()
            a.ok("monitor_list", {})
            base = engine.call("api_info")["nats"]["rpc"]["requests"]
            # Six pings with nothing from the harness: two seconds, twice
            # the idle bound.
            vigiltest.wait_for(
                lambda: engine.call("api_info")["nats"]["rpc"]["requests"] >= base + 6,
                "the adapter's pings")
            rpc = engine.call("api_info")["nats"]["rpc"]
            assert rpc["clients_idle_closed"] == 0, rpc
            a.ok("monitor_list", {})
            clients = {line.split(" client ")[1].split(" ")[0]
                       for line in engine.log().splitlines()
                       if "connection from nats vigil.e1.s1.rpc client" in line}
            assert len(clients) == 1, clients
        finally:
            rc = a.close()
        assert rc == 0, (rc, a.log())
    with_fleet(tmp, body, nats={"client_idle_ms": 1000})


def adapter_run_to_its_end(tmp, url, **kw):
    """Starts an Adapter that is expected to give up on its own, waits for
    its exit (60 s at most) and returns (status, log, seconds it ran)."""
    a = Adapter(tmp, url, **kw)
    start = time.monotonic()
    try:
        a.proc.wait(60)
    finally:
        rc = a.close()
    return rc, a.log(), time.monotonic() - start


def test_a_user_refused_its_inbox_is_told_at_once(tmp):
    """s1 may subscribe only under its own inbox prefix, _INBOX_s1: with
    $VIGIL_NATS_INBOX unset (the default prefix, _INBOX) or naming
    another's, every answer of the engine would be dropped by the server.
    The hook and the adapter say so at once, naming the variable, instead
    of waiting out each call's 30 s as if the engine were silent; the hook
    with status 1 (a mistake in the set-up is said, unlike no engine)."""
    def body(fleet, engine):
        url = fleet["server"].url("s1", "s1pw")
        start = time.monotonic()
        h = hook(tmp, url, "UserPromptSubmit", "h3", inbox="")
        took = time.monotonic() - start
        assert h.returncode == 1, (h.returncode, h.stdout, h.stderr)
        assert "refused this user the subscription to _INBOX." in h.stderr, h.stderr
        assert "$VIGIL_NATS_INBOX" in h.stderr and "it is unset, so _INBOX" in h.stderr, h.stderr
        assert "s1pw" not in h.stderr, h.stderr
        assert took < 20, "the hook took %.1f s: it waited for answers that could not come" % took
        rc, log, took = adapter_run_to_its_end(tmp, url, inbox="_INBOX_blind")
        assert rc == 1, (rc, log)
        assert 'refused this user the subscription to _INBOX_blind.' in log, log
        assert 'it is "_INBOX_blind"' in log, log
        assert took < 20, "the adapter waited for answers that could not come"
        # Nothing reached the engine's session: the hook's session_state
        # was never carried out.
        assert "s1" not in [s["session"] for s in engine.call("session_list", all=True)["sessions"]]
    with_fleet(tmp, body)


# --- the broker and the engine going away -------------------------------------

def test_no_engine_of_that_name_is_said_at_once(tmp):
    def body(fleet, engine):
        rc, log, took = adapter_run_to_its_end(tmp, fleet["server"].url("engine", "engpw"),
                                               inbox="_INBOX", engine="e9")
        assert rc == 1, (rc, log)
        assert "no engine answers on vigil.e9.s1.rpc" in log, log
        assert took < 20, "it waited for a deadline"
        # --config is for an engine the adapter starts: it starts none here.
        p = subprocess.run([vigiltest.VIGIL, "--nats", fleet["server"].url(), "--engine", "e1",
                            "mcp", "--config", "/dev/null"], capture_output=True, text=True,
                           timeout=60, env=client_env(tmp, "_INBOX"), cwd=tmp,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 2 and "--config" in p.stderr, p.stderr
    with_fleet(tmp, body)


def test_the_broker_going_away_fails_calls_clearly_and_comes_back(tmp):
    """With the broker stopped a tool call waits within the link's bound
    (30 s), then fails saying which engine, through which broker (without
    the password); once the broker is back the next call works, and the
    session's notifications come live again."""
    def body(fleet, engine):
        server = fleet["server"]
        url = server.url("s1", "s1pw")
        a = Adapter(tmp, url)
        try:
            a.initialize()
            a.ok("monitor_list", {})
            server.close()
            a.wait_log("ended (")
            start = time.monotonic()
            failed = a.tool("monitor_list", {}, timeout=120)
            took = time.monotonic() - start
            assert failed.get("isError"), failed
            text = failed["content"][0]["text"]
            assert text.startswith("unavailable: no engine answers on vigil.e1.s1.rpc at "
                                   "nats://***@127.0.0.1:%d" % server.port), text
            assert "s1pw" not in text, text
            assert took < 45, "the call took %.1f s, past the link's bound" % took
            # The broker comes back where it was; the engine reconnects.
            fleet["server"] = NatsServer(tmp, AUTH, port=server.port)
            vigiltest.wait_for(lambda: engine.call("api_info")["nats"]["state"] == "connected",
                               "the engine's reconnect")
            vigiltest.wait_for(lambda: engine.call("api_info")["nats"]["rpc"]["serving"],
                               "the engine's request subscriptions")
            a.ok("monitor_list", {})
            started = a.ok("monitor_start", {"command": monitor_command(ERROR_LINE),
                                             "patterns": ["^ERROR"]})
            mid = started["structuredContent"]["monitor_id"]
            a.wait_note(is_channel_of(mid, ERROR_LINE), "the channel notification after the return")
        finally:
            rc = a.close()
        assert rc == 0, (rc, a.log())
    with_fleet(tmp, body)


if __name__ == "__main__":
    if not os.path.exists(NATS_SERVER):
        print("SKIP: no nats-server at %s" % NATS_SERVER)
        sys.exit(0)
    sys.exit(run_plain_tests([
        test_mcp_serves_a_remote_session_and_hooks_take_once,
        test_a_stop_hook_waits_for_the_next_notification,
        test_a_user_without_the_notification_subject_gets_them_from_the_cursor,
        test_hostile_messages_on_the_subject_are_dropped_and_counted,
        test_the_adapter_keeps_its_virtual_connection_open,
        test_a_user_refused_its_inbox_is_told_at_once,
        test_no_engine_of_that_name_is_said_at_once,
        test_the_broker_going_away_fails_calls_clearly_and_comes_back,
    ], prefix="vigil-mcpnats-"))
