#!/usr/bin/env python3
"""An agent gateway's use of vigil, in one file.

A gateway is the program that runs an agent loop. It embeds vigil, starts
background commands for the agent, and injects what vigil pushes into the
agent's turns. This example shows the three things a gateway must get right:

  1. Embedding: `vigild --stdio` as a child; its stdin/stdout are one
     msgpack-rpc connection, and closing stdin stops the engine and every
     process it started.
  2. Timing: the gateway says when the agent is in a turn (session_state busy)
     and when it is not (idle). `idle` notifications are held by the engine
     during a turn and released when it ends; `live_safe` ones come at once,
     and the gateway injects them at the next safe point of the turn (between
     tool calls). The config decides whether live_safe is allowed at all
     (monitor.live_mode_enabled; config/vigil.lua says no, so the engine
     starts such monitors in idle mode and says so in a note).
  3. Resuming: a gateway that restarts reattaches to its named session with
     the last seq it handled, and the engine replays what it missed. That
     needs an engine that outlives the gateway: `vigild --listen` on a socket.

    python3 examples/gateway/gateway.py --vigild build/vigild --config config/vigil.lua

Uses only the standard library and python3-msgpack. Runs in about 12 s.
"""

import argparse
import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

import msgpack

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ENDINGS = ("exit", "stopped", "timed_out", "idle_timeout", "overload")

# A pretend build: a few steps, a warning on stderr, done. (python3 is on
# config/vigil.lua's allowlist; `python3 -c` needs no shell.)
BUILD_SCRIPT = r"""
import sys, time
for i, step in enumerate(["parse", "typecheck", "codegen", "link"], 1):
    print("[%d/4] %s" % (i, step), flush=True); time.sleep(0.5)
    if step == "typecheck":
        print("warning: unused variable 'retries' (src/client.ts:88)", file=sys.stderr, flush=True)
print("build finished in 2.0s", flush=True)
"""


