#!/usr/bin/env python3
"""The vigil demo: an agent leaves a dev server running and is told when it matters.

This script plays the part of an agent gateway, end to end, against the real
engine, on vigil's Python client library (vigil_client, clients/python):

  1. starts `vigild --stdio --config config/vigil.lua` as its child
     (Engine.spawn: the engine's stdin/stdout are the msgpack-rpc connection,
     its log goes to a temporary file that is shown if the demo fails);
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
went as told, 1 if the engine misbehaved. It needs no terminal and no stdin.

    python3 examples/demo/run_demo.py [--vigild build/vigild] [--config config/vigil.lua]
                                      [--seed 7] [--quick]

Needs Debian's python3 with python3-msgpack (scripts/install-deps.sh
installs it) and vigil_client: the installed package if there is one
(pip install ./clients/python), else the copy in this checkout's
clients/python, found relative to this file.
"""

import argparse
import os
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

# How long closing the engine waits for it to stop the monitors still
# running (SIGTERM, the kill grace, SIGKILL) and exit, before killing it.
ENGINE_CLOSE_TIMEOUT_S = 15


class EngineLog:
    """Where the embedded engine writes its log (its stderr): a temporary
    file, kept out of the transcript and shown only when the demo fails."""

    def __init__(self):
        self.file = tempfile.NamedTemporaryFile(prefix="vigild-demo-", suffix=".log", delete=False)

    def tail(self):
        with open(self.file.name, errors="replace") as f:
            return f.read()[-3000:]

    def remove(self):
        self.file.close()
        os.unlink(self.file.name)


class Demo:
    """The agent's side: one session on the engine, and the transcript."""

    def __init__(self, session):
        self.session = session
        self.t0 = time.monotonic()
        self.seen = []          # every notification, in order

    def say(self, what):
        print("[agent +%.1fs] %s" % (time.monotonic() - self.t0, what), flush=True)

    def show(self, n):
        """Prints a notification exactly as the agent would receive it."""
        self.seen.append(n)
        print("--- notification seq=%d type=%s mode=%s ---" % (n.seq, n.type, n.mode))
        sys.stdout.write(n.text if n.text.endswith("\n") else n.text + "\n")
        sys.stdout.flush()

    def watch(self, seconds, until=None):
        """Lets time pass, printing notifications as they come, until one
        satisfies until(); returns that one (None if the time ran out).
        What had already arrived along with it is printed too, so that it
        is not mistaken later for something pushed during the next step."""
        deadline = time.monotonic() + seconds
        while True:
            n = self.session.wait(timeout=max(0.0, deadline - time.monotonic()))
            if n is None:
                return None
            self.show(n)
            if until is not None and until(n):
                while True:
                    more = self.session.wait(timeout=0)
                    if more is None:
                        return n
                    self.show(more)

    def start_server(self, seed, duration, crash):
        argv = ["python3", "examples/demo/devserver.py", "--seed", str(seed),
                "--duration", str(duration), "--crash", crash]
        r = self.session.monitor_start(argv=argv, cwd=ROOT, label="dev server",
                                       description="the web app's dev server on port 3000",
                                       patterns=PATTERNS, notify="matches", timeout_ms=120000)
        self.say("monitor_start %s -> %s (pid %d, mode %s, notify %s)" % (
            " ".join(argv), r["monitor_id"], r["pid"], r["mode"], r["notify"]))
        return r["monitor_id"]


def is_ending(mid):
    return lambda n: n.monitor_id == mid and n.is_ending


def is_ready(mid=None):
    return lambda n: (mid is None or n.monitor_id == mid) and "listening on" in n.text


