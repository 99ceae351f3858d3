#!/usr/bin/env python3
"""Readiness and health (issue 26, points 1 and 2; core/monitor/monitor_ready.c,
core/proc/probe.c, docs/readiness.md): a monitor declares ready_log,
ready_tcp or ready_http; the engine probes on loopback only, logs a `ready`
event, sets ready_at and tells one notification, or after ready_timeout_ms
a `not_ready` one with the tail; monitor_wait {for: "ready"} answers at
readiness or with the tail. Once ready, health_interval_ms repeats the probe
and only changes of health are told.

The servers are tests/functional/ready_server.py. Every wait is on an event
with a generous bound."""

import os
import re
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from test_restart import BOUND_S, kill_engine, restart_on
from vigiltest import VIGIL, expect_error, run_tests, socket_only, wait_for

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ready_server.py")
BOUND_MS = 60000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def server(mode, port, arg=None):
    # The interpreter running this test, not PATH's python3: that may be a
    # version manager's shim (pyenv's is a shell script), whose start under
    # load ate the readiness bounds these tests set.
    cmd = "exec %s %s %s %d" % (sys.executable, SERVER, mode, port)
    if arg is not None:
        cmd += " %s" % arg
    return ["sh", "-c", cmd]


def wait_ready(c, mid, bound_ms=BOUND_MS):
    return c.call("monitor_wait", monitor_id=mid, timeout_ms=bound_ms, timeout=bound_ms / 1000 + 10,
                  **{"for": "ready"})


def events(c, mid, kind):
    return [e for e in c.call("monitor_events", monitor_id=mid)["events"] if e["type"] == kind]


def notes_with(c, mid, prefix, notes):
    notes.extend(n for n in c.drain() if n.get("monitor_id") == mid)
    return [n for n in notes if (n.get("reason") or "").startswith(prefix)]


def test_a_server_that_binds_late_is_ready_after_its_bind(e):
    c = e.main
    port = free_port()
    mark = tempfile.mktemp(prefix="vigil-ready-")
    mid = c.call("monitor_start", argv=server("late", port, "0.8"), env={"READY_MARK": mark},
                 ready_tcp=port, ready_timeout_ms=BOUND_MS)["monitor_id"]
    st = c.call("monitor_status", monitor_id=mid)
    assert st["ready_at"] is None, st
    got = wait_ready(c, mid)
    assert got["ready"] is True and got["tail"] is None and not got["timed_out"], got
    assert got["event"]["type"] == "ready", got
    assert got["event"]["reason"].startswith("ready after "), got
    assert got["event"]["reason"].endswith("(port %d answering)" % port), got
    # It answered after the bind: the server wrote the mark just before it.
    assert os.path.exists(mark), "ready before the server bound"
    os.unlink(mark)
    st = c.call("monitor_status", monitor_id=mid)
    assert st["ready_at"] is not None and st["state"] == "running", st
    listed = [m for m in c.call("monitor_list")["monitors"] if m["monitor_id"] == mid]
    assert listed and listed[0]["ready_at"] == st["ready_at"], listed
    # One notification says so, framed like every other.
    note = c.wait_notification(lambda n: n.get("monitor_id") == mid and
                               (n.get("reason") or "").startswith("ready after"), timeout=30)
    assert "reason: ready after" in note["text"], note["text"]
    assert "(port %d answering)" % port in note["text"], note["text"]
    assert len(events(c, mid, "ready")) == 1
    c.call("monitor_stop", monitor_id=mid)


