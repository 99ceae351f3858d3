#!/usr/bin/env python3
"""The vigil demo: an agent leaves a dev server running and is told when it matters.

This script plays the part of an agent gateway, end to end, against the real
engine:

  1. starts `vigild --stdio --config config/vigil.lua` as its child (the
     engine's stdin/stdout are the msgpack-rpc connection);
  2. opens a session and starts examples/demo/devserver.py as a monitor with
     crash patterns, a WARN pattern and a "ready" pattern (notify=matches:
     the hundreds of request lines never reach the agent);
  3. waits for the server to be ready, then marks the session busy while "the
     agent takes a turn": the engine holds idle-mode notifications meanwhile,
     and releases them, in order, the moment the session goes idle again;
  4. prints every notification's `text` exactly as the agent would receive it,
     under a one-line header;
  5. when the server crashes, "reads the trace, fixes the bug" and restarts
     it once, watches it for a few seconds, stops it, and prints a summary.

It ends by itself (about 18 s; --quick about 10 s) and exits 0 when the story
went as told, 1 if the engine misbehaved.

    python3 examples/demo/run_demo.py [--vigild build/vigild] [--config config/vigil.lua]
                                      [--seed 7] [--quick]

Needs Debian's python3-msgpack (scripts/install-deps.sh installs it).
"""

import argparse
import os
import select
import subprocess
import sys
import tempfile
import time

import msgpack

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Patterns are PCRE2; the first that matches a line wins, and its index is
# what the envelope's "matched: seq=N (pattern I)" line names.
PATTERNS = [
    r"^(Uncaught )?\w*(Error|Exception): ",          # 0: Node / JS / Python exceptions
    r"^panic: ",                                     # 1: Go
    r"^Traceback \(most recent call last\):",        # 2: Python
    r"(?i)^fatal\b|segmentation fault|core dumped",  # 3: everything else that dies
    r"^WARN\b",                                      # 4: worth a look, not urgent
    r"listening on ",                                # 5: the server is ready
]
ENDINGS = ("exit", "stopped", "timed_out", "idle_timeout", "overload")


