#!/usr/bin/env python3
"""A monitor's restart policy (issue 24, item 2; core/monitor/monitor_restart.c):
`restart: "on-failure"` or `"always"` starts a program that ended by itself
again, after a delay that doubles, at most `max_restarts` times in a row;
the monitor keeps its id, its output and its coalescer, so a crash loop is
one incident and its repeats; each restart is a `restart` event and an
output notification whose reason says how the program ended; the monitor
has one ending, when it gives up or is stopped. vigil stop while a restart
waits ends it; a restart survives an engine SIGKILL (the keeper's spec
carries the policy and the counts).

Every wait is on an event with a generous bound."""

import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from test_restart import BOUND_S, kill_engine, restart_on, state_dir
from vigiltest import (VIGIL, RpcError, alive, expect_error, run_tests, socket_only, wait_for)

# A crash: its pid on stdout, a Python trace on stderr, status 1.
CRASH = ('echo "pid=$$"; printf \'Traceback (most recent call last):\\n'
         '  File "app.py", line 3, in <module>\\n    main()\\nKeyError: user_id\\n\' >&2; '
         'exit 1')


def events(c, mid):
    return c.call("monitor_events", monitor_id=mid)["events"]


def mine(notes, mid):
    return [n for n in notes if n.get("monitor_id") == mid]


def test_a_crash_loop_is_one_incident_and_the_monitor_gives_up_after_max_restarts(e):
    c = e.main
    mid = c.call("monitor_start", argv=["sh", "-c", CRASH], label="api", restart="on-failure",
                 max_restarts=3, restart_backoff_ms=50)["monitor_id"]
    # The wait for the ending is not answered by a restart: only by the end.
    done = c.call("monitor_wait", monitor_id=mid, timeout_ms=BOUND_S * 1000, timeout=BOUND_S + 10,
                  **{"for": "exit"})
    assert not done["timed_out"] and done["event"]["type"] == "exited", done
    assert "gave up after 3 restarts in a row" in done["event"]["reason"], done
    ending = c.wait_ending(mid, timeout=BOUND_S)
    notes = mine(c.drain(), mid) + [ending]
    assert ending["type"] == "exit" and ending["exit_code"] == 1, ending
    assert "gave up after 3 restarts in a row (max_restarts 3" in ending["text"], ending["text"]

    # Each restart told once, in order, with how the program ended.
    told = [n for n in notes if n["type"] == "output" and n.get("reason")]
    assert [re.search(r"restart (\d) of 3", n["reason"]).group(1) for n in told] == \
        ["1", "2", "3"], [n.get("reason") for n in notes]
    for n in told:
        assert n["reason"].startswith("exited with code 1 after "), n["reason"]
        assert "reason: exited with code 1" in n["text"], n["text"]
        assert n["exit_code"] == 1 and n["state"] == "running", n
    # One incident: the first run's trace; the three after it are repeats.
    new = [i for n in notes for i in n.get("incidents") or [] if not i["summary"]]
    assert len(new) == 1 and new[0]["id"] == 1, [n.get("incidents") for n in notes]
    st = c.call("monitor_status", monitor_id=mid)
    assert st["state"] == "exited" and st["restarts"] == 3 and st["exit_code"] == 1, st
    assert st["restart"] == {"policy": "on-failure", "next_in_ms": None}, st
    assert st["counters"]["incidents"] == 4 and st["counters"]["incidents_coalesced"] == 3, st
    # Four runs, four processes, one output.
    types = [x["type"] for x in events(c, mid)]
    assert types.count("started") == 4 and types.count("restart") == 3, types
    assert types[-1] == "exited" and types.count("exited") == 1, types
    lines = c.call("monitor_output", monitor_id=mid, stream="stdout")["lines"]
    pids = {l["text"] for l in lines if l["text"].startswith("pid=")}
    assert len(pids) == 4, lines


