"""Every method of docs/protocol.md section 5 and every error code of section 3,
through the real vigild, over --stdio and over the socket."""

import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (ERROR_CODES, default_config, expect_error, run_tests,
                       scratch_dir, with_config, HELPERS)

TICK = os.path.join(HELPERS, "child_tick")


def test_ping_and_api_info(e):
    r = e.call("ping")
    assert r["api_level"] == 1 and isinstance(r["version"], str)
    anon = e.call("session_list")["sessions"][0]["session"]
    assert e.call("ping", session=anon) == r  # every method takes `session`
    expect_error("not_found", e.call, "ping", session="not-mine")
    info = e.call("api_info")
    for m in ("ping", "api_info", "session_open", "session_state", "session_close",
              "session_list", "monitor_start", "monitor_stop", "monitor_list",
              "monitor_status", "monitor_output", "monitor_logs", "monitor_events",
              "monitor_wait", "process_run"):
        assert m in info["methods"], m
    assert info["error_codes"] == ERROR_CODES
    assert set(info["notification_types"]) >= {"output", "exit", "stopped", "timed_out",
                                               "idle_timeout", "overload", "dropped",
                                               "policy_error"}
    assert info["limits"]["monitor.flush_interval_ms"] == 200
    assert info["limits"]["rate_limit.max_notifications"] == 8
    assert info["limits"]["monitor.max_patterns"] == 32
    counters = info["counters"]
    assert counters["monitors_running"] == 0 and counters["connections"] >= 1
    assert counters["connections_closed_slow"] == 0 and counters["notifications_dropped"] == 0


def test_unknown_method_and_unknown_argument(e):
    err = expect_error("unknown_method", e.call, "no_such_method")
    assert "no_such_method" in err.message
    err = expect_error("invalid_params", e.call, "ping", colour="blue")
    assert 'unknown argument "colour"' in err.message


