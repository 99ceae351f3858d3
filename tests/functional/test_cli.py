"""The `vigil` command-line client against the real vigild on a private
socket: every subcommand run as a subprocess with --socket, checked on what a
person would see (columns, states, ids), on its exit status, and on --json."""

import atexit
import base64
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import HELPERS, VIGIL, Impostor, run_tests, socket_only

TICK = os.path.join(HELPERS, "child_tick")
ID_RE = re.compile(r"^mon_[0-9a-z]{8,}$")

# The client's XDG_STATE_HOME during these tests: a private directory, so
# that nothing a test runs can touch the user's own ~/.local/state (the
# client keeps nothing there; test_cli_lifecycle checks it stays so).
STATE_HOME = tempfile.mkdtemp(prefix="vigil-cli-state-")
atexit.register(shutil.rmtree, STATE_HOME, True)


def client_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIGIL_SESSION", "VIGIL_SOCKET", "NO_COLOR", "COLUMNS")}
    env["XDG_STATE_HOME"] = STATE_HOME
    env.update(extra)
    return env


def vigil(e, *args, timeout=30, env=None, cwd=None):
    """Runs the client to completion; returns the CompletedProcess (text)."""
    return subprocess.run([VIGIL, "--socket", e.socket_path] + list(args), capture_output=True,
                          text=True, timeout=timeout, env=env or client_env(), cwd=cwd)


def vigil_ok(e, *args, **kw):
    p = vigil(e, *args, **kw)
    assert p.returncode == 0, "vigil %s: status %d\nstdout: %s\nstderr: %s" % (
        " ".join(args), p.returncode, p.stdout, p.stderr)
    return p


def client_session(e):
    """The session the client works in here (by default the project's this
    directory is in), as `vigil sessions` marks it."""
    out = json.loads(vigil_ok(e, "--json", "sessions").stdout)["sessions"]
    return [s["session"] for s in out if s["current"]][0]


def start(e, *args):
    """Starts a monitor with `vigil start`; returns its id."""
    out = vigil_ok(e, "start", *args).stdout.strip()
    assert ID_RE.match(out), out
    return out


class Reader:
    """Reads a running client's stdout with a deadline (never blocks past it)."""

    def __init__(self, proc):
        self.proc = proc
        self.buf = b""

    def until(self, pred, timeout=15, what="output"):
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while not pred(self.buf):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out waiting for %s; have %r" % (what, self.buf[-2000:]))
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    if pred(self.buf):
                        break
                    raise EOFError("stream ended waiting for %s; have %r" % (what, self.buf))
                self.buf += chunk
        return self.buf


def spawn(e, *args):
    return subprocess.Popen([VIGIL, "--socket", e.socket_path] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=client_env())


def finish(proc, timeout=10):
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout)
    proc.stdout.close()
    proc.stderr.close()


# --- the round trip a person makes ------------------------------------------