def test_on_failure_leaves_a_clean_exit_and_always_restarts_it(e):
    c = e.main
    clean = c.call("monitor_start", argv=["true"], restart="on-failure",
                   restart_backoff_ms=0)["monitor_id"]
    again = c.call("monitor_start", argv=["true"], restart="always", max_restarts=2,
                   restart_backoff_ms=0)["monitor_id"]
    for mid in (clean, again):
        c.wait_ending(mid, timeout=BOUND_S)
    st = c.call("monitor_status", monitor_id=clean)
    assert st["restarts"] == 0 and st["state"] == "exited" and st["reason"] is None, st
    st = c.call("monitor_status", monitor_id=again)
    assert st["restarts"] == 2 and st["state"] == "exited", st
    assert "exited with code 0; gave up after 2 restarts" in st["reason"], st


def test_a_stop_while_a_restart_waits_ends_the_monitor(e):
    c = e.main
    mid = c.call("monitor_start", argv=["sh", "-c", "exit 4"], restart="on-failure",
                 restart_backoff_ms=600000)["monitor_id"]
    got = c.call("monitor_wait", monitor_id=mid, timeout_ms=BOUND_S * 1000, timeout=BOUND_S + 10,
                 **{"for": "event"})
    wait_for(lambda: "restart" in [x["type"] for x in events(c, mid)], "the restart event")
    st = c.call("monitor_status", monitor_id=mid)
    # Waiting: running, no process, the delay left.
    assert st["state"] == "running" and st["pid"] is None, (got, st)
    assert 0 < st["restart"]["next_in_ms"] <= 600000, st
    told = c.wait_notification(lambda n: n["monitor_id"] == mid and n["type"] == "output",
                               BOUND_S, "the restart's notification")
    assert "restart 1 of 5 in 10m" in told["reason"], told
    r = c.call("monitor_stop", monitor_id=mid)
    assert r["status"] == "stopped", r
    ending = c.wait_ending(mid, timeout=BOUND_S)
    assert ending["type"] == "stopped", ending
    st = c.call("monitor_status", monitor_id=mid)
    assert st["state"] == "stopped" and st["restart"]["next_in_ms"] is None, st
    types = [x["type"] for x in events(c, mid)]
    assert types == ["started", "restart", "stopped"], types


def test_bad_restart_values_are_refused_and_start_nothing(e):
    c = e.main
    cases = [({"restart": "sometimes"}, ["restart", "on-failure"]),
             ({"restart": "always", "max_restarts": 0}, ["max_restarts", "0"]),
             ({"restart": "always", "max_restarts": 101}, ["max_restarts", "100", "101"]),
             ({"restart": "always", "restart_backoff_ms": 600001},
              ["restart_backoff_ms", "600000"])]
    for fields, words in cases:
        err = expect_error("invalid_params", c.call, "monitor_start", argv=["true"], **fields)
        for w in words:
            assert w in str(err), (fields, str(err))
    assert c.call("monitor_list", include_exited=True)["monitors"] == []


@socket_only
def test_a_restarted_program_is_taken_over_with_its_policy_and_counts(e):
    """The first run fails; the second runs on. After an engine SIGKILL the
    new engine takes the second run over (the spec names its pid and
    keeper), with the restart count, and restarts it when it is killed."""
    marker = os.path.join(e.dir, "ran-once")
    script = 'if [ -e "%s" ]; then exec sleep 600; fi; : > "%s"; exit 1' % (marker, marker)
    e.call("session_open", session="agent")
    mid = e.call("monitor_start", argv=["sh", "-c", script], label="svc", restart="on-failure",
                 restart_backoff_ms=0)["monitor_id"]
    # One status per look: the restart counts before its keeper says hello,
    # so a second call could see the new run still starting (pid nil).
    seen = {}

    def second_run():
        seen["st"] = e.call("monitor_status", monitor_id=mid)
        return seen["st"]["pid"] is not None and seen["st"]["restarts"] == 1

    wait_for(second_run, "the second run")
    before = seen["st"]
    pid = before["pid"]
    wait_for(lambda: open("/proc/%d/comm" % pid).read().strip() == "sleep", "the sleep")
    kill_engine(e)
    e2 = restart_on(e)
    try:
        e2.wait_log("took over %s (svc)" % mid, timeout=BOUND_S)
        c = e2.main
        c.call("session_open", session="agent")
        st = c.call("monitor_status", monitor_id=mid)
        assert st["pid"] == pid and st["restarts"] == 1 and st["state"] == "running", st
        assert st["run_started_at"] == before["run_started_at"], (st, before)
        assert st["restart"]["policy"] == "on-failure", st
        os.kill(pid, signal.SIGKILL)  # a signal vigil did not send: a failure
        wait_for(lambda: c.call("monitor_status", monitor_id=mid)["restarts"] == 2 and
                 c.call("monitor_status", monitor_id=mid)["pid"] not in (None, pid),
                 "the restart after the takeover")
        new = c.call("monitor_status", monitor_id=mid)["pid"]
        assert alive(new) and not alive(pid)
        c.call("monitor_stop", monitor_id=mid)
        c.wait_ending(mid, timeout=BOUND_S)
        assert not alive(new)
    finally:
        e2.close()
    assert os.path.isdir(state_dir(e))