def test_monitor_lifecycle_methods(e):
    r = e.call("monitor_start", command="sh -c 'echo one; echo Error: two >&2; echo three'",
               label="demo", description="a demo", patterns=["^Error:"], notify="lines")
    mid = r["monitor_id"]
    assert mid.startswith("mon_") and len(mid) >= 12
    assert r["label"] == "demo" and r["mode"] == "idle" and r["notify"] == "lines"
    assert r["note"] is None and r["pid"] > 0 and r["started_at"].endswith(("Z", ":00")) or "T" in r["started_at"]
    end = e.main.wait_ending(mid)
    assert end["type"] == "exit" and end["exit_code"] == 0 and end["state"] == "exited"

    status = e.call("monitor_status", monitor_id=mid)
    for key in ("monitor_id", "label", "description", "mode", "notify", "state", "pid",
                "started_at", "ended_at", "exit_code", "signal", "counters", "last_line",
                "duration_ms", "resource_usage"):
        assert key in status, key
    assert status["description"] == "a demo"
    assert status["counters"]["lines"] == 3 and status["counters"]["matched"] == 1
    # The matching line became an incident of its own (docs/incidents.md).
    assert status["counters"]["incidents"] == 1, status["counters"]
    assert status["counters"]["incidents_coalesced"] == 0, status["counters"]
    assert set(status["resource_usage"]) == {"cpu_ms", "memory_peak_bytes", "io_read_bytes",
                                             "io_write_bytes"}
    # The command line is told only inside `start` (what monitor_start would
    # take again), never as a field of its own, and `start` only when asked.
    assert "command" not in status and "argv" not in status
    assert status["start"] is None and "sh -c" not in repr(status), status
    asked = e.call("monitor_status", monitor_id=mid, include_start=True)
    assert asked["start"]["argv"] == ["sh", "-c", "echo one; echo Error: two >&2; echo three"]

    out = e.call("monitor_output", monitor_id=mid)
    assert [l["text"] for l in out["lines"] if l["stream"] == "stdout"] == ["one", "three"]
    assert out["next_sequence"] == 3
    matched = e.call("monitor_output", monitor_id=mid, stream="matched")
    assert [(l["text"], l["pattern"]) for l in matched["lines"]] == [("Error: two", 0)]
    newer = e.call("monitor_output", monitor_id=mid, since_sequence=2)
    assert [l["seq"] for l in newer["lines"]] == [3]
    assert e.call("monitor_output", monitor_id=mid, since_sequence=3)["next_sequence"] == 3

    logs = e.call("monitor_logs", monitor_id=mid)
    assert logs["stdout"] == b"one\nthree\n" and logs["stderr"] == b"Error: two\n"
    assert logs["stdout_size"] == 10 and logs["truncated"] is False
    part = e.call("monitor_logs", monitor_id=mid, stream="stdout", offset=4, limit=3)
    assert part["stdout"] == b"thr" and part["stderr"] is None

    ev = e.call("monitor_events", monitor_id=mid)
    types = [x["type"] for x in ev["events"]]
    # The match is logged per line as before; with incidents on (the
    # default) the line also opened an incident, which is logged after it.
    assert types == ["started", "match", "incident", "exited"], types
    assert ev["dropped"] == 0
    assert '] ' in ev["text"] and 'match (pattern 0 "^Error:") Error: two' in ev["text"]
    inc = ev["events"][2]
    assert len(inc) == 15 and len(ev["events"][1]) == 9, (inc, ev["events"][1])
    assert (inc["incident"], inc["kind"], inc["pattern"], inc["line"], inc["lines"],
            inc["repeats"], inc["repeat_span_ms"]) == (1, "message", 0, "Error: two", 1, 0, 0), inc
    assert re.fullmatch(r"[0-9a-f]{16}", inc["fingerprint"]), inc
    assert "incident 1 message (1 line) fingerprint %s: Error: two" % inc["fingerprint"] \
        in ev["text"], ev["text"]
    assert [x["type"] for x in e.call("monitor_events", monitor_id=mid, since_event_id=2)["events"]] == ["incident", "exited"]

    listed = e.call("monitor_list")
    assert listed["total"] == 0  # ended monitors only with include_exited
    listed = e.call("monitor_list", include_exited=True)
    assert listed["total"] == 1 and listed["monitors"][0]["monitor_id"] == mid
    assert e.call("monitor_list", state="exited")["total"] == 1
    expect_error("invalid_params", e.call, "monitor_list", state="sleeping")

    err = expect_error("already_exited", e.call, "monitor_stop", monitor_id=mid)
    assert mid in err.message


def test_monitor_stop_answers_when_the_process_is_gone(e):
    # patterns=[]: every line is notified, so "ready" says the trap is set.
    r = e.call("monitor_start", argv=["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"],
               patterns=[])
    mid = r["monitor_id"]
    e.main.wait_notification(lambda n: n["type"] == "output" and n["monitor_id"] == mid)
    stopped = e.call("monitor_stop", monitor_id=mid, grace_ms=200)
    assert stopped == {"status": "stopped", "state": "stopped", "exit_code": None, "signal": "SIGKILL"}, stopped
    again = e.call("monitor_stop", monitor_id=mid)
    assert again["status"] == "already_stopped"
    end = e.main.wait_ending(mid)
    assert end["type"] == "stopped" and end["signal"] == "SIGKILL"
    expect_error("invalid_params", e.call, "monitor_stop", monitor_id=mid, signal="SIGNOPE")


