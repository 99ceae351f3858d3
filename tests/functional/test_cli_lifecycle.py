"""The `vigil` client's rough edges a new user met (issue 13), against the
real vigild: durations in seconds, did-you-mean, `start --wait-for`,
`restart`, `run` streaming live and stopping its child on Ctrl-C, `output
-f` passing the ending on, and `watch` separating notifications. The
helpers (running the client, reading a running one's output with a
deadline) are test_cli.py's."""

import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import group_alive, run_tests, socket_only, with_config
from test_cli import (ID_RE, STATE_HOME, Reader, client_session, finish, spawn, start, vigil,
                      vigil_ok)

TIME_RE = r"\d\d:\d\d:\d\d"


def status_of(e, mid):
    return json.loads(vigil_ok(e, "status", mid, "--json").stdout)


def start_of(e, mid):
    """How mid was started, env values included (status --show-env)."""
    return json.loads(vigil_ok(e, "status", mid, "--show-env", "--json").stdout)["start"]


# --- durations --------------------------------------------------------------

@socket_only
def test_a_bare_duration_is_seconds(e):
    slow = start(e, "--", "sleep", "30")
    t0 = time.monotonic()
    r = vigil(e, "wait", slow, "--timeout", "1")
    took = time.monotonic() - t0
    # One second, not one millisecond.
    assert r.returncode == 1 and "timed out after 1.0s" in r.stderr, (r.returncode, r.stderr)
    assert took >= 0.9, took
    r = vigil(e, "wait", slow, "--timeout", "0.3")
    assert r.returncode == 1 and "timed out after 300ms" in r.stderr, r.stderr
    vigil_ok(e, "stop", slow, "--grace", "0")