def test_the_issues_one_map_form_reads_as_the_flat_fields(e):
    # ready: {tcp: PORT} (a number) and {http: URL, status}: the form the
    # issue gives, the same monitor as ready_tcp / ready_http.
    c = e.main
    port = free_port()
    mark = tempfile.mktemp(prefix="vigil-ready-")
    mid = c.call("monitor_start", argv=server("late", port, "0.3"), env={"READY_MARK": mark},
                 ready={"tcp": port}, ready_timeout_ms=BOUND_MS)["monitor_id"]
    got = wait_ready(c, mid)
    assert got["ready"] is True, got
    assert got["event"]["reason"].endswith("(port %d answering)" % port), got
    # Its start map tells the flat form, so `vigil restart` keeps the probe.
    start = c.call("monitor_status", monitor_id=mid, include_start=True)["start"]
    assert start["ready_tcp"] == port and start["ready_timeout_ms"] == BOUND_MS, start
    c.call("monitor_stop", monitor_id=mid)
    os.path.exists(mark) and os.unlink(mark)
    for bad, words in [({"tcp": 0}, "ready.tcp must be a port of 1..65535, got \"0\""),
                       ({"tcp": port, "log": "up"}, "exactly one of log, tcp and http, got 2"),
                       ({"log": "up", "status": "200"}, "ready.status goes with http"),
                       ({"port": port}, "unknown key \"port\"")]:
        err = expect_error("invalid_params", c.call, "monitor_start", argv=["sleep", "5"],
                           ready=bad)
        assert words in err.message, (words, err.message)
    err = expect_error("invalid_params", c.call, "monitor_start", argv=["sleep", "5"],
                       ready={"tcp": port}, ready_tcp=port)
    assert "one form or the other" in err.message, err.message


def test_ready_log_is_a_line_of_output(e):
    c = e.main
    mid = c.call("monitor_start",
                 argv=["sh", "-c", "echo booting; sleep 0.3; echo 'Local: http://x:5173/' >&2; "
                       "sleep 30"],
                 ready_log=r"Local:\s+http", ready_timeout_ms=BOUND_MS)["monitor_id"]
    got = wait_ready(c, mid)
    assert got["ready"] is True and got["event"]["type"] == "ready", got
    assert got["event"]["line"] == "Local: http://x:5173/", got
    note = c.wait_notification(lambda n: n.get("monitor_id") == mid and
                               (n.get("reason") or "").startswith("ready after"), timeout=30)
    assert "(a line matched ready_log)" in note["reason"], note
    # The line that said it comes framed as output, never inside the reason.
    assert [l["text"] for l in note["lines"]] == ["Local: http://x:5173/"], note
    c.call("monitor_stop", monitor_id=mid)


def test_a_server_that_never_binds_is_not_ready_with_its_tail(e):
    c = e.main
    port = free_port()
    mid = c.call("monitor_start", argv=server("never", port), ready_tcp=port,
                 ready_timeout_ms=1500)["monitor_id"]
    got = wait_ready(c, mid)
    assert got["ready"] is False and not got["timed_out"], got
    assert got["event"]["type"] == "not_ready", got
    reason = got["event"]["reason"]
    assert reason.startswith("not ready after 1.5 s (port %d: " % port), reason
    assert "attempts, the last: connect: connection refused" in reason, reason
    assert "still booting" in got["tail"], got
    # The monitor runs on; the notification has the tail.
    assert c.call("monitor_status", monitor_id=mid)["state"] == "running"
    note = c.wait_notification(lambda n: n.get("monitor_id") == mid and
                               (n.get("reason") or "").startswith("not ready"), timeout=30)
    assert "still booting" in [l["text"] for l in note["lines"]], note
    # A wait after it answers at once, the same.
    again = wait_ready(c, mid)
    assert again["ready"] is False and again["event"]["type"] == "not_ready", again
    c.call("monitor_stop", monitor_id=mid)


def test_a_monitor_that_ends_before_ready_answers_the_wait(e):
    c = e.main
    port = free_port()
    mid = c.call("monitor_start", argv=["sh", "-c", "echo bye; sleep 0.5; exit 3"],
                 ready_tcp=port, ready_timeout_ms=BOUND_MS)["monitor_id"]
    got = wait_ready(c, mid)
    assert got["ready"] is False and got["event"] is None, got
    assert got["state"] == "exited" and got["tail"] == ["bye"], got
    assert events(c, mid, "not_ready") == [] and events(c, mid, "ready") == []