def test_a_stronger_stop_goes_through_during_a_grace(e):
    # Issue 22 point 18: SIGKILL during a 10 min grace answered
    # already_stopped and sent nothing, so the kill waited out the grace.
    r = e.call("monitor_start", argv=["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"],
               patterns=[])
    mid = r["monitor_id"]
    e.main.wait_notification(lambda n: n["type"] == "output" and n["monitor_id"] == mid)
    first = e.main.request("monitor_stop", {"monitor_id": mid, "grace_ms": 600000})
    # As strong or weaker: answered at once, nothing sent (the stop above is
    # under way once this answer comes: requests are served in order).
    same = e.call("monitor_stop", monitor_id=mid, grace_ms=600000)
    assert same == {"status": "already_stopped", "state": "running", "exit_code": None,
                    "signal": None}, same
    started = time.monotonic()
    stronger = e.call("monitor_stop", monitor_id=mid, signal="SIGKILL")
    assert time.monotonic() - started < 60, "SIGKILL waited for the grace"
    assert stronger == {"status": "stopped", "state": "stopped", "exit_code": None,
                        "signal": "SIGKILL"}, stronger
    assert e.main.wait_response(first) == stronger
    end = e.main.wait_ending(mid)
    # The first cause names the ending; the signal is what ended it.
    assert (end["type"], end["signal"]) == ("stopped", "SIGKILL"), end
    assert end["reason"] == "stopped by request (SIGTERM)", end["reason"]


def test_a_stop_without_escalation_sends_only_its_signal(e):
    # escalate: false (seed 001's force_after 0): SIGTERM and no SIGKILL, so
    # a process that handles SIGTERM lives on; a later stop with a grace,
    # stronger, ends it. The child counts 30 ticks of 0.1 s after its
    # SIGTERM: 3 s, six times the tests' kill_grace_ms.
    script = ("trap 'echo term; n=0' TERM; echo ready; "
              "while :; do sleep 0.1; [ -n \"$n\" ] && n=$((n+1)); "
              "[ \"$n\" = 30 ] && echo still alive; done")
    r = e.call("monitor_start", argv=["sh", "-c", script], patterns=["^(ready|term|still alive)$"],
               incidents=False)
    mid = r["monitor_id"]
    line = lambda text: lambda n: (n["type"] == "output" and n["monitor_id"] == mid
                                   and any(l["text"] == text for l in n["lines"]))
    e.main.wait_notification(line("ready"), what="ready")
    err = expect_error("invalid_params", e.call, "monitor_stop", monitor_id=mid, escalate=False,
                       grace_ms=1000)
    assert "grace_ms" in err.message and "escalate: false" in err.message, err.message
    first = e.main.request("monitor_stop", {"monitor_id": mid, "escalate": False})
    e.main.wait_notification(line("term"), what="the trap's line")
    e.main.wait_notification(line("still alive"), what="the child alive 3 s after SIGTERM")
    same = e.call("monitor_stop", monitor_id=mid, escalate=False)
    assert (same["status"], same["state"]) == ("already_stopped", "running"), same
    assert e.call("monitor_status", monitor_id=mid)["state"] == "running"
    stronger = e.call("monitor_stop", monitor_id=mid, grace_ms=0)
    assert stronger == {"status": "stopped", "state": "stopped", "exit_code": None,
                        "signal": "SIGKILL"}, stronger
    assert e.main.wait_response(first) == stronger


def test_command_splitting_refusals(e):
    err = expect_error("invalid_params", e.call, "monitor_start", command="echo 'unbalanced")
    assert "unbalanced single quote" in err.message and "position 5" in err.message
    err = expect_error("invalid_params", e.call, "monitor_start", command="echo hi | cat")
    assert '"|"' in err.message and "position 8" in err.message
    for cmd in ("echo a; echo b", "echo a && echo b", "echo $(id)", "echo `id`", "cat < x",
                "echo > x", "sleep 1 &"):
        expect_error("invalid_params", e.call, "monitor_start", command=cmd)
    expect_error("invalid_params", e.call, "monitor_start", command="")
    expect_error("invalid_params", e.call, "monitor_start")
    expect_error("invalid_params", e.call, "monitor_start", command="echo", argv=["echo"])
    # Quoted operators are plain arguments.
    r = e.call("monitor_start", command="echo 'a | b' \"c ; d\"")
    e.main.wait_ending(r["monitor_id"])
    out = e.call("monitor_output", monitor_id=r["monitor_id"])
    assert [l["text"] for l in out["lines"]] == ["a | b c ; d"]


