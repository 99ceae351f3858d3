#!/usr/bin/env python3
"""`vigil watch --nats URL --session S` against a real nats-server with
JetStream (docs/fleet.md, docs/cli.md's watch).

Each test starts its own `nats-server -js` on a free port of 127.0.0.1 with
a private store directory, and stops it however the test ends. The engines'
side is played by the test itself: it speaks the NATS text protocol over a
socket for the few things it needs (create the stream, publish notification
messages with the fleet's headers and wait for JetStream's acknowledgment,
ask for a consumer's state), so nothing here depends on vigild publishing.
What is asserted is what a person sees: the notifications printed in order,
each once; a second watch with the same durable printing only what came
after; malformed messages not printed, but counted and acked; clear errors
for a bad URL, an unreachable server, a server without JetStream, a missing
stream and a refused permission."""

import json
import msgpack
import os
import queue
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vigiltest import VIGIL, run_plain_tests  # noqa: E402

NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"
EPOCH = "3f9c2a61d07be485"
DEADLINE = 60  # seconds: CI is a loaded 2-core machine


def free_port():
    """A port nobody listens on now (the kernel's pick, released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NatsClient:
    """The NATS text protocol, just enough for the tests: CONNECT, PUB and
    HPUB with a reply inbox, and the MSG/HMSG that answer them."""

    def __init__(self, port, user=None, password=None, timeout=DEADLINE):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.inbox_n = 0
        self.sid = 0
        line = self._line()
        assert line.startswith(b"INFO "), line
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                   "protocol": 1, "name": "test_cli_watch_nats"}
        if user:
            connect.update(user=user, **{"pass": password})
        self.sock.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        while True:
            line = self._line()
            if line == b"PONG":
                break
            assert not line.startswith(b"-ERR"), line

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the NATS server closed the connection")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _bytes(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def request(self, subject, payload=b"", headers=None):
        """Publishes payload (with headers, a dict) and returns the answer's
        (headers block, payload)."""
        self.inbox_n += 1
        self.sid += 1
        inbox = "_INBOX.test.%d" % self.inbox_n
        out = b"SUB %s %d\r\n" % (inbox.encode(), self.sid)
        if headers is None:
            out += b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), inbox.encode(), len(payload),
                                                payload)
        else:
            hdr = b"NATS/1.0\r\n" + b"".join(
                b"%s: %s\r\n" % (k.encode(), v.encode()) for k, v in headers.items()) + b"\r\n"
            out += b"HPUB %s %s %d %d\r\n%s%s\r\n" % (subject.encode(), inbox.encode(), len(hdr),
                                                      len(hdr) + len(payload), hdr, payload)
        out += b"UNSUB %d 1\r\n" % self.sid
        self.sock.sendall(out)
        while True:
            line = self._line()
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
                continue
            if line.startswith(b"-ERR"):
                raise AssertionError("the server refused: %r" % line)
            words = line.split()
            if words[0] == b"MSG":
                return b"", self._bytes(int(words[-1]))
            if words[0] == b"HMSG":
                hlen, total = int(words[-2]), int(words[-1])
                data = self._bytes(total)
                return data[:hlen], data[hlen:]

    def js(self, api, body=None):
        """A JetStream API call ($JS.API.<api>): its JSON answer."""
        hdr, data = self.request("$JS.API." + api, json.dumps(body).encode() if body else b"")
        assert data, "no answer from JetStream to %s: %r" % (api, hdr)
        return json.loads(data)

    def close(self):
        self.sock.close()


class NatsServer:
    """nats-server on a free port of 127.0.0.1, with JetStream in a store
    under tmp unless jetstream=False, started and waited for; stop() always
    ends it."""

    def __init__(self, tmp, jetstream=True, config=None):
        self.port = free_port()
        self.url = "nats://127.0.0.1:%d" % self.port
        args = [NATS_SERVER, "-a", "127.0.0.1", "-p", str(self.port)]
        if jetstream:
            args += ["-js", "-sd", os.path.join(tmp, "js")]
        if config:
            path = os.path.join(tmp, "nats.conf")
            with open(path, "w") as f:
                f.write(config)
            args += ["-c", path]
        self.log = open(os.path.join(tmp, "nats-server.log"), "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + DEADLINE
        while True:  # the server tells nobody when it listens: a connect does
            assert self.proc.poll() is None, "nats-server exited: " + self.log_text()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "nats-server did not listen"
                time.sleep(0.02)

    def log_text(self):
        with open(self.log.name) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def make_stream(nc, name="VIGIL", subjects=("vigil.*.*.n",)):
    answer = nc.js("STREAM.CREATE." + name, {
        "name": name, "subjects": list(subjects), "storage": "file", "retention": "limits",
        "discard": "old", "duplicate_window": 120 * 10**9, "num_replicas": 1})
    assert "error" not in answer, answer


def token(session):
    return session.replace(".", "%2E")


def note(session, seq, text, epoch=EPOCH, monitor="mon_web000000001", type_="output"):
    """A notification map as an engine publishes it (docs/protocol.md 5)."""
    return {"session": session, "seq": seq, "type": type_, "monitor_id": monitor, "label": "web",
            "mode": "idle", "batch": seq, "lines": [], "incidents": [], "suppressed": 0,
            "state": "running", "epoch": epoch, "text": text,
            "at": "2026-11-21T06:41:55.223+00:00"}


def publish(nc, session, n, engine="hostb", headers=None, payload=None, msg_id=True):
    """Publishes notification n of session as engine does (subject, payload,
    the fleet's headers; headers overrides them) and waits for JetStream to
    acknowledge it."""
    h = {"Vigil-Engine": engine, "Vigil-Session": session, "Vigil-Seq": str(n["seq"]),
         "Vigil-Epoch": n["epoch"]}
    if msg_id:
        h["Nats-Msg-Id"] = "%s:%s:%d" % (n["epoch"], session, n["seq"])
    h.update(headers or {})
    subject = "vigil.%s.%s.n" % (engine, token(session))
    _, ack = nc.request(subject, payload if payload is not None else msgpack.packb(n), h)
    answer = json.loads(ack)
    assert "error" not in answer and answer.get("stream") == "VIGIL", answer


class Watch:
    """A running `vigil watch --nats`; its stdout read line by line by a
    thread, so a test waits for lines with a deadline."""

    def __init__(self, url, session, *extra, env=None):
        self.proc = subprocess.Popen([VIGIL, "watch", "--nats", url, "--session", session,
                                      *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(os.environ, **(env or {})))
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def take(self, n):
        """The next n lines of stdout (fails past the deadline)."""
        got = []
        deadline = time.monotonic() + DEADLINE
        while len(got) < n:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError("only %d of %d lines came: %r" % (len(got), n, got))
            assert line is not None, "stdout ended after %r; stderr: %s" % (
                got, self.proc.stderr.read().decode())
            got.append(line)
        return got

    def interrupt(self):
        """Ctrl-C: returns (status, the rest of stdout's lines, stderr)."""
        self.proc.send_signal(signal.SIGINT)
        rc = self.proc.wait(timeout=DEADLINE)
        self.reader.join(timeout=DEADLINE)
        rest = []
        while True:
            line = self.lines.get_nowait()
            if line is None:
                break
            rest.append(line)
        return rc, rest, self.proc.stderr.read().decode()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def consumer_state(nc, durable, stream="VIGIL"):
    info = nc.js("CONSUMER.INFO.%s.%s" % (stream, durable))
    assert "error" not in info, info
    return info


def run_vigil(*args, timeout=DEADLINE, env=None):
    return subprocess.run([VIGIL, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def with_server(fn):
    """Runs fn(tmp, server, nc) with a JetStream server, its stream, and a
    client of the test's own, all stopped after."""
    def wrapped(tmp):
        server = NatsServer(tmp)
        nc = None
        try:
            nc = NatsClient(server.port)
            make_stream(nc)
            fn(tmp, server, nc)
        finally:
            if nc:
                nc.close()
            server.stop()
    wrapped.__name__ = fn.__name__
    return wrapped


@with_server
def test_prints_in_order_then_resumes_after_the_last_acked(tmp, server, nc):
    session = "build.prod"
    for seq in (1, 2, 3):
        publish(nc, session, note(session, seq, "line %d\n" % seq))
    # A notification of another session is not this watch's.
    publish(nc, "other", note("other", 1, "not mine\n"))
    w = Watch(server.url, session, "--oneline")
    try:
        assert w.take(3) == ["1 mon_web000000001 line 1", "2 mon_web000000001 line 2",
                             "3 mon_web000000001 line 3"]
        # One published while the watch waits comes as it is published.
        publish(nc, session, note(session, 4, "line 4\n"))
        assert w.take(1) == ["4 mon_web000000001 line 4"]
        # Ctrl-C ends the pull in progress, not after it (30 s).
        start = time.monotonic()
        rc, rest, err = w.interrupt()
        assert time.monotonic() - start < 20, "Ctrl-C waited for the pull to expire"
    finally:
        w.kill()
    assert rc == 130, (rc, err)
    assert rest == [], rest
    assert "4 printed" in err, err
    user = re.sub(r"[^A-Za-z0-9_-]", "-", __import__("pwd").getpwuid(os.geteuid()).pw_name)
    durable = "watch-%s-build_prod" % user
    assert durable in err, err
    # Every printed one is acked: the durable's floor is past them.
    state = consumer_state(nc, durable)
    assert state["num_ack_pending"] == 0 and state["num_pending"] == 0, state
    assert state["config"]["filter_subject"] == "vigil.*.build%2Eprod.n", state

    for seq in (5, 6):
        publish(nc, session, note(session, seq, "line %d\n" % seq))
    w = Watch(server.url, session, "--oneline")
    try:
        assert w.take(2) == ["5 mon_web000000001 line 5", "6 mon_web000000001 line 6"]
        rc, rest, err = w.interrupt()
    finally:
        w.kill()
    assert rc == 130 and rest == [], (rc, rest, err)
    assert "2 printed" in err, err


@with_server
def test_it_ends_quietly_when_the_reader_of_its_output_goes(tmp, server, nc):
    session = "s1"
    publish(nc, session, note(session, 1, "one\n"))
    proc = subprocess.Popen([VIGIL, "watch", "--nats", server.url, "--session", session,
                             "--oneline", "--durable", "h1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out = b""
        deadline = time.monotonic() + DEADLINE
        while b"\n" not in out:  # as `| head -n 1` reads
            assert time.monotonic() < deadline, "no line came"
            ready, _, _ = select.select([proc.stdout], [], [], 1)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 4096)
                assert chunk, proc.stderr.read()
                out += chunk
        assert out == b"1 mon_web000000001 one\n", out
        proc.stdout.close()  # head exits: the watch, waiting for more, ends
        rc = proc.wait(timeout=DEADLINE)
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert rc == 0 and err == "", (rc, err)
    # What it printed was acked; what comes next is the next watch's.
    publish(nc, session, note(session, 2, "two\n"))
    w = Watch(server.url, session, "--oneline", "--durable", "h1")
    try:
        assert w.take(1) == ["2 mon_web000000001 two"]
        rc, rest, err = w.interrupt()
    finally:
        w.kill()
    assert rc == 130 and rest == [], (rc, rest, err)


@with_server
def test_text_is_the_envelope_and_nothing_raw_reaches_the_terminal(tmp, server, nc):
    session = "s1"
    envelope = "<<<VIGIL OBSERVATION 9f BEGIN>>>\nweb: ready on :3000\n<<<VIGIL OBSERVATION 9f END>>>\n"
    publish(nc, session, note(session, 1, envelope))
    # A forged one: an escape that would clear the screen, a bidi override, a
    # bell, a carriage return; the label too.
    forged = note(session, 2, "evil \x1b[2J\u202eexe.txt\x07\rcut\n")
    forged["label"] = "la\x1bbel"
    publish(nc, session, forged)
    w = Watch(server.url, session, "--durable", "t1")
    try:
        got = w.take(8)
        rc, rest, err = w.interrupt()
    finally:
        w.kill()
    assert rc == 130, (rc, err)
    assert re.match(r"^--- #1 web \(mon_web000000001\) output, idle, \d\d:\d\d:\d\d ---$", got[0]), got
    assert got[1:5] == ["<<<VIGIL OBSERVATION 9f BEGIN>>>", "web: ready on :3000",
                        "<<<VIGIL OBSERVATION 9f END>>>", ""], got
    assert got[5].startswith("--- #2 la\\ebel (mon_web000000001) output"), got
    assert got[6] == "evil \\e[2J\\u{202e}exe.txt\\x07\\rcut", got
    for line in got + rest:
        assert not any(ord(ch) < 0x20 or ch in "\x7f\u202e" for ch in line), repr(line)


@with_server
def test_json_prints_each_notification_map(tmp, server, nc):
    session = "s1"
    publish(nc, session, note(session, 1, "one\n"))
    publish(nc, session, note(session, 2, "two\n"))
    w = Watch(server.url, session, "--json", "--durable", "j1")
    try:
        got = [json.loads(line) for line in w.take(2)]
        w.interrupt()
    finally:
        w.kill()
    assert [(n["seq"], n["text"], n["epoch"]) for n in got] == [(1, "one\n", EPOCH),
                                                                (2, "two\n", EPOCH)], got


@with_server
def test_malformed_messages_are_acked_counted_and_not_printed(tmp, server, nc):
    session = "s1"
    publish(nc, session, note(session, 1, "good one\n"))
    # Headers that disagree with the payload.
    publish(nc, session, note(session, 2, "forged seq\n"), headers={"Vigil-Seq": "7"},
            msg_id=False)
    # A payload that is not a notification map.
    publish(nc, session, note(session, 3, "x"), payload=b"\xc1 not msgpack", msg_id=False)
    # The engine header not the subject's.
    publish(nc, session, note(session, 4, "wrong engine\n"), headers={"Vigil-Engine": "hostc"},
            msg_id=False)
    # The session header not the one watched (on this session's subject).
    publish(nc, session, note(session, 5, "wrong session\n"), headers={"Vigil-Session": "s2"},
            msg_id=False)
    # The engine's real seq 2 (the malformed ones are no notification of it:
    # a seq of theirs is nothing to wait for, nor to skip).
    publish(nc, session, note(session, 2, "good two\n"))
    w = Watch(server.url, session, "--oneline", "--durable", "m1")
    try:
        assert w.take(2) == ["1 mon_web000000001 good one", "2 mon_web000000001 good two"]
        rc, rest, err = w.interrupt()
    finally:
        w.kill()
    assert rc == 130 and rest == [], (rc, rest, err)
    assert err.count("skipped a malformed message") == 1, err
    assert "Vigil-Seq 7 disagrees with the payload's seq 2" in err, err
    assert "2 printed, 4 malformed skipped" in err, err
    state = consumer_state(nc, "m1")
    assert state["num_ack_pending"] == 0 and state["num_pending"] == 0, state


@with_server
def test_a_redelivered_notification_is_printed_once(tmp, server, nc):
    session = "s1"
    publish(nc, session, note(session, 1, "one\n"))
    publish(nc, session, note(session, 2, "two\n"))
    # The engine publishing seq 2 again past the duplicate window (no
    # Nats-Msg-Id here, so JetStream keeps both): the watch prints it once.
    publish(nc, session, note(session, 2, "two\n"), msg_id=False)
    publish(nc, session, note(session, 3, "three\n"))
    # An engine that lost its state directory: a new epoch, numbering anew.
    publish(nc, session, note(session, 1, "new epoch\n", epoch="00000000000000aa"))
    # One of the epoch it left behind, delivered late: not printed again.
    publish(nc, session, note(session, 3, "three\n"), msg_id=False)
    # An engine's send under a new id (docs/fleet.md, Forged ids).
    publish(nc, session, note(session, 2, "new two\n", epoch="00000000000000aa"),
            headers={"Nats-Msg-Id": "00000000000000aa:%s:2:1" % session})
    w = Watch(server.url, session, "--oneline", "--durable", "r1")
    try:
        assert w.take(5) == ["1 mon_web000000001 one", "2 mon_web000000001 two",
                             "3 mon_web000000001 three", "1 mon_web000000001 new epoch",
                             "2 mon_web000000001 new two"]
        rc, rest, err = w.interrupt()
    finally:
        w.kill()
    assert rc == 130 and rest == [], (rc, rest, err)
    assert "5 printed, 2 already printed skipped" in err, err


@with_server
def test_what_comes_ahead_is_held_back_and_printed_in_order(tmp, server, nc):
    # JetStream delivers a message whose ack never came again after the ack
    # wait, behind what came since: here seq 3 reaches the stream before 2.
    session = "s1"
    publish(nc, session, note(session, 1, "one\n"))
    w = Watch(server.url, session, "--oneline", "--durable", "o1")
    try:
        assert w.take(1) == ["1 mon_web000000001 one"]
        rc, rest, err = w.interrupt()
    finally:
        w.kill()
    assert rc == 130 and rest == [], (rc, rest, err)
    # A second run: it starts after the 1 the first printed (the durable's
    # ack floor), so 3, delivered first, is held back until 2 has come.
    publish(nc, session, note(session, 3, "three\n"))
    publish(nc, session, note(session, 2, "two\n"))
    w = Watch(server.url, session, "--oneline", "--durable", "o1")
    try:
        assert w.take(2) == ["2 mon_web000000001 two", "3 mon_web000000001 three"]
        # The same within a run: 5 before 4 comes out 4, 5.
        publish(nc, session, note(session, 5, "five\n"))
        publish(nc, session, note(session, 4, "four\n"))
        assert w.take(2) == ["4 mon_web000000001 four", "5 mon_web000000001 five"]
        rc, rest, err = w.interrupt()
    finally:
        w.kill()
    assert rc == 130 and rest == [], (rc, rest, err)
    assert "4 printed" in err and "held back to come in order" in err, err
    assert "gap" not in err, err
    state = consumer_state(nc, "o1")
    assert state["num_ack_pending"] == 0 and state["num_pending"] == 0, state


@with_server
def test_engine_filter_and_a_durable_of_another_subject(tmp, server, nc):
    session = "s1"
    publish(nc, session, note(session, 1, "from b\n"), engine="hostb")
    publish(nc, session, note(session, 1, "from c\n", epoch="00000000000000cc"), engine="hostc")
    w = Watch(server.url, session, "--oneline", "--engine", "hostc", "--durable", "e1")
    try:
        assert w.take(1) == ["1 mon_web000000001 from c"]
        rc, rest, err = w.interrupt()
    finally:
        w.kill()
    assert rc == 130 and rest == [], (rc, rest, err)
    # The same durable for every engine's subject: refused, naming both.
    r = run_vigil("watch", "--nats", server.url, "--session", session, "--durable", "e1")
    assert r.returncode == 1, r
    assert "durable consumer e1 on stream VIGIL is not this watch's" in r.stderr, r.stderr
    assert "vigil.hostc.s1.n" in r.stderr and "vigil.*.s1.n" in r.stderr, r.stderr


def test_unreachable_server_is_a_clear_error(tmp):
    port = free_port()
    start = time.monotonic()
    r = run_vigil("watch", "--nats", "nats://127.0.0.1:%d" % port, "--session", "s1")
    assert r.returncode == 1, r
    assert "cannot reach a NATS server at nats://127.0.0.1:%d" % port in r.stderr, r.stderr
    assert "conn.c" not in r.stderr, r.stderr  # nats.c's source location means nothing here
    assert time.monotonic() - start < 30, "the connect was not bounded"


def test_a_server_without_jetstream_is_a_clear_error(tmp):
    server = NatsServer(tmp, jetstream=False)
    try:
        r = run_vigil("watch", "--nats", server.url, "--session", "s1")
    finally:
        server.stop()
    assert r.returncode == 1, r
    assert "has no JetStream" in r.stderr and server.url in r.stderr, r.stderr


@with_server
def test_a_missing_stream_is_a_clear_error(tmp, server, nc):
    r = run_vigil("watch", "--nats", server.url, "--session", "s1", "--stream", "ELSEWHERE")
    assert r.returncode == 1, r
    assert "has no stream ELSEWHERE" in r.stderr, r.stderr
    # A stream of another shape: named with what it takes.
    make_stream(nc, "ODD", ("odd.>",))
    r = run_vigil("watch", "--nats", server.url, "--session", "s1", "--stream", "ODD")
    assert r.returncode == 1, r
    assert "stream ODD" in r.stderr and "does not take vigil.*.*.n" in r.stderr, r.stderr
    assert "odd.>" in r.stderr, r.stderr


@with_server
def test_every_nats_command_takes_the_creds_file_of_vigil_nats_creds(tmp, server, nc):
    # $VIGIL_NATS_CREDS is read by watch as by the requests (it was read by
    # the requests only, so a watch on a fleet secured with creds files
    # connected without them). A file that cannot be read is named.
    creds = os.path.join(tmp, "missing.creds")
    env = dict(os.environ, VIGIL_NATS_CREDS=creds)
    for args in (("watch", "--nats", server.url, "--session", "s1"),
                 ("--nats", server.url, "--engine", "e1", "--session", "s1", "list")):
        r = run_vigil(*args, env=env)
        assert r.returncode == 1, (args, r)
        assert "error opening file '%s'" % creds in r.stderr, (args, r.stderr)
        assert ".c:" not in r.stderr, r.stderr  # nats.c's source location means nothing here


def test_a_refused_permission_names_the_subject(tmp):
    config = """
jetstream { store_dir: "%s" }
authorization {
  users = [
    {user: admin, password: admin}
    {user: watcher, password: pw,
     permissions: {publish: {allow: ["$JS.API.INFO", "$JS.API.STREAM.INFO.>"]},
                   subscribe: {allow: ["_INBOX.>"]}}}
    {user: deaf, password: pw,
     permissions: {publish: {allow: [">"]}, subscribe: {allow: ["elsewhere.>"]}}}
  ]
}
""" % os.path.join(tmp, "js")
    server = NatsServer(tmp, jetstream=False, config=config)
    nc = None
    try:
        nc = NatsClient(server.port, "admin", "admin")
        make_stream(nc)
        r = run_vigil("watch", "--nats", "nats://watcher:pw@127.0.0.1:%d" % server.port,
                      "--session", "s1", "--durable", "p1")
        deaf = run_vigil("watch", "--nats", "nats://deaf:pw@127.0.0.1:%d" % server.port,
                         "--session", "s1", "--durable", "p2")
        # Given the inbox prefix its permissions allow ($VIGIL_NATS_INBOX),
        # the same user watches: the pulled messages come there.
        publish(nc, "s1", note("s1", 1, "heard\n"))
        w = Watch("nats://deaf:pw@127.0.0.1:%d" % server.port, "s1", "--oneline",
                  "--durable", "p3", env={"VIGIL_NATS_INBOX": "elsewhere"})
        try:
            assert w.take(1) == ["1 mon_web000000001 heard"]
            w.interrupt()
        finally:
            w.kill()
    finally:
        if nc:
            nc.close()
        server.stop()
    assert r.returncode == 1, r
    assert "permission denied" in r.stderr, r.stderr
    # The URL is named, its password never.
    assert "nats://watcher:***@127.0.0.1:%d" % server.port in r.stderr, r.stderr
    assert "pw@" not in r.stderr, r.stderr
    # An account that may not subscribe to its inboxes: named too.
    assert deaf.returncode == 1, deaf
    assert "permission denied" in deaf.stderr, deaf.stderr
    assert "Permissions Violation for Subscription to" in deaf.stderr, deaf.stderr
    assert "_INBOX." in deaf.stderr, deaf.stderr
    assert "$JS.API.CONSUMER." in r.stderr and "VIGIL.p1" in r.stderr, r.stderr


def test_a_user_not_allowed_to_read_back_the_ack_floor_still_watches(tmp):
    # Reading back the message the durable acked last needs
    # $JS.API.STREAM.MSG.GET: without it the watch says so and goes on, each
    # engine starting at its first message of the run.
    config = """
jetstream { store_dir: "%s" }
authorization {
  users = [
    {user: admin, password: admin}
    {user: reader, password: pw,
     permissions: {publish: {allow: ["$JS.API.INFO", "$JS.API.STREAM.INFO.>",
                                     "$JS.API.CONSUMER.>", "$JS.ACK.>"]},
                   subscribe: {allow: ["_INBOX.>"]}}}
  ]
}
""" % os.path.join(tmp, "js")
    server = NatsServer(tmp, jetstream=False, config=config)
    nc = None
    url = "nats://reader:pw@127.0.0.1:%d" % server.port
    try:
        nc = NatsClient(server.port, "admin", "admin")
        make_stream(nc)
        publish(nc, "s1", note("s1", 1, "one\n"))
        w = Watch(url, "s1", "--oneline", "--durable", "f1")
        try:
            assert w.take(1) == ["1 mon_web000000001 one"]
            rc, rest, err = w.interrupt()
        finally:
            w.kill()
        assert rc == 130, (rc, err)
        publish(nc, "s1", note("s1", 2, "two\n"))
        w = Watch(url, "s1", "--oneline", "--durable", "f1")
        try:
            assert w.take(1) == ["2 mon_web000000001 two"]
            publish(nc, "s1", note("s1", 3, "three\n"))
            assert w.take(1) == ["3 mon_web000000001 three"]
            rc, rest, err = w.interrupt()
        finally:
            w.kill()
    finally:
        if nc:
            nc.close()
        server.stop()
    assert rc == 130 and rest == [], (rc, rest, err)
    assert "cannot read back the message durable f1 acked last" in err, err
    assert "STREAM.MSG.GET" in err, err
    assert "2 printed" in err, err


def test_usage_errors_name_the_option(tmp):
    cases = [
        (["--nats", "http://127.0.0.1:4222"], "is not a NATS URL: its scheme"),
        (["--nats", "nats://127.0.0.1:99999"], "its port is not a number"),
        (["--nats", ""], "it is empty"),
        (["--nats", "ftp://u:secret@h:1"], "\"ftp://u:***@h:1\" is not a NATS URL"),
        (["--nats", "nats://127.0.0.1:4222", "--since", "3"], "--since"),
        (["--nats", "nats://127.0.0.1:4222", "--engine", "a.b"], "--engine: \"a.b\""),
        (["--nats", "nats://127.0.0.1:4222", "--durable", "a.b"], "--durable: \"a.b\""),
        (["--nats", "nats://127.0.0.1:4222", "--durable", "a%2Eb"], "--durable: \"a%2Eb\""),
        (["--engine", "hostb"], "--engine goes with --nats URL"),
        (["--durable", "d"], "--durable goes with --nats URL"),
    ]
    for args, want in cases:
        r = run_vigil("watch", "--session", "s1", *args)
        assert r.returncode == 2, (args, r)
        assert want in r.stderr, (args, r.stderr)
    r = run_vigil("watch", "--nats", "nats://127.0.0.1:4222", "--session", "a/b")
    assert r.returncode == 2 and "is not a session name the fleet carries" in r.stderr, r


if __name__ == "__main__":
    sys.exit(run_plain_tests([
        test_prints_in_order_then_resumes_after_the_last_acked,
        test_it_ends_quietly_when_the_reader_of_its_output_goes,
        test_text_is_the_envelope_and_nothing_raw_reaches_the_terminal,
        test_json_prints_each_notification_map,
        test_malformed_messages_are_acked_counted_and_not_printed,
        test_a_redelivered_notification_is_printed_once,
        test_what_comes_ahead_is_held_back_and_printed_in_order,
        test_engine_filter_and_a_durable_of_another_subject,
        test_unreachable_server_is_a_clear_error,
        test_a_server_without_jetstream_is_a_clear_error,
        test_a_missing_stream_is_a_clear_error,
        test_every_nats_command_takes_the_creds_file_of_vigil_nats_creds,
        test_a_refused_permission_names_the_subject,
        test_a_user_not_allowed_to_read_back_the_ack_floor_still_watches,
        test_usage_errors_name_the_option,
    ], prefix="vigil-natswatch-"))