class Connection:
    """A msgpack-rpc connection over a pair of file descriptors (a child's
    pipes or a socket). Blocking and single-threaded: call() reads until its
    answer comes, keeping any notification that arrives first."""

    def __init__(self, rfd, wfd):
        self.rfd, self.wfd = rfd, wfd
        self.unpacker = msgpack.Unpacker(raw=False)
        self.answers, self.pending, self.next_id = {}, [], 1

    def _read(self, timeout):
        if select.select([self.rfd], [], [], max(0.0, timeout))[0]:
            data = os.read(self.rfd, 65536)
            if not data:
                raise ConnectionError("vigild closed the connection")
            self.unpacker.feed(data)
            for msg in self.unpacker:
                if msg[0] == 1:                                    # [1, msgid, error, result]
                    self.answers[msg[1]] = msg[2:]
                elif msg[0] == 2 and msg[1] == "vigil.notification":  # [2, method, [n]]
                    self.pending.append(msg[2][0])

    def call(self, method, **args):
        msgid, self.next_id = self.next_id, self.next_id + 1
        os.write(self.wfd, msgpack.packb([0, msgid, method, [args]], use_bin_type=True))
        while msgid not in self.answers:
            self._read(30)
        error, result = self.answers.pop(msgid)
        if error is not None:
            raise RuntimeError("%s: %s" % (method, error[1]))  # error = [code, message]
        return result

    def notifications(self, timeout):
        """The notifications that arrive within timeout seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read(deadline - time.monotonic())
        out, self.pending = self.pending, []
        return out


def connect_unix(path):
    """Connects to vigild's socket and checks who is serving it before
    sending anything: the engine must run as this user or as root. A socket
    in a directory someone else controls could be theirs, and a gateway
    sends argv and environment (tokens) in monitor_start."""
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        creds = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        uid = struct.unpack("3i", creds)[1]             # struct ucred {pid, uid, gid}
        if uid not in (os.geteuid(), 0):
            raise PermissionError("refusing the engine at %s: it runs as uid %d, not as uid %d "
                                  "(ours) or root" % (path, uid, os.geteuid()))
    except BaseException:
        s.close()
        raise
    return s


class Gateway:
    """What a gateway does with notifications: keeps two queues and injects
    each at the moment its mode calls for."""

    def __init__(self, conn, session):
        self.conn, self.session = conn, session
        self.in_turn = False
        self.at_safe_point, self.when_idle = [], []
        self.last_seq = 0           # the resume cursor: the last seq handled
        self.epoch = None           # ...and the engine epoch it belongs to
        self.replayed_below = 0     # seqs under this were replayed on resume
        self.endings = set()        # monitor ids whose ending was seen

    def open(self, last_seq=None, epoch=None):
        """Opens the session; with the cursor (last_seq, and the epoch it was
        taken in) of an earlier gateway, resumes it. Seqs are per engine:
        a changed epoch means the engine restarted, and the engine says what
        was lost with a `dropped` notification (injected like any other)."""
        args = {"session": self.session}
        if last_seq is not None:
            args["last_seq"] = last_seq
        r = self.conn.call("session_open", **args)
        self.epoch = r["epoch"]
        self.replayed_below = r["next_seq"] if last_seq is not None else 0
        print("session_open %s -> resumed=%s next_seq=%d epoch=%s"
              % (r["session"], r["resumed"], r["next_seq"], r["epoch"]))
        if epoch is not None and epoch != r["epoch"]:
            print("  the engine restarted since seq %d (epoch was %s)" % (last_seq, epoch))

    def start(self, **args):
        r = self.conn.call("monitor_start", cwd=ROOT, **args)
        print("monitor_start %r -> %s, mode %s" % (r["label"], r["monitor_id"], r["mode"]))
        if r.get("note"):
            print("  engine note: %s" % r["note"])
        return r["monitor_id"]

    def receive(self, seconds):
        """Lets time pass (the agent is thinking or a tool is running), queuing what arrives."""
        for n in self.conn.notifications(seconds):
            self.last_seq = n["seq"]
            if n["type"] in ENDINGS:
                self.endings.add(n["monitor_id"])
            (self.at_safe_point if n["mode"] == "live_safe" else self.when_idle).append(n)
            if not self.in_turn:          # the agent is idle: nothing to wait for
                self.flush("idle: starts the agent's next turn")

    def flush(self, when):
        for n in self.at_safe_point + self.when_idle:
            self.inject(n, when)
        self.at_safe_point, self.when_idle = [], []

    def inject(self, n, when):
        """Where a real gateway appends n["text"] to the agent's context."""
        if n["seq"] < self.replayed_below:
            when += ", replayed after the restart"
        print("\n>>> inject seq=%d type=%s mode=%s (%s)" % (n["seq"], n["type"], n["mode"], when))
        print(n["text"].rstrip("\n"))

    def turn(self, tool_calls):
        """One agent turn: busy, some tool calls with safe points between, idle."""
        self.conn.call("session_state", state="busy")
        self.in_turn = True
        print("\n=== agent turn begins (session_state busy) ===")
        for name, seconds in tool_calls:
            print("  tool call: %s (%.1f s)" % (name, seconds))
            self.receive(seconds)
            # A safe point: live_safe notifications go in now, mid-turn.
            for n in self.at_safe_point:
                self.inject(n, "live_safe: at the safe point after %s" % name)
            self.at_safe_point = []
        r = self.conn.call("session_state", state="idle")
        print("\n=== agent turn ends (session_state idle): %d held notification(s) released ===" % r["delivered"])
        self.receive(0.3)           # the released ones arrive now
        self.flush("idle: held during the turn, goes into the next one")
        self.in_turn = False

    def wait_endings(self, monitor_ids, seconds):
        deadline = time.monotonic() + seconds
        while not set(monitor_ids) <= self.endings and time.monotonic() < deadline:
            self.receive(0.2)
        return set(monitor_ids) <= self.endings


