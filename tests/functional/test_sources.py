#!/usr/bin/env python3
"""File sources (issue 26, point 4; core/source/filesrc.c, docs/sources.md):
`source: {file: PATH}` follows a file as `tail -F` does, with no process:
lines appended arrive and go through the same pipeline (patterns,
incidents, batches, the envelope); a rotation (mv + a new file at the path)
goes on with the new file, a truncation starts again at 0 and says so, a
deletion is told once and the file followed again when it reappears. The
path is judged by monitor.workspace_roots (its real path under a root, the
opened descriptor checked again), never by the command allowlist; every
reopen is judged again, so a symlink swapped in after the start is refused
and told. A directory and a FIFO are refused. One engine follows many files
with no child process.

`source: {ws: URL}` (core/source/wssrc.c) follows a WebSocket on loopback:
each message is a line, pings are answered, a frame over line_max_bytes is
cut, the server's close ends the monitor; wss:// and hosts off loopback are
refused. The server here is written with the standard library only.

Every wait is on an event (a notification, a reply) with a generous bound."""

import base64
import hashlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (VIGIL, Engine, default_config, expect_error, parent, run_tests,
                       socket_only, wait_for)

BOUND_S = 60
ROOT = os.path.realpath(tempfile.mkdtemp(prefix="vigil-src-root-"))
OUTSIDE = os.path.realpath(tempfile.mkdtemp(prefix="vigil-src-out-"))


def config():
    return default_config(monitor={"workspace_roots": [ROOT]})


def fresh(name):
    """A new directory under the root for one test (tests run twice)."""
    d = tempfile.mkdtemp(prefix=name + "-", dir=ROOT)
    return d


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def mine(notes, mid):
    return [n for n in notes if n.get("monitor_id") == mid]


def wait_line(c, mid, text, what=None):
    """Waits for an output notification of mid holding a line equal to text;
    returns it."""
    return c.wait_notification(
        lambda n: n["monitor_id"] == mid and n["type"] == "output" and
        any(l["text"] == text for l in n.get("lines") or []),
        BOUND_S, what or "the line %r" % text)


def wait_reason(c, mid, words):
    return c.wait_notification(
        lambda n: n["monitor_id"] == mid and words in (n.get("reason") or ""),
        BOUND_S, "a notification saying %r" % words)


def children(pid):
    """The pids whose parent is pid (vigiltest.parent of every process)."""
    out = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and parent(int(entry)) == pid:
                out.append(int(entry))
        except OSError:
            continue  # gone meanwhile
    return out


def test_lines_appended_arrive_and_a_crash_is_an_incident(e):
    c = e.main
    d = fresh("append")
    path = os.path.join(d, "app.log")
    append(path, "old line, before the start\n")
    r = c.call("monitor_start", source={"file": path}, label="app-log", notify="lines")
    mid = r["monitor_id"]
    assert r["pid"] is None, r
    append(path, "server listening on 3000\n")
    n = wait_line(c, mid, "server listening on 3000")
    # From the end by default: the line before the start is not told.
    assert not any(l["text"].startswith("old line") for l in n["lines"]), n
    append(path, "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n"
                 "    main()\nKeyError: user_id\n")
    inc = c.wait_notification(lambda n: n["monitor_id"] == mid and n.get("incidents"),
                              BOUND_S, "the incident")
    assert inc["incidents"][0]["pattern_name"] == "python-traceback", inc["incidents"]
    assert "KeyError: user_id" in inc["text"], inc["text"]
    st = c.call("monitor_status", monitor_id=mid)
    assert st["state"] == "running" and st["pid"] is None, st
    assert st["source"]["file"] == path and st["source"]["kind"] == "file", st
    assert st["counters"]["incidents"] == 1, st
    listed = [x for x in c.call("monitor_list")["monitors"] if x["monitor_id"] == mid]
    assert listed and listed[0]["source"]["file"] == path, listed
    r = c.call("monitor_stop", monitor_id=mid)
    assert r["status"] == "stopped", r
    ending = c.wait_ending(mid, timeout=BOUND_S)
    assert ending["type"] == "stopped", ending
    st = c.call("monitor_status", monitor_id=mid)
    assert st["state"] == "stopped", st