def test_allowlist_denial(e):
    err = expect_error("denied", e.call, "monitor_start", command="rm -rf /tmp/nothing")
    assert '"rm"' in err.message and "monitor.allowed_commands" in err.message
    # A path never matches a bare entry.
    expect_error("denied", e.call, "monitor_start", argv=["/usr/bin/echo", "x"])
    assert e.call("monitor_list", include_exited=True)["total"] == 0


@with_config(monitor={"allowed_commands": [], "allow_shell": False})
def test_empty_allowlist_and_shell_denied(e):
    err = expect_error("denied", e.call, "monitor_start", command="echo hi")
    assert "empty" in err.message
    err = expect_error("denied", e.call, "monitor_start", command="echo hi", shell=True)
    assert "allow_shell" in err.message


def test_patterns_refused(e):
    err = expect_error("invalid_pattern", e.call, "monitor_start", command="echo x",
                       patterns=["ok", "fine", "(foo"])
    assert 'patterns[2] "(foo"' in err.message and "missing closing parenthesis" in err.message
    assert "offset 4" in err.message
    err = expect_error("limit_exceeded", e.call, "monitor_start", command="echo x",
                       patterns=["p%d" % i for i in range(33)])
    assert "32" in err.message and "33" in err.message
    expect_error("invalid_pattern", e.call, "monitor_start", command="echo x",
                 patterns=["x" * 513])
    r = e.call("monitor_start", command="echo x", patterns=["p%d" % i for i in range(32)])
    e.main.wait_ending(r["monitor_id"])


def test_bounds_name_argument_bound_and_value(e):
    err = expect_error("invalid_params", e.call, "monitor_start", command="echo x",
                       idle_timeout_ms=3600001)
    assert err.message == "invalid_params: idle_timeout_ms must be 0..3600000, got 3600001"
    # Numbers as given, never in exponent form (%g printed 3.6e+06 and 1.23457e+06).
    err = expect_error("invalid_params", e.call, "monitor_start", command="echo x",
                       idle_timeout_ms=3600001.5)
    assert err.message == "invalid_params: idle_timeout_ms must be an integer, got 3600001.5"
    err = expect_error("invalid_params", e.call, "monitor_start", command="echo x",
                       cpu_limit=1234567.0)
    assert err.message == "invalid_params: cpu_limit must be 0.001..4096, got 1234567", err.message
    err = expect_error("invalid_params", e.call, "monitor_start", command="echo x", notify="all")
    assert '"auto" | "matches" | "lines" | "exit" | "none"' in err.message and '"all"' in err.message
    err = expect_error("invalid_params", e.call, "monitor_start", command="echo x", label=7)
    assert "label must be a string, got integer" in err.message
    mid = e.call("monitor_start", command="sleep 30")["monitor_id"]
    err = expect_error("invalid_params", e.call, "monitor_wait", monitor_id=mid, timeout_ms=3600001)
    assert "timeout_ms must be 0..3600000, got 3600001" in err.message
    e.call("monitor_stop", monitor_id=mid, grace_ms=0)
    err = expect_error("invalid_params", e.call, "monitor_start", command="echo x",
                       cpu_limit=float(os.cpu_count() + 1))
    assert "cpu_limit: must be at most this machine's %d cores, got %d" % (
        os.cpu_count(), os.cpu_count() + 1) in err.message
    err = expect_error("invalid_params", e.call, "monitor_start", command="echo x", cwd="/no/such/dir")
    assert '"/no/such/dir" does not exist' in err.message
    assert e.call("monitor_list", include_exited=True)["total"] == 1  # only the sleep


