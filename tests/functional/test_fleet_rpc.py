"""Requests across machines (docs/fleet.md section 6): vigild --nats answers
NATS request-reply on vigil.<engine>.rpc (the whole engine) and on
vigil.<engine>.<token>.rpc (one session), carrying the socket's msgpack-rpc
frames.

Each test starts a real nats-server (JetStream on, in its own directory, on
a free port; stopped always) and a vigild publishing to it as engine e1,
and speaks to the engine only through the broker, with a requester of a
few lines written here on NATS's text protocol (CONNECT, SUB to an inbox,
PUB/HPUB with a reply subject, MSG/HMSG read back): no NATS library is
installed for Python here, and the test should not lean on the one the
project's client grows.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import msgpack

sys.path.insert(0, os.path.dirname(__file__))
import vigiltest  # noqa: E402
from vigiltest import ERROR_CODES, Engine, default_config, run_plain_tests  # noqa: E402

NATS_SERVER = os.environ.get("VIGIL_NATS_SERVER", "/usr/sbin/nats-server")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class NatsServer:
    """A nats-server with JetStream in dir, stopped by close(); on port when
    given (a server started again where the one before it was)."""

    def __init__(self, dir, config=None, port=None):
        self.port = port or free_port()
        self.dir = dir
        args = [NATS_SERVER, "-js", "-sd", os.path.join(dir, "js"), "-a", "127.0.0.1",
                "-p", str(self.port)]
        if config is not None:
            path = os.path.join(dir, "nats.conf")
            with open(path, "w") as f:
                f.write(config)
            args += ["-c", path]
        self.log_path = os.path.join(dir, "nats.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("nats-server exited: " + open(self.log_path).read())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError("nats-server never accepted on port %d" % self.port)
                time.sleep(0.02)  # polling the server's start-up only

    def url(self, user=None, password=None):
        auth = "%s:%s@" % (user, password) if user else ""
        return "nats://%s127.0.0.1:%d" % (auth, self.port)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Requester:
    """The few lines of NATS's client protocol a requester needs."""

    def __init__(self, port, user=None, password=None, inbox="_INBOX_t"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.settimeout(None)
        self.rfile = self.sock.makefile("rb")
        self.lock = threading.Condition()
        self.answers = {}     # inbox token -> payload
        self.errors = []      # -ERR lines
        self.pongs = 0
        self.closed = False
        self.inbox = "%s.%d" % (inbox, id(self))
        self.next = 1
        info = self.rfile.readline()
        assert info.startswith(b"INFO "), info
        connect = {"verbose": False, "pedantic": False, "headers": True, "protocol": 1,
                   "lang": "python-test", "version": "0"}
        if user:
            connect.update(user=user, **{"pass": password})
        self._send(b"CONNECT " + json.dumps(connect).encode() + b"\r\n")
        self._send(b"SUB %s.* 1\r\n" % self.inbox.encode())
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.flush()

    def _send(self, data):
        self.sock.sendall(data)

    def _read(self):
        try:
            while True:
                line = self.rfile.readline()
                if not line:
                    break
                line = line.rstrip(b"\r\n")
                if line == b"PING":
                    self._send(b"PONG\r\n")
                elif line == b"PONG":
                    with self.lock:
                        self.pongs += 1
                        self.lock.notify_all()
                elif line.startswith(b"-ERR"):
                    with self.lock:
                        self.errors.append(line.decode(errors="replace"))
                        self.lock.notify_all()
                elif line.startswith(b"MSG ") or line.startswith(b"HMSG "):
                    parts = line.split(b" ")
                    total = int(parts[-1])
                    hlen = int(parts[-2]) if parts[0] == b"HMSG" else 0
                    body = self.rfile.read(total + 2)[:total]
                    subject = parts[1].decode()
                    with self.lock:
                        self.answers[subject.rsplit(".", 1)[1]] = body[hlen:]
                        self.lock.notify_all()
        except (OSError, ValueError):
            pass
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def flush(self, timeout=30):
        """A round trip to the server: everything sent before it has been
        taken (and any -ERR about it has arrived)."""
        with self.lock:
            want = self.pongs + 1
        self._send(b"PING\r\n")
        with self.lock:
            assert self.lock.wait_for(lambda: self.pongs >= want or self.closed, timeout), \
                "no PONG from the server"
            assert not self.closed, "the server closed the connection: %s" % self.errors

    def publish(self, subject, payload, client=None, want_answer=True):
        """Sends payload to subject with a reply subject of its own; returns
        the token its answer will come back under."""
        with self.lock:
            token = str(self.next)
            self.next += 1
        reply = ("%s.%s " % (self.inbox, token)).encode() if want_answer else b""
        if client is None:
            self._send(b"PUB %s %s%d\r\n%s\r\n" % (subject.encode(), reply, len(payload), payload))
        else:
            headers = b"NATS/1.0\r\nVigil-Client: %s\r\n\r\n" % client.encode()
            self._send(b"HPUB %s %s%d %d\r\n%s%s\r\n" % (
                subject.encode(), reply, len(headers), len(headers) + len(payload), headers,
                payload))
        return token

    def answer(self, token, timeout=30):
        with self.lock:
            assert self.lock.wait_for(lambda: token in self.answers or self.closed, timeout), \
                "no answer to request %s within %ss" % (token, timeout)
            assert token in self.answers, "the server closed the connection: %s" % self.errors
            return msgpack.unpackb(self.answers.pop(token), raw=False, strict_map_key=False)

    def frame(self, subject, method, args=None, msgid=7, client=None):
        """Sends [0, msgid, method, [args]] and returns its answer frame."""
        params = [args] if args is not None else []
        token = self.publish(subject, msgpack.packb([0, msgid, method, params]), client)
        return self.answer(token)

    def call(self, subject, method, client=None, msgid=7, **args):
        """A request; returns its result or raises RpcError."""
        ans = self.frame(subject, method, args or None, msgid, client)
        assert ans[0] == 1 and ans[1] == msgid, "answer %r to msgid %d" % (ans, msgid)
        if ans[2] is not None:
            raise vigiltest.RpcError(ans[2][0], ans[2][1])
        return ans[3]

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def expect_refusal(code_name, ans, msgid):
    assert ans[0] == 1 and ans[1] == msgid and ans[3] is None, ans
    assert ans[2][0] == ERROR_CODES[code_name], "expected %s, got %r" % (code_name, ans)
    assert ans[2][1].startswith(code_name + ": "), ans
    return ans[2][1]


def start_engine(server, url=None, **config):
    cfg = default_config(**config)
    return Engine("socket", cfg, extra_args=["--nats", url or server.url(), "--nats-engine", "e1"])


def rpc_info(req, subject="vigil.e1.rpc"):
    return req.call(subject, "api_info")["nats"]["rpc"]


def with_fleet(tmp, fn, nats_config=None, url_user=None, holder=None, **config):
    """Runs fn(server, engine) with a nats-server and a vigild --nats, and
    stops both. With holder (a dict), fn gets it in place of the server,
    as holder["server"], and may put a restarted server there."""
    server = NatsServer(tmp, nats_config)
    if holder is not None:
        holder["server"] = server
    engine = None
    try:
        engine = start_engine(server, server.url(*url_user) if url_user else None, **config)
        fn(server if holder is None else holder, engine)
        log = engine.log()
    except Exception:
        if engine is not None:
            sys.stdout.write("--- vigild log ---\n" + engine.log()[-4000:] + "\n")
        raise
    finally:
        reports = engine.close() if engine is not None else []
        (server if holder is None else holder["server"]).close()
    assert not reports, "vigild's sanitizer reported:\n" + "\n".join(reports) + log[-4000:]


# --- the engine's subject ------------------------------------------------

def test_ping_and_api_info_over_the_engine_subject(tmp):
    def body(nats, engine):
        req = Requester(nats.port)
        try:
            ans = req.frame("vigil.e1.rpc", "ping", msgid=4242)
            assert ans[0] == 1 and ans[1] == 4242 and ans[2] is None, ans
            assert ans[3]["api_level"] == 1, ans
            info = req.call("vigil.e1.rpc", "api_info", msgid=9)
            rpc = info["nats"]["rpc"]
            assert rpc["serving"] is True, rpc
            assert rpc["subjects"] == ["vigil.e1.rpc", "vigil.e1.*.rpc"], rpc
            # The ping and this api_info; the shared connection of the
            # subject (no Vigil-Client) is one.
            assert rpc["requests"] == 2 and rpc["clients"] == 1, rpc
            assert rpc["refused"] == 0 and rpc["malformed"] == 0, rpc
            # The same engine over its socket sees the same counters.
            assert engine.call("api_info")["nats"]["rpc"]["requests"] == 2
            # A request with no reply subject is carried out, and answers
            # nothing: the next request's answer is the next thing back.
            req.publish("vigil.e1.rpc", msgpack.packb([0, 1, "session_open", [{"session": "quiet"}]]),
                        want_answer=False)
            sessions = req.call("vigil.e1.rpc", "session_list", all=True)["sessions"]
            assert "quiet" in [s["session"] for s in sessions], sessions
        finally:
            req.close()
    with_fleet(tmp, body)


# --- a session's subject ---------------------------------------------------

def test_a_session_subject_serves_its_session(tmp):
    """session_open, monitor_start, a deferred monitor_wait answered to the
    requester that waits (while another request of the same requester is
    answered first), and monitor_output, all on build.prod's subject."""
    def body(nats, engine):
        req = Requester(nats.port)
        subj = "vigil.e1.build%2Eprod.rpc"
        try:
            opened = req.call(subj, "session_open", client="cli-1", msgid=1)
            assert opened["session"] == "build.prod", opened
            started = req.call(subj, "monitor_start", client="cli-1", msgid=2,
                               command="sh -c 'echo first; sleep 60'",
                               label="build")
            mid = started["monitor_id"]
            wait = req.publish(subj, msgpack.packb(
                [0, 3, "monitor_wait", [{"monitor_id": mid, "for": "exit", "timeout_ms": 60000}]]),
                client="cli-1")
            # The wait is deferred: a later request of the same requester is
            # answered while it waits, under its own msgid.
            status = req.call(subj, "monitor_status", client="cli-1", msgid=4, monitor_id=mid)
            assert status["state"] == "running", status
            assert wait not in req.answers, "the wait was answered early"
            engine.call("session_open", session="build.prod")
            # The engine's socket ends the monitor (it is the same session).
            engine.call("monitor_stop", session="build.prod", monitor_id=mid)
            ans = req.answer(wait)
            assert ans[0] == 1 and ans[1] == 3 and ans[2] is None, ans
            assert ans[3]["timed_out"] is False and ans[3]["event"] is not None, ans
            assert ans[3]["state"] != "running", ans
            out = req.call(subj, "monitor_output", client="cli-1", msgid=5, monitor_id=mid)
            assert "first" in [l["text"] for l in out["lines"]], out
            # Without a Vigil-Client (a connection shared by the subject's
            # header-less requesters), the session is opened for the call.
            listed = req.call(subj, "monitor_list", msgid=6, include_exited=True)
            assert [m["monitor_id"] for m in listed["monitors"]] == [mid], listed
            rpc = rpc_info(req)
            assert rpc["clients"] == 3, rpc  # cli-1, the subject's shared one, the engine's
            assert rpc["notifications_dropped"] >= 1, rpc  # the exit notification
        finally:
            req.close()
    with_fleet(tmp, body)


def test_a_session_subject_refuses_other_sessions(tmp):
    def body(nats, engine):
        req = Requester(nats.port)
        subj = "vigil.e1.s1.rpc"
        try:
            engine.call("session_open", session="s2")
            req.call(subj, "session_open")
            msg = expect_refusal("denied", req.frame(subj, "monitor_list", {"session": "s2"}, 11), 11)
            assert "s2" in msg and subj in msg, msg
            msg = expect_refusal("denied", req.frame(subj, "session_open", {"session": "s2"}, 12), 12)
            for method in ("session_list", "config_reload", "group_list"):
                msg = expect_refusal("denied", req.frame(subj, method, None, 13), 13)
                assert method in msg and "vigil.e1.rpc" in msg, msg
            # Naming its own session is fine, and so is nil.
            assert req.call(subj, "monitor_list", session="s1")["monitors"] == []
            # A session closed on its subject is opened again by the next call.
            req.call(subj, "session_close")
            assert req.call(subj, "monitor_list")["monitors"] == []
            assert req.call(subj, "session_state", session=None, state="idle")["state"] == "idle"
            # A token that is no session name.
            ans = req.frame("vigil.e1.anon-1.rpc", "ping", None, 14)
            assert ans[2][0] == ERROR_CODES["invalid_params"] and "names no session" in ans[2][1], ans
            # Nothing of s2 changed: it has no monitor, and s1 was never
            # given one either.
            assert engine.call("monitor_list", session="s2")["monitors"] == []
            rpc = rpc_info(req)
            assert rpc["refused"] == 6, rpc
            assert rpc["malformed"] == 0, rpc
        finally:
            req.close()
    with_fleet(tmp, body)


# --- malformed payloads ------------------------------------------------------

def test_malformed_payloads_are_answered_and_counted(tmp):
    def body(nats, engine):
        req = Requester(nats.port)
        try:
            cases = [
                (b"\xc1", 0, "not msgpack"),
                (msgpack.packb([1, 5, None, {}]), 5, "response frame"),
                (msgpack.packb([0, 6, "ping", []]) + msgpack.packb([0, 7, "ping", []]), 6,
                 "more than one frame"),
                (msgpack.packb([0, 8, "ping", []])[:-1], 0, "ends inside one"),
                (msgpack.packb([0, 9, 42, []]), 9, "method"),
                (msgpack.packb("hello"), 0, "message"),
            ]
            for payload, msgid, text in cases:
                ans = req.answer(req.publish("vigil.e1.rpc", payload))
                msg = expect_refusal("invalid_params", ans, msgid)
                assert text in msg, (payload, msg)
            # Over rpc.max_message_bytes (4096 here): refused before decoding.
            huge = msgpack.packb([0, 10, "ping", [{"pad": "x" * 10000}]])
            msg = expect_refusal("limit_exceeded", req.answer(req.publish("vigil.e1.rpc", huge)), 0)
            assert "rpc.max_message_bytes (4096)" in msg, msg
            # A bad Vigil-Client header.
            ans = req.answer(req.publish("vigil.e1.rpc", msgpack.packb([0, 11, "ping", []]),
                                         client="a b"))
            assert "Vigil-Client" in expect_refusal("invalid_params", ans, 0)
            rpc = rpc_info(req)
            assert rpc["malformed"] == len(cases), rpc
            assert rpc["refused"] == 2, rpc
            # Nothing reached the API: the only virtual connection is the
            # one this api_info made.
            assert rpc["clients"] == 1, rpc
            # The engine is unharmed, over the broker and its socket.
            assert req.call("vigil.e1.rpc", "ping")["api_level"] == 1
            assert engine.call("ping")["api_level"] == 1
        finally:
            req.close()
    with_fleet(tmp, body, rpc={"max_message_bytes": 4096})


# --- virtual connections ---------------------------------------------------

def test_an_idle_requester_is_closed_and_its_named_session_lingers(tmp):
    def body(nats, engine):
        req = Requester(nats.port)
        try:
            req.call("vigil.e1.rpc", "session_open", client="gw", session="kept")
            assert rpc_info(req, "vigil.e1.keep2.rpc")["clients"] == 2
            deadline = time.monotonic() + 60
            # Both close after 1 s without requests; api_info on a third
            # requester's connection watches them go.
            while rpc_info(req, "vigil.e1.watch.rpc")["clients_idle_closed"] < 2:
                assert time.monotonic() < deadline, "the idle requesters were never closed"
                time.sleep(0.2)
            sessions = engine.call("session_list", all=True)["sessions"]
            assert "kept" in [s["session"] for s in sessions], sessions
            # The requester comes back to a new connection: it opens again.
            assert req.call("vigil.e1.rpc", "session_open", client="gw",
                            session="kept")["resumed"] is True
            # Past nats.max_clients (3 here: watch, gw, c3).
            req.call("vigil.e1.rpc", "ping", client="c3")
            expect_refusal("limit_exceeded", req.frame("vigil.e1.rpc", "ping", None, 3, "c4"), 3)
        finally:
            req.close()
    with_fleet(tmp, body, nats={"client_idle_ms": 1000, "max_clients": 3})


def test_a_virtual_connection_closing_does_not_end_an_embedded_engine(tmp):
    """vigild --stdio ends when its one connection closes; a requester's
    virtual connection closing beside it is not that connection."""
    server = NatsServer(tmp)
    engine = None
    try:
        cfg = default_config(nats={"client_idle_ms": 1000})
        engine = Engine("stdio", cfg, extra_args=["--nats", server.url(), "--nats-engine", "e1"])
        started = engine.call("monitor_start", command="sleep 60")
        req = Requester(server.port)
        try:
            assert req.call("vigil.e1.rpc", "ping", client="once")["api_level"] == 1
        finally:
            req.close()
        deadline = time.monotonic() + 60
        while engine.call("api_info")["nats"]["rpc"]["clients_idle_closed"] < 1:
            assert time.monotonic() < deadline, "the idle requester was never closed"
            time.sleep(0.2)
        assert engine.proc.poll() is None, "the engine exited"
        status = engine.call("monitor_status", monitor_id=started["monitor_id"])
        assert status["state"] == "running", status
    finally:
        reports = engine.close() if engine is not None else []
        server.close()
    assert not reports, reports


# --- the CLI over NATS --------------------------------------------------------

def test_the_cli_works_through_nats(tmp):
    """vigil --nats URL --engine e1: start, list, output, stop and sessions
    with no socket, as a NATS user granted the one session."""
    def body(nats, engine):
        url = nats.url("s1", "s1pw")
        env = dict(os.environ, VIGIL_SOCKET=os.path.join(tmp, "no-engine-here.sock"),
                   VIGIL_NATS_INBOX="_INBOX_s1")

        def vigil(*args, ok=True):
            p = subprocess.run([vigiltest.VIGIL, "--nats", url, "--engine", "e1",
                                "--session", "s1"] + list(args),
                               capture_output=True, text=True, timeout=120, env=env, cwd=tmp)
            assert (p.returncode == 0) == ok, (args, p.returncode, p.stdout, p.stderr)
            return p

        mid = vigil("start", "--", "sh", "-c", "echo hello-over-nats; sleep 60").stdout.strip()
        assert mid.startswith("mon_"), mid
        listed = vigil("list").stdout
        assert mid in listed, listed
        # The engine saw it in s1, as its socket shows.
        mons = engine.call("session_open", session="s1") and \
            engine.call("monitor_list", session="s1")["monitors"]
        assert [m["monitor_id"] for m in mons] == [mid], mons
        deadline = time.monotonic() + 60
        while "hello-over-nats" not in vigil("output", mid).stdout:
            assert time.monotonic() < deadline, "the line never showed"
            time.sleep(0.2)
        vigil("stop", mid)
        assert engine.call("monitor_status", session="s1", monitor_id=mid)["state"] != "running"
        # sessions spans sessions: the engine's subject, which this user
        # may not publish to; the server's refusal is said at once.
        p = vigil("sessions", ok=False)
        assert "Permissions Violation" in p.stderr and "vigil.e1.rpc" in p.stderr, p.stderr
        # A command that needs the notification stream is refused up front.
        p = vigil("watch", ok=False)
        assert p.returncode == 2 and "does not work through --nats" in p.stderr, p.stderr
        # No engine of that name (a user who may send anywhere): said at
        # once, not at the deadline.
        p = subprocess.run([vigiltest.VIGIL, "--nats", nats.url("engine", "engpw"), "--engine",
                            "e9", "--session", "s1",
                            "list"], capture_output=True, text=True, timeout=60, env=env, cwd=tmp)
        assert p.returncode == 1 and "no engine answers on vigil.e9.s1.rpc" in p.stderr, p.stderr
    with_fleet(tmp, body, nats_config=AUTH, url_user=("engine", "engpw"))


# --- NATS permissions ------------------------------------------------------

AUTH = """
authorization {
  users = [
    {user: engine, password: engpw}
    {user: whole, password: wholepw,
     permissions: {publish: ["vigil.e1.rpc"], subscribe: ["_INBOX_whole.>"]}}
    {user: s1, password: s1pw,
     permissions: {publish: ["vigil.e1.s1.>"], subscribe: ["_INBOX_s1.>", "vigil.e1.s1.>"]}}
  ]
}
"""


def test_nats_permissions_decide_who_reaches_what(tmp):
    def body(nats, engine):
        whole = Requester(nats.port, "whole", "wholepw", inbox="_INBOX_whole")
        s1 = Requester(nats.port, "s1", "s1pw", inbox="_INBOX_s1")
        try:
            assert whole.call("vigil.e1.rpc", "ping")["api_level"] == 1
            # s1 may not publish on the engine's subject: the server refuses
            # it and tells the requester; the engine never sees it.
            s1.publish("vigil.e1.rpc", msgpack.packb([0, 1, "session_list", []]))
            s1.flush()
            assert any("Permissions Violation" in e and "vigil.e1.rpc" in e for e in s1.errors), \
                s1.errors
            # Nor on another session's.
            s1.publish("vigil.e1.s2.rpc", msgpack.packb([0, 1, "ping", []]))
            s1.flush()
            assert any("vigil.e1.s2.rpc" in e for e in s1.errors), s1.errors
            # Its own session's subject is its session.
            assert s1.call("vigil.e1.s1.rpc", "session_open")["session"] == "s1"
            started = s1.call("vigil.e1.s1.rpc", "monitor_start", command="echo hi")
            assert started["monitor_id"]
            expect_refusal("denied", s1.frame("vigil.e1.s1.rpc", "session_list", None, 5), 5)
            rpc = rpc_info(whole)
            # ping, session_open, monitor_start, session_list, this api_info.
            assert rpc["requests"] == 5, rpc
            assert rpc["refused"] == 1, rpc
        finally:
            whole.close()
            s1.close()
    with_fleet(tmp, body, nats_config=AUTH, url_user=("engine", "engpw"))


if __name__ == "__main__":
    if not os.path.exists(NATS_SERVER):
        print("SKIP: no nats-server at %s" % NATS_SERVER)
        sys.exit(0)
    sys.exit(run_plain_tests([
        test_ping_and_api_info_over_the_engine_subject,
        test_a_session_subject_serves_its_session,
        test_a_session_subject_refuses_other_sessions,
        test_malformed_payloads_are_answered_and_counted,
        test_an_idle_requester_is_closed_and_its_named_session_lingers,
        test_a_virtual_connection_closing_does_not_end_an_embedded_engine,
        test_nats_permissions_decide_who_reaches_what,
        test_the_cli_works_through_nats,
    ], prefix="vigil-fleetrpc-"))