def test_health_changes_are_told_once_each(e):
    c = e.main
    port = free_port()
    flag = tempfile.mktemp(prefix="vigil-health-")
    mid = c.call("monitor_start", argv=server("toggle", port, flag),
                 ready_http="http://localhost:%d/health" % port, health_interval_ms=100,
                 health_failures=2, ready_timeout_ms=BOUND_MS, notify="matches")["monitor_id"]
    assert wait_ready(c, mid)["ready"] is True
    assert c.call("monitor_status", monitor_id=mid)["health"] == "healthy"
    notes = []
    open(flag, "w").close()
    wait_for(lambda: events(c, mid, "health"), "the unhealthy event", timeout=60)
    # Many failed probes later it is still one change.
    first = c.call("monitor_events", monitor_id=mid)["events"][-1]["id"]
    wait_for(lambda: c.call("monitor_output", monitor_id=mid)["lines"][-1]["text"].startswith(
        "request") and len([l for l in c.call("monitor_output", monitor_id=mid)["lines"]
                            if l["text"].startswith("request")]) > 10, "more probes")
    # Every probe is counted: at least one per request the server printed
    # (read first: the count only grows).
    requests = [l for l in c.call("monitor_output", monitor_id=mid)["lines"]
                if l["text"].startswith("request")]
    st = c.call("monitor_status", monitor_id=mid)
    assert st["health"] == "unhealthy"
    assert st["probes"] >= len(requests) > 10, (st["probes"], len(requests))
    os.unlink(flag)
    wait_for(lambda: len(events(c, mid, "health")) == 2, "the healthy event", timeout=60)
    health = events(c, mid, "health")
    assert health[0]["reason"].startswith("unhealthy: 2 health probes failed in a row "), health
    assert "HTTP 503, not within 200..399" in health[0]["reason"], health
    assert health[1]["reason"].startswith("healthy again (http://localhost:%d/health: HTTP 200)"
                                          % port), health
    assert health[1]["id"] > first
    assert c.call("monitor_status", monitor_id=mid)["health"] == "healthy"
    wait_for(lambda: len(notes_with(c, mid, "healthy again", notes)) == 1, "the notification")
    assert len(notes_with(c, mid, "unhealthy", notes)) == 1, notes
    c.call("monitor_stop", monitor_id=mid)


def test_each_health_change_is_an_incident_that_can_be_ignored(e):
    """Point 2: a health change is an incident (kind "health", the change as
    its pattern_name) with the last lines; it is counted, kept for
    monitor_output {incident}, silenced by incident_ignore, and a repeat of a
    change already told is coalesced into its series, not told again."""
    c = e.main
    port = free_port()
    flag = tempfile.mktemp(prefix="vigil-health-")
    mid = c.call("monitor_start", argv=server("toggle", port, flag),
                 ready_http="http://127.0.0.1:%d/" % port, health_interval_ms=100,
                 health_failures=2, ready_timeout_ms=BOUND_MS, notify="matches")["monitor_id"]
    assert wait_ready(c, mid)["ready"] is True
    notes = []

    def incident_notes(change):
        notes.extend(n for n in c.drain() if n.get("monitor_id") == mid)
        return [(n, i) for n in notes for i in n.get("incidents") or []
                if i["kind"] == "health" and i["pattern_name"] == change]

    def flip(unhealthy, count):
        if unhealthy:
            open(flag, "w").close()
        else:
            os.unlink(flag)
        wait_for(lambda: len(events(c, mid, "health")) == count, "health change %d" % count,
                 timeout=60)

    flip(True, 1)
    wait_for(lambda: incident_notes("unhealthy"), "the unhealthy incident's notification")
    note, inc = incident_notes("unhealthy")[0]
    assert note["reason"].startswith("unhealthy: 2 health probes failed in a row"), note
    assert re.fullmatch(r"[0-9a-f]{16}", inc["fingerprint"]), inc
    assert inc["pattern"] is None and inc["summary"] is False, inc
    # Its lines are the last lines, the server's requests among them, and
    # they are the notification's own (framed like every line).
    assert inc["lines"][-1]["text"].startswith("request"), inc
    assert inc["lines"] == note["lines"], note
    assert "incident %d: health (unhealthy)" % inc["id"] in note["text"], note["text"]
    rec = c.call("monitor_output", monitor_id=mid, incident=inc["id"])
    assert rec["incident"]["kind"] == "health", rec
    assert [l["seq"] for l in rec["lines"]] == [l["seq"] for l in inc["lines"]], rec
    counters = c.call("monitor_status", monitor_id=mid)["counters"]
    assert counters["incidents"] == 1, counters

    flip(False, 2)
    wait_for(lambda: incident_notes("healthy"), "the healthy incident's notification")
    healthy = incident_notes("healthy")[0][1]
    assert healthy["fingerprint"] != inc["fingerprint"] and healthy["id"] > inc["id"], healthy

    # The agent silences the unhealthy change: the next one is logged and
    # counted, never told.
    c.call("incident_ignore", fingerprint=inc["fingerprint"], **{"for": "always"})
    flip(True, 3)
    wait_for(lambda: c.call("monitor_status", monitor_id=mid)["counters"]["ignored"] == 1,
             "the ignored change counted")
    # The next healthy change is a repeat of the one told: coalesced.
    flip(False, 4)
    wait_for(lambda: c.call("monitor_status", monitor_id=mid)["counters"]["incidents"] == 4,
             "four health incidents")
    told = [ev for ev in events(c, mid, "incident") if ev.get("kind") == "health"]
    assert [ev["reason"].rsplit(" (", 1)[-1] for ev in told[2:]] == [
        "ignored)", "repeat, coalesced)"], told
    assert told[2]["fingerprint"] == inc["fingerprint"], told
    assert told[3]["fingerprint"] == healthy["fingerprint"], told
    assert len(incident_notes("unhealthy")) == 1 and len(incident_notes("healthy")) == 1, notes
    c.call("monitor_stop", monitor_id=mid)
    c.call("incident_unignore", fingerprint=inc["fingerprint"])