@with_config(monitor={"allowed_commands": ["echo", "vigil-no-such-program"]})
def test_not_found_and_command_not_found(e):
    err = expect_error("not_found", e.call, "monitor_status", monitor_id="mon_doesnotexist")
    assert "mon_doesnotexist" in err.message
    expect_error("not_found", e.call, "monitor_output", session="nobody", monitor_id="mon_x")
    err = expect_error("command_not_found", e.call, "monitor_start", argv=["vigil-no-such-program"])
    assert "vigil-no-such-program" in err.message


def _spawn_failed_config():
    cfg = default_config()
    cfg["monitor"]["allowed_commands"].append(BROKEN)
    return cfg


BROKEN_DIR = scratch_dir("vigil-ft-broken-")
BROKEN = os.path.join(BROKEN_DIR, "broken")
with open(BROKEN, "wb") as f:
    f.write(b"\x7fELF\x00garbage that is no executable")
os.chmod(BROKEN, 0o755)


def test_spawn_failed_leaves_nothing(e):
    err = expect_error("spawn_failed", e.call, "monitor_start", argv=[BROKEN])
    assert "Exec format error" in err.message
    assert e.call("monitor_list", include_exited=True)["total"] == 0


test_spawn_failed_leaves_nothing.config = _spawn_failed_config


@with_config(monitor={"enabled": False})
def test_disabled(e):
    err = expect_error("disabled", e.call, "monitor_start", command="echo hi")
    assert "monitor.enabled" in err.message
    expect_error("disabled", e.call, "process_run", command="echo hi")


@with_config(monitor={"max_monitors_per_session": 2, "allow_shell": True,
                      "allowed_commands": ["sleep", "echo"]})
def test_per_session_monitor_cap(e):
    anon = e.call("session_list")["sessions"][0]["session"]
    a = e.call("monitor_start", command="sleep 30")["monitor_id"]
    e.call("monitor_start", command="sleep 30")
    err = expect_error("limit_exceeded", e.call, "monitor_start", command="sleep 30")
    assert "max_monitors_per_session" in err.message and "2" in err.message
    # Another session has its own slots.
    e.call("session_open", session="other")
    c = e.call("monitor_start", command="echo other")["monitor_id"]
    e.main.wait_ending(c)
    # An ended monitor frees its slot.
    e.main.call("monitor_stop", session=anon, monitor_id=a)
    assert e.main.call("monitor_start", session=anon, command="sleep 30")["monitor_id"]


def test_monitor_wait_for_output(e):
    # A monitor notified only of matches still wakes an output waiter for an
    # unmatched line: the first-class way to follow a monitor's lines.
    mid = e.call("monitor_start", argv=[TICK, "200", "3"], patterns=["^never$"])["monitor_id"]
    w = e.call("monitor_wait", monitor_id=mid, **{"for": "output"}, since_sequence=0,
               timeout_ms=20000)
    assert w["timed_out"] is False and w["event"] is None and w["last_sequence"] >= 1, w
    seen = w["last_sequence"]
    w2 = e.call("monitor_wait", monitor_id=mid, **{"for": "output"}, since_sequence=seen,
                timeout_ms=20000)
    assert w2["last_sequence"] > seen, w2
    # Nothing newer: it times out.
    e.main.wait_ending(mid)
    w3 = e.call("monitor_wait", monitor_id=mid, **{"for": "output"}, since_sequence=3,
                timeout_ms=100)
    assert w3["last_sequence"] == 3 and w3["event"] is None and w3["state"] == "exited"


def test_internal_error_when_the_os_fails(e):
    # An OS failure the protocol has no other code for: the engine's own
    # working directory was removed, so a start without cwd cannot resolve one.
    gone = tempfile.mkdtemp(prefix="vigil-ft-cwd-")
    from vigiltest import Engine
    e2 = Engine(e.transport, default_config(), cwd=gone)
    try:
        os.rmdir(gone)
        err = expect_error("internal", e2.call, "monitor_start", command="echo hi")
        assert "cwd" in err.message
        # An explicit cwd still works.
        r = e2.call("monitor_start", command="echo hi", cwd="/")
        e2.main.wait_ending(r["monitor_id"])
    finally:
        e2.close()