def embedded(vigild, config):
    """Part 1: vigild --stdio as the gateway's child, one agent turn."""
    print("### part 1: embedded engine (vigild --stdio)\n")
    # The engine logs to stderr (here: warnings and errors only).
    proc = subprocess.Popen([vigild, "--stdio", "--config", config],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=dict(os.environ, VIGIL_LOG="warn"))
    gw = Gateway(Connection(proc.stdout.fileno(), proc.stdin.fileno()), "gateway-example")
    gw.open()
    live = gw.conn.call("api_info")["limits"]["monitor.live_mode_enabled"]
    print("live mode is %s in this config" % ("enabled" if live else "disabled"))
    # A crash should interrupt the agent's turn: ask for live_safe.
    server = gw.start(label="dev server", mode="live_safe", notify="matches",
                      argv=["python3", "examples/demo/devserver.py", "--seed", "8", "--duration", "6"],
                      patterns=[r"^\w*Error: ", r"^panic: ", r"^Traceback "])
    # A build's warnings can wait until the turn is over: idle.
    build = gw.start(label="build", mode="idle", argv=["python3", "-c", BUILD_SCRIPT],
                     patterns=[r"(?i)\bwarning\b", r"^build finished"])
    gw.turn([("read_file src/client.ts", 1.5), ("edit_file src/client.ts", 1.5),
             ("run_tests", 1.5), ("read_file src/server.go", 1.5)])
    ok = gw.wait_endings([server, build], 15)
    proc.stdin.close()              # stops the engine and anything still running
    proc.wait(15)
    return ok


def resumed(vigild, config):
    """Part 2: vigild --listen; the gateway restarts and loses nothing."""
    print("\n### part 2: a gateway restart (vigild --listen, session_open with last_seq)\n")
    tmp = tempfile.mkdtemp(prefix="vigil-gateway-")
    path = os.path.join(tmp, "vigil.sock")
    daemon = subprocess.Popen([vigild, "--listen", path, "--config", config],
                              stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def connect():
        for _ in range(100):            # the daemon needs a moment to listen
            try:
                s = connect_unix(path)
                return s, Connection(s.fileno(), s.fileno())
            except PermissionError:
                raise
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("vigild never listened on %s" % path)

    try:
        sock, conn = connect()
        gw = Gateway(conn, "gateway-resume")
        gw.open()
        job = gw.start(label="migrations", argv=["python3", "-c",
                       "import time\nfor i in range(1, 7):\n"
                       "    print('migration %d/6 applied' % i, flush=True); time.sleep(0.8)"],
                       # Progress lines: each one is news, so no coalescing of
                       # look-alike lines into one incident (docs/incidents.md).
                       match_pattern="applied", incidents=False)
        gw.receive(1.2)
        print("\n--- the gateway goes down after seq %d (the engine keeps the session) ---" % gw.last_seq)
        sock.close()
        time.sleep(2.5)                 # the job runs on; its notifications are kept
        sock, conn = connect()
        gw2 = Gateway(conn, "gateway-resume")   # a fresh gateway process, same cursor
        gw2.open(last_seq=gw.last_seq, epoch=gw.epoch)  # everything after it is pushed again
        ok = gw2.wait_endings([job], 15)
        sock.close()
        return ok
    finally:
        daemon.terminate()              # SIGTERM: the engine stops its monitors and exits
        daemon.wait(15)
        # The socket is gone; the engine's state directory (made beside it,
        # docs/restart.md) stays, so the whole directory is removed.
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description="An example agent gateway on vigil.")
    ap.add_argument("--vigild", default=os.path.join(ROOT, "build", "vigild"))
    ap.add_argument("--config", default=os.path.join(ROOT, "config", "vigil.lua"))
    ap.add_argument("--no-resume", action="store_true", help="skip part 2 (the restart)")
    args = ap.parse_args()
    ok = embedded(args.vigild, args.config)
    if not args.no_resume:
        ok = resumed(args.vigild, args.config) and ok
    print("\ngateway example %s" % ("done" if ok else "FAILED: an ending never came"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