def test_the_bundled_policies_name_readiness_and_health_as_such(e):
    """The Lua policies that word a notice by its reason call a ready or a
    health notice what it is (they called every notice a restart), and the
    Lua envelope names a health incident like the built-in one."""
    c = e.main
    for policy, ready, unhealthy in (
            ("events", "[ready] ", "[health] "),
            ("system_message", "Ready: ready after", "Health: unhealthy: 2 health probes"),
            ("envelope", "reason: ready after", "health (unhealthy)")):
        port = free_port()
        flag = os.path.join(e.dir, "flag-" + policy)
        mid = c.call("monitor_start", argv=server("toggle", port, flag), policy=policy,
                     ready_http="http://127.0.0.1:%d/" % port, health_interval_ms=100,
                     health_failures=2, ready_timeout_ms=BOUND_MS,
                     notify="matches")["monitor_id"]
        r = c.wait_notification(lambda n: n["monitor_id"] == mid and (n.get("reason") or "")
                                .startswith("ready after"), timeout=60, what="ready")
        assert ready in r["text"] and "restart" not in r["text"].lower(), r["text"]
        open(flag, "w").close()
        u = c.wait_notification(lambda n: n["monitor_id"] == mid and (n.get("reason") or "")
                                .startswith("unhealthy"), timeout=60, what="unhealthy")
        assert unhealthy in u["text"] and "restart" not in u["text"].lower(), u["text"]
        c.call("monitor_stop", monitor_id=mid)


def test_off_loopback_probes_are_refused_at_start(e):
    c = e.main
    before = len(c.call("monitor_list")["monitors"])
    for url, words in [("http://example.com/", "must be loopback"),
                       ("http://10.0.0.1:8080/", "must be loopback"),
                       ("http://127.0.0.1.example.com/", "must be loopback"),
                       ("http://[::2]/", "must be loopback"),
                       ("https://127.0.0.1/", "an http:// URL on loopback"),
                       ("http://me@127.0.0.1/", "no user info"),
                       ("http://127.0.0.1:99999/", "port must be from 1 to 65535"),
                       ("http://127.0.0.1/a b", "no space or control byte")]:
        err = expect_error("invalid_params", c.call, "monitor_start", argv=["true"],
                           ready_http=url)
        assert "ready_http" in err.message and words in err.message, (url, err.message)
    err = expect_error("invalid_params", c.call, "monitor_start", argv=["true"], ready_tcp=70000)
    assert "ready_tcp" in err.message and "70000" in err.message, err.message
    err = expect_error("invalid_params", c.call, "monitor_start", argv=["true"], ready_tcp=80,
                       ready_log="x")
    assert "at most one of ready_log, ready_tcp and ready_http" in err.message, err.message
    err = expect_error("invalid_params", c.call, "monitor_start", argv=["true"],
                       ready_http="http://127.0.0.1/", ready_status="600")
    assert "ready_status" in err.message and "600" in err.message, err.message
    assert len(c.call("monitor_list")["monitors"]) == before