def test_monitor_wait_on_event_and_timeout(e):
    r = e.call("monitor_start", argv=[TICK, "100", "30"], patterns=["^tick 5$"], notify="matches")
    mid = r["monitor_id"]
    w = e.call("monitor_wait", monitor_id=mid, timeout_ms=100)
    assert w["timed_out"] is True and w["event"] is None and w["state"] == "running"
    w = e.call("monitor_wait", monitor_id=mid, **{"for": "match"}, timeout_ms=20000)
    assert w["timed_out"] is False and w["event"]["type"] == "match", w
    assert w["event"]["line"] == "tick 5" and w["event"]["pattern"] == 0
    # Waiting does not block the connection: a ping answers meanwhile.
    msgid = e.main.request("monitor_wait", {"monitor_id": mid, "for": "exit", "timeout_ms": 30000})
    assert e.call("ping")["api_level"] == 1
    done = e.main.wait_response(msgid, 30)
    assert done["event"]["type"] == "exited" and done["state"] == "exited"
    # Already there: answers at once.
    again = e.call("monitor_wait", monitor_id=mid, **{"for": "exit"})
    assert again["event"]["type"] == "exited"


def test_process_run_foreground_with_stdin(e):
    r = e.call("process_run", command="cat", stdin=b"hello\nworld\n")
    assert r["state"] == "exited" and r["exit_code"] == 0
    assert r["stdout_summary"] == "hello\nworld" and r["stderr_summary"] == ""
    assert r["process_id"].startswith("mon_") and r["duration_ms"] >= 0
    assert set(r["resource_usage"]) == {"cpu_ms", "memory_peak_bytes", "io_read_bytes", "io_write_bytes"}
    r = e.call("process_run", command="sh -c 'for i in 1 2 3 4 5; do echo $i; done; exit 3'",
               stdout_lines=2)
    assert r["exit_code"] == 3 and r["stdout_summary"] == "4\n5"
    # The process is a monitor: its output can be read afterwards.
    out = e.call("monitor_output", monitor_id=r["process_id"])
    assert len(out["lines"]) == 5


def test_process_run_timeout_keeps_partial_output(e):
    r = e.call("process_run", command="sh -c 'echo before; echo oops >&2; exec sleep 60'",
               timeout_s=1)
    assert r["state"] == "timed_out" and r["exit_code"] is None, r
    assert r["stdout_summary"] == "before" and r["stderr_summary"] == "oops"


def test_process_run_timeout_has_no_exit_code_even_if_the_process_exits_cleanly(e):
    r = e.call("process_run", command="sh -c 'trap \"echo bye; exit 0\" TERM; echo up; while :; do sleep 0.1; done'",
               timeout_s=1)
    assert r["state"] == "timed_out" and r["exit_code"] is None, r


def test_process_run_background_honours_timeout_s(e):
    r = e.call("process_run", command="sleep 30", background=True, timeout_s=1)
    end = e.main.wait_ending(r["process_id"])
    assert end["type"] == "timed_out", end


def test_process_run_background(e):
    r = e.call("process_run", command="sh -c 'sleep 0.3; echo done'", background=True)
    assert r["state"] == "running" and r["exit_code"] is None
    pid = r["process_id"]
    end = e.main.wait_ending(pid)
    assert end["type"] == "exit" and end["exit_code"] == 0
    assert e.call("monitor_status", monitor_id=pid)["state"] == "exited"
    assert e.call("monitor_output", monitor_id=pid)["lines"][0]["text"] == "done"