@socket_only
def test_a_restart_waiting_when_the_engine_dies_is_reported_failed(e):
    """docs/restart.md: no keeper runs while a restart waits, so the next
    engine finds none and reports the monitor failed, its ending told once,
    and ends cleanly."""
    e.call("session_open", session="agent")
    mid = e.call("monitor_start", argv=["sh", "-c", "exit 5"], label="svc", restart="always",
                 restart_backoff_ms=600000)["monitor_id"]
    wait_for(lambda: "restart" in [x["type"] for x in events(e.main, mid)], "the restart")
    kill_engine(e)
    e2 = restart_on(e)
    try:
        c = e2.main
        c.call("session_open", session="agent")
        ending = c.wait_ending(mid, timeout=BOUND_S)
        st = c.call("monitor_status", monitor_id=mid)
        assert st["state"] == "failed" and ending["state"] == "failed", (st, ending)
        assert st["restarts"] == 1, st
        e2.proc.send_signal(signal.SIGTERM)
        assert e2.proc.wait(BOUND_S) == 0
    finally:
        e2.close()


def cli(e, *args):
    return subprocess.run([VIGIL, "--socket", e.socket_path, "--session", "cli"] + list(args),
                          capture_output=True, text=True, timeout=60)


@socket_only
def test_the_cli_starts_with_a_policy_and_lists_restarts(e):
    p = cli(e, "start", "--label", "flaky", "--restart", "on-failure", "--restart-backoff",
            "10m", "--", "sh", "-c", "exit 2")
    assert p.returncode == 0, p.stderr
    mid = p.stdout.strip()
    e.call("session_open", session="cli")
    wait_for(lambda: "restart" in [x["type"] for x in events(e.main, mid)], "the restart")
    p = cli(e, "list")
    row = [l for l in p.stdout.splitlines() if l.startswith(mid)]
    assert p.returncode == 0 and len(row) == 1, p.stdout
    header = p.stdout.splitlines()[0]
    assert "restarting" in row[0], p.stdout
    cell = row[0][header.index("RESTARTS"):].split()[0]
    assert cell == "1", p.stdout
    assert cli(e, "stop", mid).returncode == 0
    # The bounds and what goes together, said before anything starts.
    for args, words in ((["--max-restarts", "3"], "go with --restart"),
                        (["--restart", "always", "--max-restarts", "0"], "1..100"),
                        (["--restart", "sometimes"], "on-failure")):
        p = cli(e, "start", *args, "--", "true")
        assert p.returncode == 2 and words in p.stderr, (args, p.returncode, p.stderr)
    assert [m["monitor_id"] for m in
            e.call("monitor_list", include_exited=True)["monitors"]] == [mid]


if __name__ == "__main__":
    sys.exit(run_tests([
        test_a_crash_loop_is_one_incident_and_the_monitor_gives_up_after_max_restarts,
        test_on_failure_leaves_a_clean_exit_and_always_restarts_it,
        test_a_stop_while_a_restart_waits_ends_the_monitor,
        test_bad_restart_values_are_refused_and_start_nothing,
        test_a_restarted_program_is_taken_over_with_its_policy_and_counts,
        test_a_restart_waiting_when_the_engine_dies_is_reported_failed,
        test_the_cli_starts_with_a_policy_and_lists_restarts,
    ]))