def test_a_redirect_loop_is_an_answer_never_followed(e):
    c = e.main
    port = free_port()
    url = "http://127.0.0.1:%d/loop" % port
    mid = c.call("monitor_start", argv=server("redirect", port), ready_http=url,
                 ready_timeout_ms=BOUND_MS)["monitor_id"]
    got = wait_ready(c, mid)
    assert got["ready"] is True and got["event"]["reason"].endswith("(HTTP 302)"), got
    c.call("monitor_stop", monitor_id=mid)
    # Where 302 is not ready, each attempt is one request: no loop.
    mid = c.call("monitor_start", argv=server("redirect", port), ready_http=url,
                 ready_status="200", ready_timeout_ms=2000)["monitor_id"]
    got = wait_ready(c, mid)
    assert got["ready"] is False and "HTTP 302, not within 200..200" in got["event"]["reason"], got
    attempts = int(got["event"]["reason"].split(": ")[1].split(" attempt")[0])
    requests = [l for l in got["tail"] if l.startswith("request")]
    assert 0 < len(requests) <= attempts, (requests, got)
    c.call("monitor_stop", monitor_id=mid)


def test_an_endless_answer_is_cut(e):
    c = e.main
    port = free_port()
    mid = c.call("monitor_start", argv=server("endless", port),
                 ready_http="http://127.0.0.1:%d/" % port, ready_timeout_ms=BOUND_MS)["monitor_id"]
    got = wait_ready(c, mid)
    assert got["ready"] is True and got["event"]["reason"].endswith("(HTTP 200)"), got
    c.call("monitor_stop", monitor_id=mid)
    port = free_port()
    mid = c.call("monitor_start", argv=server("nonewline", port),
                 ready_http="http://127.0.0.1:%d/" % port, ready_timeout_ms=1500)["monitor_id"]
    got = wait_ready(c, mid)
    assert got["ready"] is False, got
    assert "no status line in the answer's first 4096 bytes" in got["event"]["reason"], got
    c.call("monitor_stop", monitor_id=mid)


def test_a_server_that_never_answers_times_out_per_attempt(e):
    c = e.main
    port = free_port()
    mid = c.call("monitor_start", argv=server("silent", port),
                 ready_http="http://127.0.0.1:%d/" % port, ready_timeout_ms=2500)["monitor_id"]
    got = wait_ready(c, mid)
    assert got["ready"] is False, got
    reason = got["event"]["reason"]
    assert "no answer within the attempt's 1000 ms" in reason, reason
    assert " 1 attempt," not in reason, reason
    c.call("monitor_stop", monitor_id=mid)


def test_wait_for_ready_needs_a_declared_readiness(e):
    c = e.main
    mid = c.call("monitor_start", argv=["sleep", "30"])["monitor_id"]
    err = expect_error("invalid_params", wait_ready, c, mid)
    assert 'for: "ready" needs a monitor started with ready_log' in err.message, err.message
    c.call("monitor_stop", monitor_id=mid)