def test_notification_shape(e):
    # patterns=[]: no matching, so the plain line is notified (notify auto
    # resolves to lines).
    r = e.call("monitor_start", command="echo hello", label="greeter", patterns=[])
    assert r["notify"] == "lines", r
    n = e.main.wait_notification(lambda n: n["type"] == "output")
    for key in ("session", "seq", "type", "monitor_id", "label", "mode", "batch", "lines",
                "incidents", "incidents_withheld", "incidents_coalesced", "incidents_dropped",
                "suppressed", "state", "exit_code", "signal", "duration_ms", "text", "at"):
        assert key in n, key
    assert n["incidents"] == [] and n["incidents_withheld"] == 0, n
    assert n["incidents_coalesced"] == 0 and n["incidents_dropped"] == 0, n
    assert n["batch"] == 1 and n["lines"][0] == {"seq": 1, "stream": "stdout", "text": "hello",
                                                  "pattern": None, "truncated": False}
    assert "stream_policy: untrusted_observation" in n["text"]
    assert "[stdout seq=1] hello" in n["text"] and "greeter" in n["text"]
    assert "echo" not in n["text"].replace("hello", "")
    end = e.main.wait_ending(r["monitor_id"])
    assert end["seq"] == n["seq"] + 1 and end["duration_ms"] is not None


def page_logs(e, mid, stream, limit, offset=0):
    """Pages a capture with limit until `more` is false; returns the bytes
    per stream, the pages and the last answer."""
    got = {"stdout": b"", "stderr": b""}
    offsets = {"stdout": offset, "stderr": offset}
    pages = 0
    while True:
        # One offset for both streams, as the method takes: page one stream
        # at a time, or both while they are in step.
        key = "stdout" if stream != "stderr" else "stderr"
        r = e.call("monitor_logs", monitor_id=mid, stream=stream, offset=offsets[key],
                   limit=limit)
        pages += 1
        for name in ("stdout", "stderr"):
            if r[name] is not None:
                got[name] += r[name]
                assert r[name + "_next_offset"] is not None, r
                offsets[name] = r[name + "_next_offset"]
            else:
                assert r[name + "_next_offset"] is None, r
        if not r["more"]:
            return got, pages, r
        assert pages < 10000