def test_from_start_and_from_an_offset(e):
    c = e.main
    d = fresh("from")
    path = os.path.join(d, "a.log")
    append(path, "first\nsecond\n")
    mid = c.call("monitor_start", source={"file": path, "from": "start"},
                 notify="lines")["monitor_id"]
    wait_line(c, mid, "first")
    mid2 = c.call("monitor_start", source={"file": path, "from": "6"},
                  notify="lines")["monitor_id"]
    n = wait_line(c, mid2, "second")
    assert [l["text"] for l in n["lines"]] == ["second"], n
    err = expect_error("invalid_params", c.call, "monitor_start",
                       source={"file": path, "from": "middle"})
    assert "source.from" in err.message and "middle" in err.message, err.message


def test_a_rotated_file_is_followed_at_its_path(e):
    c = e.main
    d = fresh("rotate")
    path = os.path.join(d, "app.log")
    append(path, "")
    mid = c.call("monitor_start", source={"file": path}, notify="lines")["monitor_id"]
    append(path, "before rotation\n")
    wait_line(c, mid, "before rotation")
    os.rename(path, path + ".1")
    append(path, "after rotation\n")
    wait_line(c, mid, "after rotation")
    append(path, "and more\n")
    wait_line(c, mid, "and more")
    st = c.call("monitor_status", monitor_id=mid)
    assert st["source"]["rotations"] == 1, st


def test_lines_written_to_the_old_file_after_a_rename_are_read_before_the_new_one(e):
    c = e.main
    d = fresh("late")
    path = os.path.join(d, "app.log")
    append(path, "")
    mid = c.call("monitor_start", source={"file": path}, notify="lines")["monitor_id"]
    append(path, "first\n")
    wait_line(c, mid, "first")
    os.rename(path, path + ".1")
    # The writer still has the old file open: it writes on before it reopens.
    append(path + ".1", "late, in the old file\n")
    wait_line(c, mid, "late, in the old file")
    append(path, "in the new file\n")
    wait_line(c, mid, "in the new file")


def test_a_symlink_to_a_file_in_another_directory_is_followed(e):
    # The link's directory sees no write to the file it points to: the
    # engine must watch where the file really is (both under the root).
    c = e.main
    d = fresh("link")
    elsewhere = fresh("target")
    real = os.path.join(elsewhere, "real.log")
    append(real, "")
    link = os.path.join(d, "current.log")
    os.symlink(real, link)
    mid = c.call("monitor_start", source={"file": link}, notify="lines")["monitor_id"]
    append(real, "through the link\n")
    wait_line(c, mid, "through the link")


def test_a_file_nobody_writes_any_more_is_told_quiet_and_resumed(e):
    # quiet_after_ms on a source: a log that stops growing is a stall too.
    c = e.main
    d = fresh("quiet")
    path = os.path.join(d, "app.log")
    append(path, "")
    mid = c.call("monitor_start", source={"file": path}, notify="lines",
                 quiet_after_ms=300)["monitor_id"]
    append(path, "the last line for a while\n")
    wait_line(c, mid, "the last line for a while")
    n = wait_reason(c, mid, "no output for")
    assert [l["text"] for l in n["lines"]] == ["the last line for a while"], n
    append(path, "back\n")
    wait_reason(c, mid, "output resumed after")


def test_a_truncated_file_starts_again_at_zero_and_says_so(e):
    c = e.main
    d = fresh("trunc")
    path = os.path.join(d, "app.log")
    append(path, "x" * 100 + "\n")
    mid = c.call("monitor_start", source={"file": path}, notify="lines")["monitor_id"]
    append(path, "line one\n")
    wait_line(c, mid, "line one")
    with open(path, "w") as f:
        f.write("short\n")
    wait_reason(c, mid, "truncated")
    wait_line(c, mid, "short")
    st = c.call("monitor_status", monitor_id=mid)
    assert st["source"]["truncations"] == 1, st