@socket_only
def test_a_ready_monitor_taken_over_stays_ready_and_its_health_resumes(e):
    port = free_port()
    flag = os.path.join(e.dir, "unhealthy")
    e.call("session_open", session="agent")
    mid = e.call("monitor_start", argv=server("toggle", port, flag), label="web",
                 ready_http="http://127.0.0.1:%d/" % port, health_interval_ms=100,
                 health_failures=2, ready_timeout_ms=BOUND_MS)["monitor_id"]
    assert wait_ready(e.main, mid)["ready"] is True
    before = e.call("monitor_status", monitor_id=mid)
    kill_engine(e)
    e2 = restart_on(e)
    try:
        e2.wait_log("took over %s (web)" % mid, timeout=BOUND_S)
        c = e2.main
        c.call("session_open", session="agent")
        st = c.call("monitor_status", monitor_id=mid)
        assert st["ready_at"] == before["ready_at"] and st["health"] == "healthy", st
        got = wait_ready(c, mid)
        assert got["ready"] is True, got
        open(flag, "w").close()
        wait_for(lambda: c.call("monitor_status", monitor_id=mid)["health"] == "unhealthy",
                 "the health probe after the takeover", timeout=BOUND_S)
        assert len(events(c, mid, "ready")) <= 1
        c.call("monitor_stop", monitor_id=mid)
        c.wait_ending(mid, timeout=BOUND_S)
    finally:
        e2.close()


def cli(e, *args):
    env = dict(os.environ, VIGIL_SOCKET=e.socket_path, VIGIL_SESSION="cli")
    return subprocess.run([VIGIL] + list(args), env=env, capture_output=True, text=True,
                          timeout=BOUND_S + 30)


@socket_only
def test_the_cli_waits_for_ready_or_fails_with_the_tail(e):
    port = free_port()
    mark = os.path.join(e.dir, "mark")
    p = cli(e, "start", "--ready-tcp", str(port), "--wait-for-ready", "--", "sh", "-c",
            "READY_MARK=%s exec %s %s late %d 0.5" % (mark, sys.executable, SERVER, port))
    assert p.returncode == 0, (p.returncode, p.stderr)
    mid = p.stdout.strip()
    assert os.path.exists(mark), "returned before the bind"
    assert ("vigil: %s is ready: ready after " % mid) in p.stderr, p.stderr
    assert ("(port %d answering)" % port) in p.stderr, p.stderr
    # vigil status says when.
    st = cli(e, "status", mid)
    assert st.returncode == 0 and re.search(r"^  ready at +\d{4}-", st.stdout, re.M), st.stdout
    assert cli(e, "stop", mid).returncode == 0
    # Never ready: exit 1, the reason and the last lines, the monitor left running.
    p = cli(e, "start", "--ready-tcp", str(free_port()), "--ready-timeout", "1s",
            "--wait-for-ready", "--", "sh", "-c", "echo 'EADDRINUSE \033[31m'; exec sleep 60")
    assert p.returncode == 1, (p.returncode, p.stderr)
    mid = p.stdout.strip()
    assert "not ready after 1.0 s" in p.stderr and "it is still running" in p.stderr, p.stderr
    # Its last lines, escaped for a terminal.
    assert "EADDRINUSE" in p.stderr and "\x1b" not in p.stderr, p.stderr
    assert cli(e, "stop", mid).returncode == 0
    # What goes together is said before anything starts.
    for args, words in ((["--wait-for-ready"], "go with --ready-log"),
                        (["--ready-tcp", "1", "--ready-log", "x"], "give one of"),
                        (["--ready-http", "http://example.com/"], "must be loopback")):
        p = cli(e, "start", *args, "--", "true")
        assert p.returncode in (1, 2) and words in p.stderr, (args, p.returncode, p.stderr)


if __name__ == "__main__":
    sys.exit(run_tests([
        test_the_issues_one_map_form_reads_as_the_flat_fields,
        test_a_server_that_binds_late_is_ready_after_its_bind,
        test_ready_log_is_a_line_of_output,
        test_a_server_that_never_binds_is_not_ready_with_its_tail,
        test_a_monitor_that_ends_before_ready_answers_the_wait,
        test_health_changes_are_told_once_each,
        test_each_health_change_is_an_incident_that_can_be_ignored,
        test_the_bundled_policies_name_readiness_and_health_as_such,
        test_off_loopback_probes_are_refused_at_start,
        test_a_redirect_loop_is_an_answer_never_followed,
        test_an_endless_answer_is_cut,
        test_a_server_that_never_answers_times_out_per_attempt,
        test_wait_for_ready_needs_a_declared_readiness,
        test_a_ready_monitor_taken_over_stays_ready_and_its_health_resumes,
        test_the_cli_waits_for_ready_or_fails_with_the_tail,
    ]))