def test_monitor_logs_pages_with_more_and_next_offset(e):
    # Distinct content so that a byte read twice or skipped shows.
    mid = e.call("monitor_start", argv=["seq", "1", "3000"])["monitor_id"]
    e.main.wait_ending(mid)
    full = "".join("%d\n" % i for i in range(1, 3001)).encode()
    got, pages, last = page_logs(e, mid, "stdout", 1000)
    assert got["stdout"] == full, (len(got["stdout"]), len(full))
    assert pages == -(-len(full) // 1000), pages
    assert last["stdout_next_offset"] == len(full) == last["stdout_size"]
    assert last["truncated"] is False and last["more"] is False
    # More is true exactly when bytes are left past what was returned.
    r = e.call("monitor_logs", monitor_id=mid, stream="stdout", offset=0, limit=len(full) - 1)
    assert r["more"] is True and r["stdout_next_offset"] == len(full) - 1
    r = e.call("monitor_logs", monitor_id=mid, stream="stdout", offset=0, limit=len(full))
    assert r["more"] is False and r["truncated"] is False
    r = e.call("monitor_logs", monitor_id=mid, stream="stdout", offset=len(full) + 5)
    assert r["stdout"] == b"" and r["more"] is False
    assert r["stdout_next_offset"] == len(full) + 5  # nothing past it yet: ask again from there
    # Both streams: more while either has more, each with its own next offset.
    mid = e.call("monitor_start", command="sh -c 'echo 0123456789; echo abc >&2'")["monitor_id"]
    e.main.wait_ending(mid)
    r = e.call("monitor_logs", monitor_id=mid, offset=0, limit=4)
    assert (r["stdout"], r["stderr"]) == (b"0123", b"abc\n"), r
    assert (r["stdout_next_offset"], r["stderr_next_offset"]) == (4, 4) and r["more"] is True
    r = e.call("monitor_logs", monitor_id=mid, offset=4)
    assert r["stdout"] == b"456789\n" and r["more"] is False


def test_monitor_logs_paging_after_eviction_starts_at_the_oldest_kept_byte(e):
    mid = e.call("monitor_start", argv=["seq", "1", "3000"])["monitor_id"]
    e.main.wait_ending(mid)
    full = "".join("%d\n" % i for i in range(1, 3001)).encode()
    kept = full[-4096:]
    r = e.call("monitor_logs", monitor_id=mid, stream="stdout", offset=0, limit=1000)
    # truncated keeps the contract's meaning: the start asked for was evicted.
    assert r["truncated"] is True and r["stdout"] == kept[:1000], r
    assert r["stdout_next_offset"] == len(full) - 4096 + 1000 and r["more"] is True
    got, pages, last = page_logs(e, mid, "stdout", 1000, offset=r["stdout_next_offset"])
    assert r["stdout"] + got["stdout"] == kept
    assert last["truncated"] is False and last["more"] is False


test_monitor_logs_paging_after_eviction_starts_at_the_oldest_kept_byte.config = \
    lambda: default_config(monitor={"capture_max_bytes": 4096})


def test_the_ring_keeps_what_the_capture_keeps_and_counts_the_rest(e):
    # Issue 27: the ring's plain lines are offsets into the capture, so a
    # small capture_max_bytes (4 KiB) bounds them: of 3000 lines the ring
    # keeps those whose bytes the capture still has (fewer than
    # ring_max_lines), each reading as the process wrote it, and counts the
    # others as dropped.
    e.call("session_open", session="agent")
    mid = e.call("monitor_start", argv=["seq", "1", "3000"])["monitor_id"]
    e.main.wait_ending(mid)
    lines = e.call("monitor_output", monitor_id=mid)["lines"]
    counters = e.call("monitor_status", monitor_id=mid)["counters"]
    assert counters["lines"] == 3000, counters
    assert 0 < len(lines) < 1000, len(lines)
    assert all(l["text"] == str(l["seq"]) for l in lines), lines[:3]
    assert lines[-1]["seq"] == 3000 and [l["seq"] for l in lines] == \
        list(range(3001 - len(lines), 3001))
    # The oldest kept line's bytes lie within the stream's last 4096 bytes,
    # and the line before it did not fit there.
    assert sum(len(l["text"]) + 1 for l in lines) <= 4096
    assert sum(len(l["text"]) + 1 for l in lines) + len(str(lines[0]["seq"] - 1)) + 1 > 4096
    assert counters["dropped"] == 3000 - len(lines), counters


test_the_ring_keeps_what_the_capture_keeps_and_counts_the_rest.config = \
    lambda: default_config(monitor={"capture_max_bytes": 4096})


if __name__ == "__main__":
    sys.exit(run_tests([
        test_ping_and_api_info,
        test_unknown_method_and_unknown_argument,
        test_monitor_lifecycle_methods,
        test_monitor_stop_answers_when_the_process_is_gone,
        test_a_stronger_stop_goes_through_during_a_grace,
        test_a_stop_without_escalation_sends_only_its_signal,
        test_command_splitting_refusals,
        test_allowlist_denial,
        test_empty_allowlist_and_shell_denied,
        test_patterns_refused,
        test_bounds_name_argument_bound_and_value,
        test_not_found_and_command_not_found,
        test_spawn_failed_leaves_nothing,
        test_disabled,
        test_per_session_monitor_cap,
        test_monitor_wait_for_output,
        test_internal_error_when_the_os_fails,
        test_monitor_wait_on_event_and_timeout,
        test_process_run_foreground_with_stdin,
        test_process_run_timeout_keeps_partial_output,
        test_process_run_timeout_has_no_exit_code_even_if_the_process_exits_cleanly,
        test_process_run_background_honours_timeout_s,
        test_process_run_background,
        test_notification_shape,
        test_monitor_logs_pages_with_more_and_next_offset,
        test_monitor_logs_paging_after_eviction_starts_at_the_oldest_kept_byte,
        test_the_ring_keeps_what_the_capture_keeps_and_counts_the_rest,
    ]))