@socket_only
def test_start_list_status_output_logs_events_stop(e):
    mid = start(e, "--label", "demo", "-e", "^Error:", "--",
                "sh", "-c", "echo one; echo Error: two >&2; echo three")
    sleeper = start(e, "--label", "sleeper", "--", "sleep", "30")

    lst = vigil_ok(e, "list").stdout.splitlines()
    header = lst[0].split()
    assert header == ["ID", "LABEL", "STATE", "PID", "UPTIME", "RESTARTS", "CPU", "MEM", "LINES",
                      "MATCHED", "PORTS", "COMMAND", "LAST", "LINE"], lst
    rows = [l for l in lst[1:] if l.startswith(sleeper)]
    assert len(rows) == 1, lst
    cols = rows[0].split()
    assert cols[1] == "sleeper" and cols[2] == "running" and int(cols[3]) > 0, rows
    assert re.match(r"^\d+(ms|\.\ds)$", cols[4]) and cols[5] == "0", rows  # uptime, restarts
    assert cols[8] == "0" and cols[9] == "0", rows  # lines, matched
    # Columns are aligned: the row's LABEL starts where the header's does.
    assert rows[0].index("sleeper") == lst[0].index("LABEL"), lst

    assert vigil_ok(e, "wait", mid).stdout.strip() == "%s exited (exit code 0)" % mid
    # `output` shows seq, stream, a '*' on the matched line, and the text.
    out = vigil_ok(e, "output", mid).stdout
    lines = out.splitlines()
    assert len(lines) == 3, out
    assert any(re.match(r"^\s*\d+ stdout\s+one$", l) for l in lines), out
    assert any(re.match(r"^\s*\d+ stderr\* Error: two$", l) for l in lines), out
    matched = vigil_ok(e, "output", mid, "--matched").stdout.splitlines()
    assert len(matched) == 1 and matched[0].endswith("Error: two"), matched
    assert len(vigil_ok(e, "output", mid, "--stdout").stdout.splitlines()) == 2

    ended = [l for l in vigil_ok(e, "list", "--all").stdout.splitlines() if l.startswith(mid)]
    cols = ended[0].split()
    assert cols[1:4] == ["demo", "exited", "-"] and cols[8:10] == ["3", "1"], ended
    assert ended[0].rstrip().endswith(("three", "Error: two")), ended
    assert mid not in vigil_ok(e, "list").stdout

    status = vigil_ok(e, "status", "demo").stdout   # by label
    assert status.splitlines()[0] == "%s (demo)" % mid, status
    assert re.search(r"^\s+state\s+exited \(exit code 0\)$", status, re.M), status
    assert re.search(r"^\s+lines\s+3 \(1 matched, 2 unmatched", status, re.M), status

    logs = subprocess.run([VIGIL, "--socket", e.socket_path, "logs", mid], capture_output=True,
                          timeout=30, env=client_env())
    assert logs.returncode == 0
    assert logs.stdout == b"one\nthree\n" and logs.stderr == b"Error: two\n", logs
    only_err = vigil_ok(e, "logs", mid, "--stderr").stdout
    assert only_err == "Error: two\n", only_err
    part = vigil_ok(e, "logs", mid, "--stdout", "--offset", "4", "--limit", "3").stdout
    assert part == "thr", part

    events = vigil_ok(e, "events", mid).stdout
    assert re.search(r"^\[1\] \S+ started$", events, re.M), events
    assert re.search(r'^\[2\] \S+ match \(pattern 0 "\^Error:"\) Error: two$', events, re.M), events
    # The matching line also opened an incident (incidents are on by default),
    # logged after its match.
    since = vigil_ok(e, "events", mid, "--since", "2").stdout
    assert re.fullmatch(r"\[3\] \S+ incident 1 message \(1 line\) fingerprint [0-9a-f]{16}: "
                        r"Error: two\n\[4\] \S+ exited exit=0\n", since), since

    stopped = vigil_ok(e, "stop", sleeper[:10]).stdout   # by a unique start of the id
    assert stopped.strip() == "%s stopped (killed by SIGTERM)" % sleeper, stopped
    again = vigil_ok(e, "stop", sleeper).stdout
    assert "already stopped" in again, again
    assert "no running monitors" in vigil_ok(e, "list").stdout
    ended = [l for l in vigil_ok(e, "list", "--all").stdout.splitlines() if l.startswith(sleeper)]
    assert ended and "stopped SIGTERM" in ended[0] and ended[0].split()[4] == "-", ended
    status = vigil_ok(e, "status", sleeper).stdout
    assert re.search(r"^\s+state\s+stopped \(killed by SIGTERM\)$", status, re.M), status


@socket_only
def test_monitors_outlive_the_command_and_stay_in_their_session(e):
    mid = start(e, "--session", "alpha", "--", "sleep", "30")
    # A later invocation (a new connection) still sees it running.
    rows = vigil_ok(e, "list", env=client_env(VIGIL_SESSION="alpha")).stdout
    assert mid in rows and "running" in rows, rows
    # Another session sees nothing of it.
    other = vigil(e, "--session", "beta", "status", mid)
    assert other.returncode == 1 and other.stderr.startswith("vigil: not_found: "), other.stderr
    assert mid not in vigil_ok(e, "list", "--all", "--session", "beta").stdout
    vigil_ok(e, "stop", mid, "--session", "alpha", "--grace", "200ms")