class Engine:
    """vigild as a child, and a small synchronous msgpack-rpc client over its stdio.

    Single-threaded on purpose: call() reads until its answer arrives and keeps
    any notification that came first; wait() reads for a while. Either way the
    notifications come out of take() in the order the engine sent them.
    """

    def __init__(self, vigild, config):
        self.log = tempfile.NamedTemporaryFile(prefix="vigild-demo-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([vigild, "--stdio", "--config", config], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log)
        self.unpacker = msgpack.Unpacker(raw=False)
        self.answers, self.notifications, self.next_id = {}, [], 1

    def _read(self, timeout):
        """Reads what arrives within timeout seconds (at least one message's bytes, or nothing)."""
        fd = self.proc.stdout.fileno()
        if not select.select([fd], [], [], max(0.0, timeout))[0]:
            return
        data = os.read(fd, 1 << 16)
        if not data:
            raise RuntimeError("vigild closed the connection:\n" + self.log_tail())
        self.unpacker.feed(data)
        for msg in self.unpacker:
            if msg[0] == 1:                                   # [1, msgid, error, result]
                self.answers[msg[1]] = (msg[2], msg[3])
            elif msg[0] == 2 and msg[1] == "vigil.notification":
                self.notifications.append(msg[2][0])
            elif msg[0] == 2 and msg[1] == "vigil.error":
                print("[engine error] %r" % (msg[2],))

    def call(self, method, **args):
        msgid, self.next_id = self.next_id, self.next_id + 1
        self.proc.stdin.write(msgpack.packb([0, msgid, method, [args]], use_bin_type=True))
        self.proc.stdin.flush()
        deadline = time.monotonic() + 30
        while msgid not in self.answers:
            if time.monotonic() > deadline:
                raise RuntimeError("no answer to %s" % method)
            self._read(deadline - time.monotonic())
        error, result = self.answers.pop(msgid)
        if error is not None:
            raise RuntimeError("%s failed: [%d] %s" % (method, error[0], error[1]))
        return result

    def wait(self, seconds, until=None):
        """Reads for up to `seconds`; stops early once a notification satisfies until()."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if until is not None and any(until(n) for n in self.notifications):
                return True
            self._read(min(0.05, deadline - time.monotonic()))
        return until is not None and any(until(n) for n in self.notifications)

    def take(self):
        out, self.notifications = self.notifications, []
        return out

    def log_tail(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()[-3000:]

    def close(self):
        """Closing stdin is how a gateway stops an embedded engine: it stops
        every monitor (SIGTERM, then SIGKILL after the grace) and exits."""
        try:
            self.proc.stdin.close()
            self.proc.wait(15)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.log.name)


class Demo:
    def __init__(self, engine):
        self.engine = engine
        self.t0 = time.monotonic()
        self.seen = []          # every notification, in order

    def say(self, what):
        print("[agent +%.1fs] %s" % (time.monotonic() - self.t0, what), flush=True)

    def show(self):
        """Prints what the engine pushed, exactly as the agent would receive it."""
        for n in self.engine.take():
            self.seen.append(n)
            print("--- notification seq=%d type=%s mode=%s ---" % (n["seq"], n["type"], n["mode"]))
            text = n["text"]
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            sys.stdout.flush()

    def watch(self, seconds, until=None):
        """Lets time pass, printing notifications as they come, until one satisfies until()."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            hit = self.engine.wait(min(0.25, deadline - time.monotonic()), until)
            hits = [n for n in self.engine.notifications if until and until(n)]
            self.show()
            if hit:
                return hits[0] if hits else True
        return None

    def start_server(self, seed, duration, crash):
        argv = ["python3", "examples/demo/devserver.py", "--seed", str(seed),
                "--duration", str(duration), "--crash", crash]
        r = self.engine.call("monitor_start", argv=argv, cwd=ROOT, label="dev server",
                             description="the web app's dev server on port 3000",
                             patterns=PATTERNS, notify="matches", timeout_ms=120000)
        self.say("monitor_start %s -> %s (pid %d, mode %s, notify %s)" % (
            " ".join(argv), r["monitor_id"], r["pid"], r["mode"], r["notify"]))
        return r["monitor_id"]


def is_ending(mid):
    return lambda n: n.get("monitor_id") == mid and n["type"] in ENDINGS


def main():
    ap = argparse.ArgumentParser(description="The vigil demo (see the top of this file).")
    ap.add_argument("--vigild", default=os.path.join(ROOT, "build", "vigild"))
    ap.add_argument("--config", default=os.path.join(ROOT, "config", "vigil.lua"))
    ap.add_argument("--seed", type=int, default=7, help="the dev server's seed (default 7: a Node crash)")
    ap.add_argument("--quick", action="store_true", help="a shorter run (about 10 s), for tests")
    args = ap.parse_args()
    duration, busy_s, watch_s = (10, 4.5, 3) if args.quick else (20, 6, 5)

    engine = Engine(args.vigild, args.config)
    demo = Demo(engine)
    ok = True
    try:
        info = engine.call("api_info")
        print("vigil demo: an agent runs a dev server in the background and is told when it matters.")
        print("engine: vigild %s (api %d) --stdio --config %s; batches every %d ms, at most %d "
              "notifications per %d s per monitor\n" % (
                  info["version"], info["api_level"], os.path.relpath(args.config, ROOT),
                  info["limits"]["monitor.flush_interval_ms"],
                  info["limits"]["rate_limit.max_notifications"],
                  info["limits"]["rate_limit.window_ms"] // 1000))

        r = engine.call("session_open", session="demo")
        demo.say("session_open demo -> next_seq %d" % r["next_seq"])
        first = demo.start_server(args.seed, duration, "auto")

        demo.say("waiting for the server to say it is ready...")
        if not demo.watch(10, lambda n: "listening on" in n["text"]):
            raise RuntimeError("the dev server never became ready")

        # The agent's turn: the engine holds idle notifications while busy.
        r = engine.call("session_state", state="busy")
        demo.say("takes a turn (session_state busy): editing code for %.1f s; idle notifications are held" % busy_s)
        held_before = len(demo.seen)
        demo.watch(busy_s)
        pushed_while_busy = len(demo.seen) - held_before
        r = engine.call("session_state", state="idle")
        demo.say("turn over (session_state idle): the engine releases %d held notification(s)" % r["delivered"])
        released = r["delivered"]
        demo.watch(0.3)

        demo.say("idle; the dev server keeps running in the background...")
        end = demo.watch(duration + 10, is_ending(first))
        if not end:
            raise RuntimeError("the dev server did not end")
        crashed = end["type"] == "exit" and end["exit_code"] not in (0, None)

        second = None
        if crashed:
            demo.say("reads the trace in that notification, fixes the bug, restarts the server")
            second = demo.start_server(args.seed + 1, duration, "never")
            demo.watch(10, lambda n: n.get("monitor_id") == second and "listening on" in n["text"])
            demo.say("server is back; watching it for %d s" % watch_s)
            demo.watch(watch_s)
            r = engine.call("monitor_stop", monitor_id=second)
            demo.say("done with it: monitor_stop -> %s, state %s" % (r["status"], r["state"]))
            demo.watch(10, is_ending(second))
        else:
            demo.say("the server ended without crashing (exit code %s); nothing to restart" % end["exit_code"])

        # The summary: what the agent was told, and what it was spared.
        print()
        print("=== summary ===")
        counts = {}
        for n in demo.seen:
            counts[n["type"]] = counts.get(n["type"], 0) + 1
        print("notifications received: %d (%s)" % (
            len(demo.seen), ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
        print("held while the agent was busy, released when it went idle: %d "
              "(pushed during the turn: %d)" % (released, pushed_while_busy))
        for mid in filter(None, (first, second)):
            s = engine.call("monitor_status", monitor_id=mid)
            c = s["counters"]
            print("%s: %s%s after %.1f s; %d lines read (%d stdout bytes, %d stderr bytes), "
                  "%d matched, %d notifications" % (
                      mid, s["state"], " with code %d" % s["exit_code"] if s["exit_code"] is not None else "",
                      s["duration_ms"] / 1000.0, c["lines"], c["stdout_bytes"], c["stderr_bytes"],
                      c["matched"], c["notifications"]))
        seqs = [n["seq"] for n in demo.seen]
        ok = seqs == list(range(1, len(seqs) + 1)) and pushed_while_busy == 0
        if not ok:
            print("unexpected: seqs %s, %d pushed while busy" % (seqs, pushed_while_busy))
        print("total %.1f s" % (time.monotonic() - demo.t0))
        engine.call("session_close")
    except (RuntimeError, KeyError) as e:
        print("demo failed: %s" % e)
        print("--- vigild log ---\n" + engine.log_tail())
        ok = False
    finally:
        engine.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