def test_a_deleted_file_is_told_once_and_followed_when_it_reappears(e):
    c = e.main
    d = fresh("delete")
    path = os.path.join(d, "app.log")
    append(path, "")
    mid = c.call("monitor_start", source={"file": path}, notify="lines")["monitor_id"]
    append(path, "one\n")
    wait_line(c, mid, "one")
    os.unlink(path)
    told = wait_reason(c, mid, "deleted")
    assert "waiting for it to reappear" in told["reason"], told
    assert "reason: " in told["text"], told["text"]
    # Something else in the directory changes: not told again.
    append(os.path.join(d, "other"), "x\n")
    append(path, "two\n")
    wait_line(c, mid, "two")
    notes = mine(c.drain(), mid)
    assert not [n for n in notes if "deleted" in (n.get("reason") or "")], notes
    st = c.call("monitor_status", monitor_id=mid)
    assert st["state"] == "running" and st["source"]["deletions"] == 1, st


def test_paths_outside_the_roots_and_what_is_no_file_are_refused(e):
    c = e.main
    d = fresh("refuse")
    outside = os.path.join(OUTSIDE, "secret.log")
    append(outside, "secret\n")
    err = expect_error("denied", c.call, "monitor_start", source={"file": outside})
    assert "source.file" in err.message and "workspace_roots" in err.message, err.message
    link = os.path.join(d, "link.log")
    os.symlink(outside, link)
    err = expect_error("denied", c.call, "monitor_start", source={"file": link})
    assert "workspace_roots" in err.message and OUTSIDE in err.message, err.message
    err = expect_error("invalid_params", c.call, "monitor_start", source={"file": d})
    assert "is a directory" in err.message, err.message
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    err = expect_error("invalid_params", c.call, "monitor_start", source={"file": fifo})
    assert "FIFO" in err.message, err.message
    err = expect_error("invalid_params", c.call, "monitor_start",
                       source={"file": os.path.join(d, "none.log")})
    assert "does not exist" in err.message, err.message
    err = expect_error("invalid_params", c.call, "monitor_start", source={"file": "rel.log"})
    assert "absolute" in err.message, err.message
    # Exactly one of command, argv and source.
    err = expect_error("invalid_params", c.call, "monitor_start", argv=["true"],
                       source={"file": os.path.join(d, "x")})
    assert "source" in err.message, err.message
    err = expect_error("invalid_params", c.call, "monitor_start", source={"tail": "x"})
    assert "source" in err.message, err.message
    assert c.call("monitor_list")["monitors"] == [], "a refused start left a monitor"


def test_a_symlink_swapped_in_before_a_reopen_is_refused_and_told(e):
    c = e.main
    d = fresh("swap")
    path = os.path.join(d, "app.log")
    append(path, "")
    outside = os.path.join(OUTSIDE, "swapped.log")
    append(outside, "")
    mid = c.call("monitor_start", source={"file": path}, notify="lines")["monitor_id"]
    append(path, "checked\n")
    wait_line(c, mid, "checked")
    # The race made deterministic: the path becomes a symlink out of the
    # root after the start's check; the rotation's reopen judges it again.
    os.rename(path, path + ".1")
    os.symlink(outside, path)
    append(outside, "secret after the swap\n")
    ending = c.wait_ending(mid, timeout=BOUND_S)
    assert ending["type"] == "exit" and ending["state"] == "failed", ending
    assert "workspace_roots" in ending["text"], ending["text"]
    assert "secret after the swap" not in ending["text"], ending["text"]
    st = c.call("monitor_status", monitor_id=mid)
    assert st["state"] == "failed" and "workspace_roots" in st["reason"], st
    out = c.call("monitor_output", monitor_id=mid)["lines"]
    assert not [l for l in out if "secret" in l["text"]], out