def main():
    ap = argparse.ArgumentParser(description="The vigil demo (see the top of this file).")
    ap.add_argument("--vigild", default=os.path.join(ROOT, "build", "vigild"))
    ap.add_argument("--config", default=os.path.join(ROOT, "config", "vigil.lua"))
    ap.add_argument("--seed", type=int, default=7, help="the dev server's seed (default 7: a Node crash)")
    ap.add_argument("--quick", action="store_true", help="a shorter run (about 10 s), for tests")
    args = ap.parse_args()
    duration, busy_s, watch_s = (10, 4.5, 3) if args.quick else (20, 6, 5)

    log = EngineLog()
    engine = None
    ok = True
    try:
        engine = vigil_client.Engine.spawn(vigild=args.vigild, config=args.config, stderr=log.file)
        info = engine.api_info()
        print("vigil demo: an agent runs a dev server in the background and is told when it matters.")
        print("engine: vigild %s (api %d) --stdio --config %s; batches every %d ms, at most %d "
              "notifications per %d s per monitor\n" % (
                  info["version"], info["api_level"], os.path.relpath(args.config, ROOT),
                  info["limits"]["monitor.flush_interval_ms"],
                  info["limits"]["rate_limit.max_notifications"],
                  info["limits"]["rate_limit.window_ms"] // 1000))

        session = engine.session("demo")
        demo = Demo(session)
        demo.say("session_open demo -> next_seq %d" % session.next_seq)
        first = demo.start_server(args.seed, duration, "auto")

        demo.say("waiting for the server to say it is ready...")
        if not demo.watch(10, is_ready()):
            raise RuntimeError("the dev server never became ready")

        # The agent's turn: the engine holds idle notifications while busy.
        session.busy()
        demo.say("takes a turn (session_state busy): editing code for %.1f s; idle notifications are held" % busy_s)
        held_before = len(demo.seen)
        demo.watch(busy_s)
        pushed_while_busy = len(demo.seen) - held_before
        released = session.idle()["delivered"]
        demo.say("turn over (session_state idle): the engine releases %d held notification(s)" % released)
        demo.watch(0.3)

        demo.say("idle; the dev server keeps running in the background...")
        end = demo.watch(duration + 10, is_ending(first))
        if not end:
            raise RuntimeError("the dev server did not end")
        crashed = end.type == "exit" and end.exit_code not in (0, None)

        second = None
        if crashed:
            demo.say("reads the trace in that notification, fixes the bug, restarts the server")
            second = demo.start_server(args.seed + 1, duration, "never")
            demo.watch(10, is_ready(second))
            demo.say("server is back; watching it for %d s" % watch_s)
            demo.watch(watch_s)
            r = session.monitor_stop(monitor_id=second)
            demo.say("done with it: monitor_stop -> %s, state %s" % (r["status"], r["state"]))
            demo.watch(10, is_ending(second))
        else:
            demo.say("the server ended without crashing (exit code %s); nothing to restart" % end.exit_code)

        # The summary: what the agent was told, and what it was spared.
        print()
        print("=== summary ===")
        counts = {}
        for n in demo.seen:
            counts[n.type] = counts.get(n.type, 0) + 1
        print("notifications received: %d (%s)" % (
            len(demo.seen), ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
        print("held while the agent was busy, released when it went idle: %d "
              "(pushed during the turn: %d)" % (released, pushed_while_busy))
        for mid in filter(None, (first, second)):
            s = session.monitor_status(monitor_id=mid)
            c = s["counters"]
            print("%s: %s%s after %.1f s; %d lines read (%d stdout bytes, %d stderr bytes), "
                  "%d matched, %d notifications" % (
                      mid, s["state"], " with code %d" % s["exit_code"] if s["exit_code"] is not None else "",
                      s["duration_ms"] / 1000.0, c["lines"], c["stdout_bytes"], c["stderr_bytes"],
                      c["matched"], c["notifications"]))
        seqs = [n.seq for n in demo.seen]
        ok = seqs == list(range(1, len(seqs) + 1)) and pushed_while_busy == 0
        if not ok:
            print("unexpected: seqs %s, %d pushed while busy" % (seqs, pushed_while_busy))
        print("total %.1f s" % (time.monotonic() - demo.t0))
        session.session_close()
    except vigil_client.VigilError as e:
        ok = fail("%s failed: [%d] %s" % (e.method, e.code, e.message), log)
    except (RuntimeError, KeyError, OSError) as e:
        # OSError: vigild not found, or the connection gone (ConnectionClosed,
        # TimeoutError).
        ok = fail(str(e), log)
    finally:
        if engine is not None:
            engine.close(timeout=ENGINE_CLOSE_TIMEOUT_S)
        log.remove()
    return 0 if ok else 1


def fail(why, log):
    """Says why the demo stopped, with the engine's log; returns False."""
    print("demo failed: %s" % why)
    print("--- vigild log ---\n" + log.tail())
    return False


if __name__ == "__main__":
    sys.exit(main())
