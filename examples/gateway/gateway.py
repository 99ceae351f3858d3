#!/usr/bin/env python3
"""An agent gateway's use of vigil, in one file, on the vigil_client library.

A gateway is the program that runs an agent loop. It embeds vigil, starts
background commands for the agent, and injects what vigil pushes into the
agent's turns. This example shows the three things a gateway must get right:

  1. Embedding: `vigild --stdio` as a child (vigil_client's Engine.spawn);
     its stdin/stdout are one msgpack-rpc connection, and closing stdin
     stops the engine and every process it started.
  2. Timing: the gateway says when the agent is in a turn (session busy)
     and when it is not (idle). `idle` notifications are held by the engine
     during a turn and released when it ends; `live_safe` ones come at once,
     and the gateway injects them at the next safe point of the turn (between
     tool calls). The config decides whether live_safe is allowed at all
     (monitor.live_mode_enabled; config/vigil.lua says no, so the engine
     starts such monitors in idle mode and says so in a note).
  3. Resuming: a gateway that restarts reattaches to its named session with
     the last seq it handled, and the engine replays what it missed. That
     needs an engine that outlives the gateway: `vigild --listen` on a socket,
     reached with vigil_client's Client.connect.

    python3 examples/gateway/gateway.py --vigild build/vigild --config config/vigil.lua

Needs python3-msgpack and vigil_client: the installed package if there is
one (pip install ./clients/python), else the copy in this checkout's
clients/python, found relative to this file. Runs in about 12 s.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

try:
    import vigil_client
except ImportError:
    # Not installed: use the package in this checkout (clients/python).
    sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
    import vigil_client

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


def connect_unix(path, wait_s=10.0):
    """Connects to vigild's socket. vigil_client checks who is serving it
    before sending anything: the engine must run as this user or as root
    (else PermissionError). A socket in a directory someone else controls
    could be theirs, and a gateway sends argv and environment (tokens) in
    monitor_start. wait_s: how long to retry while the engine is starting."""
    return vigil_client.Client.connect(path, wait_s=wait_s)


class Gateway:
    """What a gateway does with notifications: keeps two queues and injects
    each at the moment its mode calls for. The session object (vigil_client)
    remembers the last seq handed to us: the resume cursor."""

    def __init__(self, client, session):
        self.client, self.name = client, session
        self.session = None
        self.in_turn = False
        self.at_safe_point, self.when_idle = [], []
        self.replayed_below = 0     # seqs under this were replayed on resume
        self.endings = set()        # monitor ids whose ending was seen

    def open(self, last_seq=None, epoch=None):
        """Opens the session; with the cursor (last_seq, and the epoch it was
        taken in) of an earlier gateway, resumes it. Seqs are per engine:
        a changed epoch means the engine restarted, and the engine says what
        was lost with a `dropped` notification (injected like any other)."""
        self.session = self.client.session(self.name, last_seq=last_seq)
        s = self.session
        self.replayed_below = s.next_seq if last_seq is not None else 0
        print("session_open %s -> resumed=%s next_seq=%d epoch=%s"
              % (s.name, s.resumed, s.next_seq, s.epoch))
        if epoch is not None and epoch != s.epoch:
            print("  the engine restarted since seq %d (epoch was %s)" % (last_seq, epoch))

    @property
    def last_seq(self):
        return self.session.last_seq or 0

    def start(self, **args):
        r = self.session.monitor_start(cwd=ROOT, **args)
        print("monitor_start %r -> %s, mode %s" % (r["label"], r["monitor_id"], r["mode"]))
        if r["note"]:
            print("  engine note: %s" % r["note"])
        return r["monitor_id"]

    def receive(self, seconds):
        """Lets time pass (the agent is thinking or a tool is running), queuing
        what arrives. seconds=0 takes only what is already here."""
        deadline = time.monotonic() + seconds
        while True:
            n = self.session.wait(max(0.0, deadline - time.monotonic()))
            if n is None:
                return
            self.handle(n)

    def handle(self, n):
        if n.is_ending:
            self.endings.add(n.monitor_id)
        (self.at_safe_point if n.is_live_safe else self.when_idle).append(n)
        if not self.in_turn:          # the agent is idle: nothing to wait for
            self.flush("idle: starts the agent's next turn")

    def flush(self, when):
        for n in self.at_safe_point + self.when_idle:
            self.inject(n, when)
        self.at_safe_point, self.when_idle = [], []

    def inject(self, n, when):
        """Where a real gateway appends n.text to the agent's context."""
        if n.seq < self.replayed_below:
            when += ", replayed after the restart"
        print("\n>>> inject seq=%d type=%s mode=%s (%s)" % (n.seq, n.type, n.mode, when))
        print(n.text.rstrip("\n"))

    def turn(self, tool_calls):
        """One agent turn: busy, some tool calls with safe points between, idle."""
        self.session.busy()
        self.in_turn = True
        print("\n=== agent turn begins (session_state busy) ===")
        for name, seconds in tool_calls:
            print("  tool call: %s (%.1f s)" % (name, seconds))
            self.receive(seconds)
            # A safe point: live_safe notifications go in now, mid-turn.
            for n in self.at_safe_point:
                self.inject(n, "live_safe: at the safe point after %s" % name)
            self.at_safe_point = []
        r = self.session.idle()
        print("\n=== agent turn ends (session_state idle): %d held notification(s) released ===" % r["delivered"])
        self.receive(0)             # the released ones came before idle's answer
        self.flush("idle: held during the turn, goes into the next one")
        self.in_turn = False

    def wait_endings(self, monitor_ids, seconds):
        deadline = time.monotonic() + seconds
        while not set(monitor_ids) <= self.endings:
            n = self.session.wait(max(0.0, deadline - time.monotonic()))
            if n is None:
                return False
            self.handle(n)
        return True