@socket_only
def test_argv_is_sent_as_given_and_cwd_env_are_the_callers(e):
    r = vigil_ok(e, "run", "--", "printf", "%s|", "a b", "c;d", "$HOME")
    assert r.stdout == "a b|c;d|$HOME|\n", r.stdout
    here = tempfile.mkdtemp(prefix="vigil-cli-cwd-")
    try:
        r = vigil_ok(e, "run", "--env", "GREETING=hi there", "--", "sh", "-c",
                     'pwd; echo "$GREETING"', cwd=here)
        assert r.stdout == "%s\nhi there\n" % os.path.realpath(here), r.stdout
        sub = os.path.join(here, "sub")
        os.mkdir(sub)
        r = vigil_ok(e, "run", "--cwd", "sub", "--", "sh", "-c", "pwd", cwd=here)
        assert r.stdout.strip() == os.path.realpath(sub), r.stdout
    finally:
        for root, dirs, files in os.walk(here, topdown=False):
            for d in dirs:
                os.rmdir(os.path.join(root, d))
        os.rmdir(here)


# --- run --------------------------------------------------------------------

@socket_only
def test_run_passes_exit_status_and_streams_through(e):
    r = vigil(e, "run", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert r.stdout == "out\n" and r.stderr == "err\n", (r.stdout, r.stderr)
    assert vigil(e, "run", "--", "true").returncode == 0
    assert vigil(e, "run", "--", "false").returncode == 1
    killed = vigil(e, "run", "--", "sh", "-c", "kill -TERM $$")
    assert killed.returncode == 128 + 15, killed.returncode


@socket_only
def test_run_timeout_is_124(e):
    t0 = time.monotonic()
    r = vigil(e, "run", "--timeout", "1s", "--", "sh", "-c", "echo started; exec sleep 30")
    assert r.returncode == 124, (r.returncode, r.stderr)
    assert time.monotonic() - t0 < 15
    assert r.stdout == "started\n", r.stdout
    assert "timed out after 1.0s" in r.stderr, r.stderr


@socket_only
def test_run_engine_refusals_follow_timeout_1(e):
    r = vigil(e, "run", "--", "rm", "-rf", "/nonexistent")
    assert r.returncode == 126 and r.stderr.startswith("vigil: denied: "), (r.returncode, r.stderr)


# --- wait -------------------------------------------------------------------

@socket_only
def test_wait_for_exit_and_its_timeout(e):
    mid = start(e, "--", TICK, "100", "3")
    r = vigil(e, "wait", mid)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "%s exited (exit code 0)" % mid, r.stdout

    slow = start(e, "--", "sleep", "30")
    t0 = time.monotonic()
    r = vigil(e, "wait", slow, "--timeout", "300ms")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert time.monotonic() - t0 < 10
    assert "timed out after 300ms" in r.stderr and "state running" in r.stderr, r.stderr

    r = vigil(e, "wait", mid, "--for", "match")
    assert r.returncode == 1 and "without a match" in r.stderr, (r.returncode, r.stderr)
    vigil_ok(e, "stop", slow, "--signal", "KILL")


@socket_only
def test_wait_for_match(e):
    mid = start(e, "-e", "tick 2", "--", TICK, "100", "5")
    r = vigil_ok(e, "wait", mid, "--for", "match", "--timeout", "10s")
    assert r.stdout.strip() == "%s match (pattern 0: tick 2)" % mid, r.stdout


# --- output --follow --------------------------------------------------------

@socket_only
def test_output_follow_prints_lines_as_they_come_and_ends_with_the_monitor(e):
    mid = start(e, "--", TICK, "400", "5")
    t0 = time.monotonic()
    proc = spawn(e, "output", mid, "--follow")
    try:
        rd = Reader(proc)
        rd.until(lambda b: b"tick 1\n" in b, what="the first line")
        first_at = time.monotonic() - t0
        assert b"tick 5" not in rd.buf, rd.buf
        rd.until(lambda b: b"tick 5\n" in b, what="the last line")
        assert proc.wait(15) == 0
        end_at = time.monotonic() - t0
        # Lines came while it ran, not all at the end (5 ticks of 400 ms).
        assert end_at - first_at > 0.8, (first_at, end_at)
        rest = proc.stdout.read()
        text = (rd.buf + rest).decode()
        ticks = re.findall(r"^\s*(\d+) stdout\s+tick (\d)$", text, re.M)
        assert [t[1] for t in ticks] == ["1", "2", "3", "4", "5"], text
        assert [int(t[0]) for t in ticks] == [1, 2, 3, 4, 5], text
    finally:
        finish(proc)


@socket_only
def test_output_follow_prints_unmatched_lines_while_the_monitor_runs(e):
    # Notified only of matches, and no line matches: follow still shows each
    # line as it comes (monitor_wait {for: "output"}), not only at the end.
    mid = start(e, "-e", "^never$", "--", "sh", "-c", "echo first; sleep 30")
    proc = spawn(e, "output", mid, "--follow")
    try:
        rd = Reader(proc)
        rd.until(lambda b: b"first\n" in b, what="the unmatched line, while it runs")
        assert proc.poll() is None  # still following: the monitor runs on
        vigil_ok(e, "stop", mid, "--grace", "0")
        # Stopped: the follow ends saying so, with the status for a stop.
        assert proc.wait(15) == 122
        assert proc.stderr.read().decode() == "[stopped by request (SIGTERM)]\n"
    finally:
        finish(proc)


@socket_only
def test_output_follow_with_patterns_still_prints_every_line_by_the_end(e):
    mid = start(e, "-e", "tick 2", "--", TICK, "150", "4")
    r = vigil_ok(e, "output", mid, "-f", "--json", timeout=20)
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    assert [l["text"] for l in lines] == ["tick 1", "tick 2", "tick 3", "tick 4"], lines
    assert [l["pattern"] for l in lines] == [None, 0, None, None], lines


@socket_only
def test_output_follow_of_an_ended_monitor_returns_at_once(e):
    mid = start(e, "--", "echo", "done")
    vigil_ok(e, "wait", mid)
    r = vigil_ok(e, "output", mid, "--follow", timeout=10)
    assert r.stdout.rstrip().endswith("done"), r.stdout


# --- watch ------------------------------------------------------------------

@socket_only
def test_watch_prints_envelopes(e):
    # --since 0: whatever the session kept is printed too, so the monitor's
    # notifications are seen whether they came before watch attached or after.
    proc = spawn(e, "watch", "--since", "0")
    try:
        mid = start(e, "--label", "greeter", "--", "sh", "-c", "echo hello; echo bye")
        rd = Reader(proc)
        rd.until(lambda b: b"event: exit" in b and re.search(
            rb"event: exit.*?END>>>\n", b, re.S) is not None, what="the exit envelope")
        text = rd.buf.decode()
        assert "stream_policy: untrusted_observation" in text, text
        assert "monitor: greeter (%s)" % mid in text, text
        assert "[stdout seq=1] hello" in text and "[stdout seq=2] bye" in text, text
        begin = re.findall(r"<<<VIGIL OBSERVATION ([0-9a-f]{16,}) BEGIN>>>", text)
        end = re.findall(r"<<<VIGIL OBSERVATION ([0-9a-f]{16,}) END>>>", text)
        assert begin and begin == end, (begin, end)
        assert proc.poll() is None  # still watching
    finally:
        finish(proc)


@socket_only
def test_watch_json_one_object_per_line(e):
    proc = spawn(e, "watch", "--json", "--since", "0")
    try:
        mid = start(e, "--", "echo", "hi")
        rd = Reader(proc)
        rd.until(lambda b: b'"type":"exit"' in b and b.endswith(b"\n"), what="the exit notification")
        objs = [json.loads(l) for l in rd.buf.decode().splitlines()]
        ours = [o for o in objs if o["monitor_id"] == mid]
        assert [o["type"] for o in ours][-1] == "exit", objs
        for o in ours:
            for key in ("session", "seq", "type", "monitor_id", "label", "mode", "lines", "text",
                        "at"):
                assert key in o, (key, o)
            assert o["session"] == client_session(e), o
    finally:
        finish(proc)


@socket_only
def test_watch_oneline_gives_each_notification_one_line(e):
    # A harness's own line monitor wraps vigil with this: one line per
    # notification, flushed, the envelope's newlines escaped.
    proc = spawn(e, "watch", "--oneline", "--since", "0")
    try:
        # --notify lines: every line is notified (the built-in crash patterns
        # match neither), so there is an output notification besides the exit.
        mid = start(e, "--label", "two", "--notify", "lines", "--",
                    "sh", "-c", "printf '%s\\n' 'a\\b'; echo second")
        rd = Reader(proc)
        rd.until(lambda b: re.search(rb"event: exit.*END>>>\n", b) is not None,
                 what="the exit notification's line")
        lines = rd.buf.decode().splitlines()
        ours = [l for l in lines if l.split(" ", 2)[1] == mid]
        assert len(ours) >= 2, lines  # the output and the exit, at least
        seqs = [int(l.split(" ", 2)[0]) for l in ours]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
        for l in ours:
            text = l.split(" ", 2)[2]
            assert "\n" not in text and text.startswith("<<<VIGIL OBSERVATION "), l
            # The escapes undo to the envelope: markers on their own lines.
            plain = re.sub(r"\\(.)", lambda m: {"n": "\n", "\\": "\\", "r": "\r",
                                                 "t": "\t"}[m.group(1)], text)
            assert re.search(r">>>\n", plain) and plain.rstrip().endswith("END>>>"), plain
        joined = "\n".join(ours)
        assert "[stdout seq=1] a\\\\b" in joined, joined  # a\b: its backslash escaped
    finally:
        finish(proc)


@socket_only
def test_watch_oneline_ends_when_its_reader_goes(e):
    # `vigil watch --oneline | head -n 1`: head exits after the first line,
    # and the pipeline must end then, not at the watcher's next write (which
    # may never come: here nothing more is notified for 10 minutes).
    # A session of its own, and --since 0: the watcher gets the notification
    # whether it attached before or after it was made.
    # The watcher's own exit status goes to stderr; a group of its own, so
    # that a hung pipeline is ended whole.
    pipeline = subprocess.Popen(
        ["sh", "-c", '{ "$0" --socket "$1" --session pipe watch --oneline --since 0; '
         'echo "watch status $?" >&2; } | head -n 1', VIGIL, e.socket_path],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=client_env(),
        start_new_session=True)
    try:
        mid = start(e, "--session", "pipe", "--label", "once", "--notify", "lines", "--",
                    "sh", "-c", "echo only-line; exec sleep 600")
        try:
            out, err = pipeline.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError("the pipeline did not end within 30 s of head's exit")
        lines = out.decode().splitlines()
        assert len(lines) == 1 and mid in lines[0] and "only-line" in lines[0], lines
        # Quietly, with status 0: its reader going is how such a watch ends.
        assert err.decode() == "watch status 0\n", err
        vigil_ok(e, "--session", "pipe", "stop", mid)
    finally:
        if pipeline.poll() is None:
            os.killpg(pipeline.pid, signal.SIGKILL)
            pipeline.wait(10)


def test_watch_oneline_and_json_are_exclusive(e):
    r = vigil(e, "watch", "--oneline", "--json")
    assert r.returncode == 2 and "not both" in r.stderr, r.stderr


# --- --json -----------------------------------------------------------------

@socket_only
def test_json_output_has_the_documented_keys(e):
    r = json.loads(vigil_ok(e, "--json", "start", "--label", "j", "--",
                            "sh", "-c", "echo one; printf '\\377abc' >&2").stdout)
    assert set(r) >= {"monitor_id", "label", "mode", "notify", "pid", "started_at", "note"}, r
    mid = r["monitor_id"]
    w = json.loads(vigil_ok(e, "wait", mid, "--json").stdout)
    assert w["timed_out"] is False and w["event"]["type"] == "exited" and w["state"] == "exited", w

    lst = json.loads(vigil_ok(e, "list", "--all", "--json").stdout)
    assert set(lst) == {"monitors", "total"} and lst["total"] == 1, lst
    for key in ("monitor_id", "label", "description", "mode", "notify", "state", "pid",
                "started_at", "ended_at", "exit_code", "signal", "counters", "last_line"):
        assert key in lst["monitors"][0], key

    st = json.loads(vigil_ok(e, "status", mid, "--json").stdout)
    assert "duration_ms" in st and set(st["resource_usage"]) == {
        "cpu_ms", "memory_peak_bytes", "io_read_bytes", "io_write_bytes"}, st

    out = json.loads(vigil_ok(e, "output", mid, "--json").stdout)
    assert set(out) == {"lines", "counters", "next_sequence"}, out
    assert out["lines"][0]["text"] == "one" and out["lines"][0]["stream"] == "stdout", out

    # bin: valid UTF-8 as a string, anything else as {"base64": ...}.
    logs = json.loads(vigil_ok(e, "logs", mid, "--json").stdout)
    assert logs["stdout"] == "one\n", logs
    assert base64.b64decode(logs["stderr"]["base64"]) == b"\xffabc", logs
    assert logs["stdout_size"] == 4 and logs["truncated"] is False, logs

    ev = json.loads(vigil_ok(e, "events", mid, "--json").stdout)
    assert set(ev) == {"events", "dropped", "dropped_incidents", "text"}, ev
    assert [x["type"] for x in ev["events"]] == ["started", "exited"], ev

    run = json.loads(vigil_ok(e, "run", "--json", "--", "sh", "-c", "echo x; exit 0").stdout)
    assert set(run) >= {"process_id", "state", "exit_code", "stdout_summary", "stderr_summary",
                        "duration_ms", "resource_usage"}, run
    assert run["stdout_summary"] == "x" and run["exit_code"] == 0, run

    slow = start(e, "--", "sleep", "30")
    stop = json.loads(vigil_ok(e, "stop", slow, "--json").stdout)
    assert stop == {"status": "stopped", "state": "stopped", "exit_code": None,
                    "signal": "SIGTERM"}, stop


# --- failures ---------------------------------------------------------------

@socket_only
def test_engine_errors_go_to_stderr_with_status_1(e):
    r = vigil(e, "start", "--", "rm", "-rf", "/tmp/nothing-here")
    assert r.returncode == 1, r.returncode
    assert r.stdout == "" and r.stderr.startswith("vigil: denied: "), r.stderr
    assert '"rm"' in r.stderr, r.stderr
    r = vigil(e, "start", "-e", "(foo", "--", "true")
    assert r.returncode == 1 and r.stderr.startswith("vigil: invalid_pattern: patterns[0]"), r.stderr
    r = vigil(e, "status", "mon_zzzzzzzzzzzz")
    assert r.returncode == 1 and r.stderr.startswith("vigil: not_found: "), r.stderr
    r = vigil(e, "output", "no-such-label")
    assert r.returncode == 1 and r.stderr.startswith("vigil: not_found: "), r.stderr


@socket_only
def test_start_chooses_patterns_incidents_and_envelope(e):
    # Without -e: the built-in crash patterns, matches only. --no-patterns:
    # every line. --no-incidents and --envelope reach the engine; an incident
    # prints with `output --incident`.
    crash = "printf 'TypeError: x\\n    at f (a.js:1:1)\\n' >&2; echo fine"
    r = json.loads(vigil_ok(e, "--json", "start", "--shell", "--", crash).stdout)
    assert r["notify"] == "matches", r
    vigil_ok(e, "wait", r["monitor_id"])
    out = vigil_ok(e, "output", r["monitor_id"], "--incident", "1").stdout
    assert out.splitlines()[0] == "incident 1: crash (error), 2 lines", out
    assert "TypeError: x" in out and "fine" not in out, out
    r = json.loads(vigil_ok(e, "--json", "start", "--no-patterns", "--", "true").stdout)
    assert r["notify"] == "lines", r
    plain = start(e, "--no-incidents", "-e", "^x", "--", "echo", "x1")
    vigil_ok(e, "wait", plain)
    counters = json.loads(vigil_ok(e, "--json", "status", plain).stdout)["counters"]
    assert counters["matched"] == 1 and counters["incidents"] == 0, counters
    proc = spawn(e, "watch", "--since", "0")
    try:
        start(e, "--envelope", "compact", "-e", "^x", "--label", "tight", "--", "echo", "x1")
        rd = Reader(proc)
        rd.until(lambda b: b"tight (" in b and b"): exited with code 0" in b and
                 b"END>>>" in b.split(b"): exited with code 0", 1)[-1], what="the compact ending")
        text = rd.buf.decode()
        assert "stream_policy: untrusted_observation (process output" in text, text
    finally:
        finish(proc)
    r = vigil(e, "start", "-e", "x", "--no-patterns", "--", "true")
    assert r.returncode == 2 and "not both" in r.stderr, r.stderr
    r = vigil(e, "output", "x", "--incident", "1", "--stderr")
    assert r.returncode == 2 and "--incident" in r.stderr, r.stderr


@socket_only
def test_usage_errors_are_status_2_with_a_helpful_message(e):
    r = vigil(e, "start", "--bogus", "--", "true")
    assert r.returncode == 2, r.returncode
    assert 'unknown option "--bogus"' in r.stderr and "vigil start --help" in r.stderr, r.stderr
    assert "usage: vigil start" in r.stderr, r.stderr
    for args, needle in ((["start", "--timeout", "5x", "--", "true"], "not a duration"),
                         (["start", "--notify", "sometimes", "--", "true"], "must be one of"),
                         (["start", "--timeout", "1s", "--persistent", "--", "true"], "not both"),
                         (["start"], "missing the command"),
                         (["status"], "missing ID"),
                         (["output", "x", "--matched", "--stderr"], "at most one"),
                         (["frobnicate"], 'no command "frobnicate"'),
                         ([], "a command is needed"),
                         (["list", "--limit"], "needs a value")):
        r = vigil(e, *args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert needle in r.stderr, (args, r.stderr)
        assert r.stderr.startswith("vigil: "), (args, r.stderr)


@socket_only
def test_no_engine_listening_says_how_to_start_one(e):
    missing = os.path.join(e.dir, "nothing.sock")
    r = vigil(e, "--socket", missing, "list")
    assert r.returncode != 0, r.returncode
    assert "vigil: no engine is listening on %s" % missing in r.stderr, r.stderr
    # The hint names the vigild beside this vigil, with --daemon (which
    # returns once it listens), and the config it will find, which exists.
    m = re.search(r"start one with: (\S+) --daemon --listen (\S+)$", r.stderr, re.M)
    assert m, r.stderr
    assert m.group(1) == os.path.join(os.path.dirname(os.path.realpath(VIGIL)), "vigild"), m.groups()
    assert m.group(2) == missing, m.groups()
    m = re.search(r"\(it will use the config (\S+): ", r.stderr)
    assert m and os.path.isfile(m.group(1)), r.stderr
    # A stale socket file (nothing accepting) is the same situation.
    stale = os.path.join(e.dir, "stale.sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(stale)
    s.close()
    r = vigil(e, "list", "--socket", stale)
    assert r.returncode != 0 and "no engine is listening on %s" % stale in r.stderr, r.stderr
    r = subprocess.run([VIGIL, "run", "--", "true"], capture_output=True, text=True, timeout=30,
                       env=client_env(VIGIL_SOCKET=missing))
    assert r.returncode == 125 and "start one with" in r.stderr, (r.returncode, r.stderr)


@socket_only
def test_a_server_of_another_uid_is_refused_before_anything_is_sent(e):
    if os.geteuid() != 0:
        print("  (skipped: needs root to serve as another uid)")
        return
    imp = Impostor()
    try:
        secret = "--token=s3cr3t-%d" % os.getpid()
        for args in (["start", "--", "echo", secret], ["run", "--", "echo", secret], ["list"]):
            r = vigil(e, "--socket", imp.path, *args)
            assert r.returncode != 0, (args, r.returncode, r.stdout)
            assert "uid 65534" in r.stderr and "uid %d" % os.geteuid() in r.stderr, r.stderr
            assert "whoever owns that socket may be impersonating vigild" in r.stderr, r.stderr
            assert imp.received() == b"", "the client sent %r to the impostor" % imp.received()
        # The real engine (our uid) is fine.
        assert vigil_ok(e, "list").returncode == 0
    finally:
        imp.close()


@socket_only
def test_an_answer_declaring_more_than_the_bound_fails_at_its_header(e):
    # A server of our uid that answers every request with the header of a
    # string of 4 GiB - 16 and then nothing: vigil cuts messages with the C
    # clients' bounded framer (clients/c/link/frame.c), so it refuses the
    # answer as soon as the header says it cannot fit, instead of waiting
    # (until its 30 s deadline) for bytes that will never be allowed.
    path = os.path.join(e.dir, "huge.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(1)
    try:
        p = subprocess.Popen([VIGIL, "--socket", path, "--session", "huge", "list"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=client_env())
        try:
            conn, _ = srv.accept()
            conn.recv(65536)  # the first request
            conn.sendall(b"\x94\x01\x01\xc0\xdb\xff\xff\xff\xf0")
            _, err = p.communicate(timeout=20)
            conn.close()
        finally:
            if p.poll() is None:  # it waited for the string: no process left behind
                p.kill()
                p.communicate()
        assert p.returncode == 1, (p.returncode, err)
        assert "the engine sent a message of at least" in err and "4294967280 bytes" in err, err
    finally:
        srv.close()
        os.unlink(path)


# --- help -------------------------------------------------------------------

HELP_OPTIONS = {
    "start": ["--label", "-e, --pattern", "--streams", "--notify", "--mode", "--idle-timeout",
              "--timeout", "--persistent", "--cwd", "--env", "--shell"],
    "list": ["--all", "--limit"],
    "status": [],
    "output": ["--matched", "--unmatched", "--stdout", "--stderr", "--since", "--follow"],
    "logs": ["--stdout", "--stderr", "--offset", "--limit"],
    "events": ["--since"],
    "wait": ["--for", "--timeout"],
    "stop": ["--signal", "--grace"],
    "run": ["--timeout", "--cwd", "--env"],
    "watch": ["--since"],
}


@socket_only
def test_help_of_every_subcommand_lists_its_options(e):
    top = vigil_ok(e, "--help").stdout
    for name in HELP_OPTIONS:
        assert re.search(r"^  %s\s" % name, top, re.M), (name, top)
    assert vigil_ok(e, "-h").stdout == top
    assert vigil_ok(e, "help").stdout == top
    for name, opts in HELP_OPTIONS.items():
        for form in ([name, "--help"], [name, "-h"], ["--help", name], ["help", name]):
            out = vigil_ok(e, *form).stdout
            assert out.startswith("usage: vigil %s " % name), (form, out)
            for opt in opts + ["--socket PATH", "--session NAME", "--json", "-h, --help"]:
                assert opt in out, (name, opt, out)
    v = vigil_ok(e, "--version").stdout
    assert re.match(r"^vigil \d+\.\d+\.\d+", v), v


@socket_only
def test_common_options_before_or_after_the_subcommand(e):
    start(e, "--session", "s1", "--", "sleep", "30")
    before = json.loads(vigil_ok(e, "--session", "s1", "--json", "list").stdout)
    after = json.loads(vigil_ok(e, "list", "--json", "--session=s1").stdout)
    assert before["total"] == after["total"] == 1, (before, after)
    vigil_ok(e, "--session", "s1", "stop", before["monitors"][0]["monitor_id"])


@socket_only
def test_start_names_a_policy(e):
    bad = vigil(e, "start", "--policy", "nope", "--", "echo", "hi")
    assert bad.returncode == 1 and 'unknown policy "nope"' in bad.stderr, bad
    mid = start(e, "--policy", "xml", "--label", "x", "--", "echo", "hi")
    assert vigil_ok(e, "wait", mid, "--for", "exit").returncode == 0


if __name__ == "__main__":
    sys.exit(run_tests([
        test_start_list_status_output_logs_events_stop,
        test_start_names_a_policy,
        test_start_chooses_patterns_incidents_and_envelope,
        test_monitors_outlive_the_command_and_stay_in_their_session,
        test_argv_is_sent_as_given_and_cwd_env_are_the_callers,
        test_run_passes_exit_status_and_streams_through,
        test_run_timeout_is_124,
        test_run_engine_refusals_follow_timeout_1,
        test_wait_for_exit_and_its_timeout,
        test_wait_for_match,
        test_output_follow_prints_lines_as_they_come_and_ends_with_the_monitor,
        test_output_follow_prints_unmatched_lines_while_the_monitor_runs,
        test_output_follow_with_patterns_still_prints_every_line_by_the_end,
        test_output_follow_of_an_ended_monitor_returns_at_once,
        test_watch_prints_envelopes,
        test_watch_json_one_object_per_line,
        test_watch_oneline_gives_each_notification_one_line,
        test_watch_oneline_ends_when_its_reader_goes,
        test_watch_oneline_and_json_are_exclusive,
        test_json_output_has_the_documented_keys,
        test_engine_errors_go_to_stderr_with_status_1,
        test_usage_errors_are_status_2_with_a_helpful_message,
        test_no_engine_listening_says_how_to_start_one,
        test_a_server_of_another_uid_is_refused_before_anything_is_sent,
        test_an_answer_declaring_more_than_the_bound_fails_at_its_header,
        test_help_of_every_subcommand_lists_its_options,
        test_common_options_before_or_after_the_subcommand,
    ]))