def test_one_engine_follows_twenty_files_with_no_process(e):
    c = e.main
    d = fresh("many")
    for name in ("files-0", "files-1"):
        c.call("session_open", session=name)
    mids = []
    for i in range(20):
        path = os.path.join(d, "f%02d.log" % i)
        append(path, "")
        # Two sessions: a session holds at most 16 (its bound).
        mids.append((c.call("monitor_start", source={"file": path}, notify="lines",
                            session="files-%d" % (i // 10))["monitor_id"], path))
    assert children(e.proc.pid) == [], children(e.proc.pid)
    for i, (mid, path) in enumerate(mids):
        append(path, "hello from %d\n" % i)
    for i, (mid, path) in enumerate(mids):
        wait_line(c, mid, "hello from %d" % i)
    assert children(e.proc.pid) == [], children(e.proc.pid)
    for i, (mid, _) in enumerate(mids):
        c.call("monitor_stop", monitor_id=mid, session="files-%d" % (i // 10))
        c.wait_ending(mid, timeout=BOUND_S)


# --- a WebSocket server (RFC 6455), standard library only ----------------

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(opcode, payload, fin=True):
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + struct.pack(">H", n)
    else:
        head += bytes([127]) + struct.pack(">Q", n)
    return head + payload


class WsServer:
    """Accepts one client on 127.0.0.1, answers its handshake (accept is
    the key's SHA-1, or `accept` when given), then sends what the test
    pushes and records the client's frames (unmasked: (opcode, payload),
    each checked to be masked)."""

    def __init__(self, accept=None):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.url = "ws://127.0.0.1:%d/logs" % self.port
        self.accept_override = accept
        self.conn = None
        self.request = None
        self.received = []
        self.cond = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def _recv_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.conn.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def _run(self):
        conn, _ = self.sock.accept()
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(4096)
        lines = head.decode().split("\r\n")
        key = [l.split(":", 1)[1].strip() for l in lines
               if l.lower().startswith("sec-websocket-key:")][0]
        accept = self.accept_override or base64.b64encode(
            hashlib.sha1((key + GUID).encode()).digest()).decode()
        conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % accept)
                     .encode())
        with self.cond:
            self.conn = conn
            self.request = lines
            self.cond.notify_all()
        try:
            while True:
                b0, b1 = self._recv_exact(2)
                n = b1 & 0x7F
                if n == 126:
                    n = struct.unpack(">H", self._recv_exact(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self._recv_exact(8))[0]
                assert b1 & 0x80, "a client frame that is not masked"
                mask = self._recv_exact(4)
                data = bytes(c ^ mask[i % 4] for i, c in enumerate(self._recv_exact(n)))
                with self.cond:
                    self.received.append((b0 & 0x0F, data))
                    self.cond.notify_all()
        except (EOFError, OSError):
            with self.cond:
                self.received.append(("eof", b""))
                self.cond.notify_all()

    def wait_connected(self):
        with self.cond:
            assert self.cond.wait_for(lambda: self.conn is not None, BOUND_S), "no client"

    def send(self, data):
        self.wait_connected()
        self.conn.sendall(data)

    def wait_frame(self, opcode):
        with self.cond:
            assert self.cond.wait_for(
                lambda: any(o == opcode for o, _ in self.received), BOUND_S), self.received
            return [p for o, p in self.received if o == opcode][0]

    def close(self):
        for s in (self.conn, self.sock):
            try:
                if s is not None:
                    s.close()
            except OSError:
                pass


def test_websocket_messages_arrive_as_lines_and_the_close_ends_it(e):
    c = e.main
    srv = WsServer()
    try:
        r = c.call("monitor_start", source={"ws": srv.url}, notify="lines", label="ws")
        mid = r["monitor_id"]
        assert r["pid"] is None, r
        srv.wait_connected()
        assert srv.request[0] == "GET /logs HTTP/1.1", srv.request
        srv.send(frame(1, b"hello ws"))
        wait_line(c, mid, "hello ws")
        srv.send(frame(2, b"binary message"))
        wait_line(c, mid, "binary message")
        # A message in three fragments, with a ping between them.
        srv.send(frame(1, b"frag", fin=False) + frame(0, b"men", fin=False) +
                 frame(9, b"are you there") + frame(0, b"ted"))
        wait_line(c, mid, "fragmented")
        assert srv.wait_frame(10) == b"are you there"
        srv.send(frame(1, b"two\nlines"))
        wait_line(c, mid, "lines")
        st = c.call("monitor_status", monitor_id=mid)
        assert st["source"]["kind"] == "ws" and st["source"]["ws"] == srv.url, st
        assert st["source"]["messages"] == 4 and st["source"]["pings"] == 1, st
        srv.send(frame(8, struct.pack(">H", 1000) + b"bye"))
        ending = c.wait_ending(mid, timeout=BOUND_S)
        assert ending["type"] == "exit" and ending["state"] == "exited", ending
        assert "closed the WebSocket (code 1000)" in ending["text"], ending["text"]
        assert struct.unpack(">H", srv.wait_frame(8)[:2])[0] == 1000
        out = [l["text"] for l in c.call("monitor_output", monitor_id=mid)["lines"]]
        assert out == ["hello ws", "binary message", "fragmented", "two", "lines"], out
    finally:
        srv.close()


def test_an_oversized_websocket_message_is_cut_at_line_max_bytes(e):
    c = e.main
    srv = WsServer()
    try:
        mid = c.call("monitor_start", source={"ws": srv.url}, notify="lines")["monitor_id"]
        srv.send(frame(1, b"x" * 100000))
        srv.send(frame(1, b"after the big one"))
        wait_line(c, mid, "after the big one")
        lines = c.call("monitor_output", monitor_id=mid)["lines"]
        assert lines[0]["truncated"] and len(lines[0]["text"]) <= 8192, lines[0]["text"][:40]
        st = c.call("monitor_status", monitor_id=mid)
        assert st["counters"]["truncated_lines"] == 1, st["counters"]
        assert st["counters"]["discarded_bytes"] >= 100000 - 8192, st["counters"]
        # A stop closes the connection with a close frame.
        assert c.call("monitor_stop", monitor_id=mid)["status"] == "stopped"
        assert c.wait_ending(mid, timeout=BOUND_S)["type"] == "stopped"
        assert struct.unpack(">H", srv.wait_frame(8)[:2])[0] == 1000
    finally:
        srv.close()


def test_a_wrong_handshake_and_urls_off_loopback_are_refused(e):
    c = e.main
    srv = WsServer(accept="bm90IHRoZSByaWdodCBrZXk=")
    try:
        mid = c.call("monitor_start", source={"ws": srv.url})["monitor_id"]
        ending = c.wait_ending(mid, timeout=BOUND_S)
        assert ending["state"] == "failed" and "Sec-WebSocket-Accept" in ending["text"], ending
    finally:
        srv.close()
    err = expect_error("invalid_params", c.call, "monitor_start",
                       source={"ws": "wss://127.0.0.1:1/x"})
    assert "TLS" in err.message, err.message
    for url in ("ws://10.1.2.3:80/", "ws://example.com/x", "ws://[2001:db8::1]:80/"):
        err = expect_error("denied", c.call, "monitor_start", source={"ws": url})
        assert "loopback" in err.message and "source.ws" in err.message, err.message
    err = expect_error("invalid_params", c.call, "monitor_start",
                       source={"ws": "ws://127.0.0.1:1/a b"})
    assert "path" in err.message, err.message
    err = expect_error("invalid_params", c.call, "monitor_start",
                       source={"ws": "ws://127.0.0.1:1/", "from": "start"})
    assert "from" in err.message, err.message
    assert children(e.proc.pid) == []


def cli(e, *args):
    return subprocess.run([VIGIL, "--socket", e.socket_path, "--session", "cli"] + list(args),
                          capture_output=True, text=True, timeout=60)


@socket_only
def test_the_cli_follows_a_file(e):
    d = fresh("cli")
    path = os.path.join(d, "c.log")
    append(path, "already there\n")
    here = os.getcwd()
    os.chdir(d)
    try:
        p = cli(e, "start", "--file", "c.log", "--from", "start", "--label", "clilog")
    finally:
        os.chdir(here)
    assert p.returncode == 0, p.stderr
    mid = p.stdout.strip()
    c = e.main
    c.call("session_open", session="cli")
    wait_for(lambda: [l["text"] for l in c.call("monitor_output", monitor_id=mid)["lines"]] ==
             ["already there"], "the file's line")
    st = c.call("monitor_status", monitor_id=mid)
    assert st["source"]["file"] == path and st["pid"] is None, st
    row = [l for l in cli(e, "list").stdout.splitlines() if l.startswith(mid)]
    assert len(row) == 1 and "--file " + path[:20] in row[0], row  # cut to 32 columns
    assert "source        --file " + path in cli(e, "status", mid).stdout
    # vigil restart starts the same source again (the start map has it).
    start = c.call("monitor_status", monitor_id=mid, include_start=True)["start"]
    assert start["source"] == {"file": path, "from": "start"} and start["argv"] is None, start
    p = cli(e, "restart", mid)
    assert p.returncode == 0, p.stderr
    mid = p.stdout.strip()
    st = c.call("monitor_status", monitor_id=mid)
    assert st["source"]["file"] == path and st["state"] == "running", st
    assert cli(e, "stop", mid).returncode == 0
    srv = WsServer()
    try:
        p = cli(e, "start", "--ws", srv.url, "--label", "cliws")
        assert p.returncode == 0, p.stderr
        wsid = p.stdout.strip()
        srv.send(frame(1, b"over the socket"))
        wait_for(lambda: [l["text"] for l in c.call("monitor_output", monitor_id=wsid)["lines"]]
                 == ["over the socket"], "the message's line")
        assert cli(e, "stop", wsid).returncode == 0
    finally:
        srv.close()
    p = cli(e, "start", "--ws", "wss://127.0.0.1:1/")
    assert p.returncode != 0 and "TLS" in p.stderr, (p.returncode, p.stderr)
    for args, words in ((["--file", path, "--", "true"], "not both"),
                        (["--from", "start", "--", "true"], "--from goes with --file"),
                        (["--file", path, "--cwd", d], "--cwd goes with a command"),
                        (["--ws", "ws://127.0.0.1:1/", "--from", "start"], "--from goes with --file"),
                        (["--ws", "ws://127.0.0.1:1/", "--file", path], "not both"),
                        ([], "missing the command to run (after \"--\") or --file or --ws")):
        p = cli(e, "start", *args)
        assert p.returncode == 2 and words in p.stderr, (args, p.returncode, p.stderr)


@socket_only
def test_a_file_source_is_not_taken_over_by_a_restarted_engine(e):
    """The choice (docs/sources.md): a file source has no keeper and nothing
    in the state directory, so an engine that dies takes it with it; the
    next engine does not know it, and the file can be followed again from
    the offset its status showed."""
    c = e.main
    c.call("session_open", session="keep")
    d = fresh("takeover")
    path = os.path.join(d, "t.log")
    append(path, "")
    mid = c.call("monitor_start", source={"file": path}, notify="lines",
                 session="keep")["monitor_id"]
    append(path, "seen before\n")
    wait_line(c, mid, "seen before")
    offset = c.call("monitor_status", monitor_id=mid, session="keep")["source"]["offset"]
    assert offset == len("seen before\n"), offset
    assert not os.path.exists(os.path.join(e.dir, "run", "state", "monitors", mid))
    e.proc.kill()
    e.proc.wait(BOUND_S)
    append(path, "after the engine\n")
    e2 = Engine("socket", config(), extra_args=["--state-dir", os.path.join(e.dir, "run", "state")])
    try:
        c2 = e2.main
        c2.call("session_open", session="keep")
        expect_error("not_found", c2.call, "monitor_status", monitor_id=mid, session="keep")
        again = c2.call("monitor_start", source={"file": path, "from": str(offset)},
                        notify="lines", session="keep")["monitor_id"]
        wait_line(c2, again, "after the engine")
    finally:
        assert e2.close() == [], "vigild's sanitizer reported"


for t in list(globals().values()):
    if callable(t) and getattr(t, "__name__", "").startswith("test_"):
        t.config = config


if __name__ == "__main__":
    try:
        rc = run_tests([
            test_lines_appended_arrive_and_a_crash_is_an_incident,
            test_from_start_and_from_an_offset,
            test_a_rotated_file_is_followed_at_its_path,
            test_lines_written_to_the_old_file_after_a_rename_are_read_before_the_new_one,
            test_a_symlink_to_a_file_in_another_directory_is_followed,
            test_a_file_nobody_writes_any_more_is_told_quiet_and_resumed,
            test_a_truncated_file_starts_again_at_zero_and_says_so,
            test_a_deleted_file_is_told_once_and_followed_when_it_reappears,
            test_paths_outside_the_roots_and_what_is_no_file_are_refused,
            test_a_symlink_swapped_in_before_a_reopen_is_refused_and_told,
            test_one_engine_follows_twenty_files_with_no_process,
            test_the_cli_follows_a_file,
            test_a_file_source_is_not_taken_over_by_a_restarted_engine,
            test_websocket_messages_arrive_as_lines_and_the_close_ends_it,
            test_an_oversized_websocket_message_is_cut_at_line_max_bytes,
            test_a_wrong_handshake_and_urls_off_loopback_are_refused,
        ])
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)
        shutil.rmtree(OUTSIDE, ignore_errors=True)
    sys.exit(rc)