def embedded(vigild, config):
    """Part 1: vigild --stdio as the gateway's child, one agent turn."""
    print("### part 1: embedded engine (vigild --stdio)\n")
    # The engine logs to stderr (here: warnings and errors only).
    engine = vigil_client.Engine.spawn(vigild=vigild, config=config,
                                       env=dict(os.environ, VIGIL_LOG="warn"))
    with engine:                    # leaving it stops the engine and anything still running
        gw = Gateway(engine, "gateway-example")
        gw.open()
        live = engine.api_info()["limits"]["monitor.live_mode_enabled"]
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
        return gw.wait_endings([server, build], 15)


def resumed(vigild, config):
    """Part 2: vigild --listen; the gateway restarts and loses nothing."""
    print("\n### part 2: a gateway restart (vigild --listen, session_open with last_seq)\n")
    tmp = tempfile.mkdtemp(prefix="vigil-gateway-")
    path = os.path.join(tmp, "vigil.sock")
    daemon = subprocess.Popen([vigild, "--listen", path, "--config", config],
                              stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = connect_unix(path)     # waits for the daemon to listen
        gw = Gateway(client, "gateway-resume")
        gw.open()
        job = gw.start(label="migrations", argv=["python3", "-c",
                       "import time\nfor i in range(1, 7):\n"
                       "    print('migration %d/6 applied' % i, flush=True); time.sleep(0.8)"],
                       # Progress lines: each one is news, so no coalescing of
                       # look-alike lines into one incident (docs/incidents.md).
                       match_pattern="applied", incidents=False)
        gw.receive(1.2)
        # What a real gateway would write to disk before going down.
        cursor, epoch = gw.last_seq, gw.session.epoch
        print("\n--- the gateway goes down after seq %d (the engine keeps the session) ---" % cursor)
        client.close()
        time.sleep(2.5)                 # the job runs on; its notifications are kept
        client = connect_unix(path)
        gw2 = Gateway(client, "gateway-resume")  # a fresh gateway process, same cursor
        gw2.open(last_seq=cursor, epoch=epoch)   # everything after it is pushed again
        ok = gw2.wait_endings([job], 15)
        client.close()
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