@socket_only
def test_durations_out_of_range_name_the_option_the_bound_and_the_value(e):
    slow = start(e, "--", "sleep", "30")
    for args, needle in ((["stop", slow, "--grace", "11m"], '--grace: "11m" is out of range (0ms..10m00s)'),
                         (["start", "--idle-timeout", "2h", "--", "true"],
                          '--idle-timeout: "2h" is out of range (0ms..1h00m)'),
                         (["start", "--timeout", "0", "--", "true"],
                          '--timeout: "0" is out of range (at least 1ms)'),
                         # The engine's own cap, learned from it (30m by default).
                         (["start", "--timeout", "2h", "--", "true"],
                          '--timeout: "2h" is out of range (1ms..30m00s, the engine\'s '
                          'monitor.max_runtime_ms)'),
                         (["run", "--timeout", "2h", "--", "true"],
                          '--timeout: "2h" is out of range (1ms..1h00m)'),
                         (["wait", slow, "--timeout", "5 s"], "is not a duration")):
        r = vigil(e, *args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert needle in r.stderr, (args, r.stderr)
    assert status_of(e, slow)["state"] == "running"  # a refused stop changed nothing
    assert "no running monitors" not in vigil_ok(e, "list").stdout
    vigil_ok(e, "stop", slow, "--grace", "0")


# --- did you mean -----------------------------------------------------------

@socket_only
def test_a_mistyped_option_or_command_gets_a_suggestion(e):
    r = vigil(e, "start", "--tmeout", "5s", "--", "true")
    assert r.returncode == 2, r.returncode
    assert 'unknown option "--tmeout"; did you mean "--timeout"?' in r.stderr, r.stderr
    r = vigil(e, "list", "--sesion=x")   # a common option, after the command
    assert 'did you mean "--session"?' in r.stderr, r.stderr
    r = vigil(e, "strat", "--", "true")
    assert r.returncode == 2 and 'no command "strat"; did you mean "start"?' in r.stderr, r.stderr
    r = vigil(e, "help", "stauts")
    assert r.returncode == 2 and 'did you mean "status"?' in r.stderr, r.stderr
    # Nothing close: no guess.
    r = vigil(e, "start", "--frobnicate", "--", "true")
    assert r.returncode == 2 and "did you mean" not in r.stderr, r.stderr
    r = vigil(e, "xyzzy")
    assert r.returncode == 2 and "did you mean" not in r.stderr, r.stderr


# --- start --wait-for -------------------------------------------------------

@socket_only
def test_start_wait_for_returns_when_the_line_comes(e):
    t0 = time.monotonic()
    r = vigil_ok(e, "start", "--label", "web", "--wait-for", r"listening on port \d+", "--",
                 "sh", "-c", "echo booting; sleep 1; echo 'listening on port 8080'; exec sleep 30",
                 timeout=60)
    mid = r.stdout.strip()
    assert ID_RE.match(mid), r.stdout   # stdout: the id alone, as without --wait-for
    assert r.stderr == "vigil: %s is ready: listening on port 8080\n" % mid, r.stderr
    assert time.monotonic() - t0 >= 0.9  # it did wait for the line
    assert status_of(e, mid)["state"] == "running"
    vigil_ok(e, "stop", mid, "--grace", "0")


@socket_only
def test_start_wait_for_fails_with_the_tail_when_it_ends_first(e):
    r = vigil(e, "start", "--wait-for", "listening", "--",
              "sh", "-c", "echo booting; echo 'Error: no config' >&2; exit 3", timeout=60)
    assert r.returncode == 1, (r.returncode, r.stderr)
    mid = r.stdout.strip()
    assert ID_RE.match(mid), r.stdout
    assert ("vigil: %s exited with status 3 before a line matched \"listening\"" % mid
            in r.stderr), r.stderr
    assert "  its last 2 lines:\n    out| booting\n    err| Error: no config\n" in r.stderr, r.stderr


@socket_only
def test_start_wait_for_times_out_and_leaves_it_running(e):
    t0 = time.monotonic()
    r = vigil(e, "start", "--wait-for", "ready", "--wait-timeout", "1s", "--",
              "sh", "-c", "echo still starting; exec sleep 30", timeout=60)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert time.monotonic() - t0 < 20
    mid = r.stdout.strip()
    assert 'no line of %s matched "ready" within 1.0s; it is still running' % mid in r.stderr, r.stderr
    assert "out| still starting" in r.stderr, r.stderr
    assert status_of(e, mid)["state"] == "running"
    vigil_ok(e, "stop", mid, "--grace", "0")
    r = vigil(e, "start", "--wait-timeout", "1s", "--", "true")
    assert r.returncode == 2 and "--wait-timeout goes with --wait-for" in r.stderr, r.stderr


# --- restart ----------------------------------------------------------------

@socket_only
def test_restart_starts_the_same_command_with_every_option(e):
    workdir = os.path.join(e.dir, "work")
    os.mkdir(workdir)
    script = 'echo "greeting=$GREETING cwd=$(pwd)"; echo "Fatal: x"; exec sleep 30'
    old = start(e, "--label", "svc", "--description", "a service", "--cwd", workdir,
                "--env", "GREETING=hi there", "-e", "^Fatal:", "--notify", "lines",
                "--timeout", "10m", "--", "sh", "-c", script)
    before = status_of(e, old)
    before_start = start_of(e, old)
    assert before_start["env"] == {"GREETING": "hi there"}, before_start
    vigil_ok(e, "wait", old, "--for", "match", "--timeout", "20s")
    r = vigil_ok(e, "restart", "svc", "--grace", "0", "--wait-for", "^Fatal:", timeout=60)
    new = r.stdout.strip()
    assert ID_RE.match(new) and new != old, r.stdout
    gone = status_of(e, old)
    assert gone["state"] == "stopped", gone
    now = status_of(e, new)
    assert now["state"] == "running", now
    for key in ("label", "description", "notify", "mode", "incidents", "envelope", "program"):
        assert now[key] == before[key], (key, now[key], before[key])
    # And what monitor_status tells only in `start`: argv, env, cwd, patterns.
    assert start_of(e, new) == before_start, (start_of(e, new), before_start)
    out = vigil_ok(e, "output", new).stdout
    assert "greeting=hi there cwd=%s" % os.path.realpath(workdir) in out, out
    assert re.search(r"^\s*\d+ stdout\* Fatal: x$", out, re.M), out   # the pattern matched
    # The label now names the new monitor, and it can be restarted again.
    again = vigil_ok(e, "restart", "svc", "--grace", "0").stdout.strip()
    assert ID_RE.match(again) and again not in (old, new), again
    vigil_ok(e, "stop", again, "--grace", "0")


@socket_only
def test_restart_restarts_what_an_agent_started(e):
    # An agent started it over the wire (MCP and gateways do the same), in
    # the session the client uses: vigil start never saw it.
    workdir = os.path.join(e.dir, "agent-work")
    os.mkdir(workdir)
    script = 'echo "greeting=$GREETING cwd=$(pwd)"; echo "Fatal: x"; exec sleep 30'
    session = client_session(e)
    e.main.call("session_open", session=session)
    mid = e.main.call("monitor_start", session=session, argv=["sh", "-c", script], cwd=workdir,
                      env={"GREETING": "from the agent"}, label="agent-dev",
                      patterns=["^Fatal:"], notify="lines", envelope="compact",
                      incidents=False, idle_timeout_ms=600000)["monitor_id"]
    before = start_of(e, mid)
    assert before["env"] == {"GREETING": "from the agent"}, before
    r = vigil_ok(e, "restart", "agent-dev", "--grace", "0", "--wait-for", "^Fatal:", timeout=60)
    new = r.stdout.strip()
    assert ID_RE.match(new) and new != mid, r.stdout
    assert status_of(e, mid)["state"] == "stopped"
    now = status_of(e, new)
    assert now["state"] == "running" and now["label"] == "agent-dev", now
    assert start_of(e, new) == before, (start_of(e, new), before)
    assert now["envelope"] == "compact" and now["incidents"] is False, now
    out = vigil_ok(e, "output", new).stdout
    assert "greeting=from the agent cwd=%s" % os.path.realpath(workdir) in out, out
    assert re.search(r"^\s*\d+ stdout\* Fatal: x$", out, re.M), out   # the pattern matched
    vigil_ok(e, "stop", new, "--grace", "0")
    # An ended monitor just starts again.
    done = start(e, "--", "echo", "once")
    vigil_ok(e, "wait", done)
    fresh = vigil_ok(e, "restart", done).stdout.strip()
    assert ID_RE.match(fresh) and fresh != done, fresh
    vigil_ok(e, "wait", fresh)
    assert vigil_ok(e, "output", fresh).stdout.rstrip().endswith("once")
    # The client keeps nothing of its own about what it started.
    assert not os.path.exists(os.path.join(STATE_HOME, "vigil")), os.listdir(STATE_HOME)


@socket_only
def test_status_shows_how_it_was_started_only_when_asked(e):
    # The start can hold a secret: plain `status` never shows it, --show-start
    # shows the command, cwd and env names, --show-env the values too.
    secret = "sk-live-status-0123456789"
    mid = start(e, "--env", "API_KEY=" + secret, "--env", "MODE=dev", "--",
                "sh", "-c", "exec sleep 30", "sh", "--token=" + secret)
    plain = vigil_ok(e, "status", mid)
    assert secret not in plain.stdout and "API_KEY" not in plain.stdout, plain.stdout
    as_json = status_of(e, mid)
    assert as_json["start"] is None and secret not in json.dumps(as_json), as_json
    shown = vigil_ok(e, "status", mid, "--show-start").stdout
    assert re.search(r"^  command +sh -c 'exec sleep 30' sh --token=%s$" % secret, shown,
                     re.M), shown
    assert re.search(r"^  cwd +/", shown, re.M), shown
    assert re.search(r"^  env +API_KEY MODE \(values hidden: --show-env shows them\)$", shown,
                     re.M), shown
    assert shown.count(secret) == 1, shown   # in the argument, never from env
    hidden = json.loads(vigil_ok(e, "status", mid, "--show-start", "--json").stdout)["start"]
    assert hidden["env"] == {"API_KEY": None, "MODE": None}, hidden
    revealed = vigil_ok(e, "status", mid, "--show-env").stdout
    assert re.search(r"^  env +API_KEY=%s MODE=dev$" % secret, revealed, re.M), revealed
    vigil_ok(e, "stop", mid, "--grace", "0")


# --- run, live --------------------------------------------------------------

@socket_only
def test_run_shows_output_while_the_command_runs_and_ctrl_c_stops_it(e):
    # The stderr line comes first: lines are shown in the order written, so
    # once the pid is on stdout, "working" is on stderr. On SIGTERM (the
    # stop) the child says so: lines written while it stops are shown too.
    script = ("trap 'echo got TERM >&2; exit 7' TERM; echo working >&2; echo pid $$; "
              "while :; do sleep 0.1; done")
    proc = spawn(e, "run", "--", "sh", "-c", script)
    try:
        rd = Reader(proc)
        rd.until(lambda b: re.search(rb"pid \d+\n", b) is not None, timeout=30,
                 what="the first line, while the command still runs")
        assert proc.poll() is None  # shown before the command ended
        pid = int(re.search(rb"pid (\d+)", rd.buf).group(1))
        assert group_alive(pid)  # the child runs, in its own process group
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        err = proc.stderr.read().decode()
        assert err.startswith("working\n"), err   # its stderr line went to stderr
        m = re.search(r"^vigil: run: interrupted \(SIGINT\); stopping mon_\w+\n", err, re.M)
        assert m and "got TERM\n" in err[m.end():], err
        # vigil ran monitor_stop, which answers once the process group is gone.
        assert not group_alive(pid), "the child %d outlived vigil run" % pid
    finally:
        finish(proc)


@socket_only
@with_config(monitor={"max_runtime_ms": 2000})
def test_run_timeout_beyond_the_engine_cap_is_the_clients(e):
    # A 2 s cap in the engine; run --timeout 3s is past it, so vigil starts
    # the monitor persistent and stops it itself at 3 s: still 124.
    t0 = time.monotonic()
    r = vigil(e, "run", "--timeout", "3", "--", "sh", "-c", "echo up; exec sleep 30", timeout=60)
    assert r.returncode == 124, (r.returncode, r.stderr)
    assert time.monotonic() - t0 >= 2.5
    assert r.stdout == "up\n" and "timed out after 3.0s" in r.stderr, (r.stdout, r.stderr)


# --- output --follow passes the ending on ----------------------------------

@socket_only
def test_output_follow_exits_with_the_monitors_status(e):
    mid = start(e, "--", "sh", "-c", "echo bye; exit 4")
    r = vigil(e, "output", mid, "-f", timeout=30)
    assert r.returncode == 4, (r.returncode, r.stderr)
    assert r.stdout.rstrip().endswith("bye") and r.stderr == "[exited with status 4]\n", r
    mid = start(e, "--", "sh", "-c", "kill -SEGV $$")
    r = vigil(e, "output", mid, "--follow", timeout=30)
    assert r.returncode == 128 + 11 and r.stderr == "[killed by SIGSEGV]\n", (r.returncode, r.stderr)
    ok = start(e, "--", "true")
    r = vigil(e, "output", ok, "-f", timeout=30)
    assert r.returncode == 0 and r.stderr == "[exited with status 0]\n", r


# --- watch separates notifications -----------------------------------------

@socket_only
def test_watch_puts_a_header_before_each_notification_and_a_blank_line_after(e):
    proc = spawn(e, "watch", "--since", "0")
    try:
        mid = start(e, "--label", "greeter", "--notify", "lines", "--",
                    "sh", "-c", "echo hello; sleep 1; echo bye")
        rd = Reader(proc)
        rd.until(lambda b: re.search(rb"event: exit.*?END>>>\n\n", b, re.S) is not None,
                 timeout=30, what="the exit envelope and its blank line")
        text = rd.buf.decode()
        header = re.compile(r"^--- #(\d+) greeter \(%s\) (output|exit), idle, %s ---$"
                            % (mid, TIME_RE), re.M)
        heads = header.findall(text)
        assert len(heads) >= 2 and heads[-1][1] == "exit", (heads, text)
        seqs = [int(s) for s, _ in heads]
        assert seqs == sorted(seqs), seqs
        # Every envelope sits between its header and a blank line.
        blocks = [b for b in re.split(r"^(?=--- #)", text, flags=re.M) if b.startswith("--- #")]
        for b in blocks:
            lines = b.split("\n")
            assert lines[1].startswith("<<<VIGIL OBSERVATION "), b
            assert b.endswith("END>>>\n\n"), b
    finally:
        finish(proc)


# --- line buffering ---------------------------------------------------------

PY_PRINT_AND_WAIT = "exec /usr/bin/python3 -c 'import time; print(\"ready\"); time.sleep(30)'"


@socket_only
def test_no_line_buffer_reaches_the_engine(e):
    # By default the engine makes a child's stdout line-buffered: a Python
    # program's print is seen while it runs (this machine's own
    # PYTHONUNBUFFERED is not passed on: the test config's env_inherit
    # leaves it out).
    r = vigil_ok(e, "start", "--wait-for", "^ready$", "--wait-timeout", "30s", "--shell", "--",
                 PY_PRINT_AND_WAIT, timeout=60)
    vigil_ok(e, "stop", r.stdout.strip(), "--grace", "0")
    # --no-line-buffer sends line_buffered: false; what the child gets shows it.
    probe = "echo PYTHONUNBUFFERED=${PYTHONUNBUFFERED:-unset}"
    assert vigil_ok(e, "run", "--", "sh", "-c", probe).stdout == "PYTHONUNBUFFERED=1\n"
    r = vigil_ok(e, "run", "--no-line-buffer", "--", "sh", "-c", probe)
    assert r.stdout == "PYTHONUNBUFFERED=unset\n", r.stdout
    mid = start(e, "--no-line-buffer", "--", "sh", "-c", probe)
    vigil_ok(e, "wait", mid)
    assert vigil_ok(e, "output", mid).stdout.rstrip().endswith("PYTHONUNBUFFERED=unset")
    # And restart keeps it.
    again = vigil_ok(e, "restart", mid).stdout.strip()
    vigil_ok(e, "wait", again)
    assert vigil_ok(e, "output", again).stdout.rstrip().endswith("PYTHONUNBUFFERED=unset")


if __name__ == "__main__":
    sys.exit(run_tests([
        test_a_bare_duration_is_seconds,
        test_durations_out_of_range_name_the_option_the_bound_and_the_value,
        test_a_mistyped_option_or_command_gets_a_suggestion,
        test_start_wait_for_returns_when_the_line_comes,
        test_start_wait_for_fails_with_the_tail_when_it_ends_first,
        test_start_wait_for_times_out_and_leaves_it_running,
        test_restart_starts_the_same_command_with_every_option,
        test_restart_restarts_what_an_agent_started,
        test_status_shows_how_it_was_started_only_when_asked,
        test_run_shows_output_while_the_command_runs_and_ctrl_c_stops_it,
        test_run_timeout_beyond_the_engine_cap_is_the_clients,
        test_output_follow_exits_with_the_monitors_status,
        test_watch_puts_a_header_before_each_notification_and_a_blank_line_after,
        test_no_line_buffer_reaches_the_engine,
    ]))
