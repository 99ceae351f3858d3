"""monitor_status's `start` (a vigil addition, docs/protocol.md section 5):
the monitor_start arguments that start the same monitor again. A client
that did not start a monitor (a person's `vigil restart` of what an agent
started) sends it back to monitor_start and gets the same thing: the same
argv, cwd, env, patterns and choices, so the same lines match.

It can hold secrets (an API key in env, a token in an argument), so it is
told only when asked for (include_start), and env's values only when
asked for again (reveal_env); a status that did not ask has start nil."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import expect_error, run_tests, socket_only, with_config
from test_restart import kill_engine, restart_on

# Prints one line that shows its env and cwd, then waits to be stopped.
SCRIPT = 'echo "boom $GREETING in $(pwd)"; echo quiet >&2; exec sleep 60'


def matched_line(e, mid):
    """The text of the first notified line of mid that matched a pattern."""
    n = e.main.wait_notification(
        lambda n: n.get("monitor_id") == mid and any(
            l["pattern"] is not None for l in n.get("lines") or []),
        what="a matching line of %s" % mid)
    return [l["text"] for l in n["lines"] if l["pattern"] is not None][0]


def full_status(e, mid):
    """monitor_status with the start map and its env values: what vigil
    restart asks for."""
    return e.call("monitor_status", monitor_id=mid, include_start=True, reveal_env=True)


def full_start(e, mid):
    return full_status(e, mid)["start"]


def stop(e, mid):
    e.call("monitor_stop", monitor_id=mid, grace_ms=100)


def test_start_sent_again_starts_the_same_monitor(e):
    with tempfile.TemporaryDirectory() as tmp:
        real = os.path.realpath(tmp)
        # A relative path through a symlink: the start map has it resolved.
        link = os.path.join(tmp, "here")
        os.symlink(real, link)
        r = e.call("monitor_start", argv=["sh", "-c", SCRIPT], cwd=link + "/.",
                   env={"GREETING": "hi there", "EMPTY": ""}, label="dev server",
                   description="the one the agent started", patterns=[r"^boom (\w+)"],
                   match_streams="stdout", notify="matches", incidents=False,
                   envelope="compact", mode="idle", timeout_ms=120000, idle_timeout_ms=90000,
                   memory_limit=512 << 20, cpu_limit=1.5, line_buffered=True)
        first = r["monitor_id"]
        start = full_start(e, first)
        assert start == {
            "argv": ["sh", "-c", SCRIPT], "command": None, "shell": False, "cwd": real,
            "env": {"GREETING": "hi there", "EMPTY": ""}, "line_buffered": True,
            "label": "dev server", "description": "the one the agent started",
            "patterns": [r"^boom (\w+)"], "match_streams": "stdout", "notify": "matches",
            "incidents": False, "envelope": "compact", "mode": "idle", "policy": "envelope",
            "timeout_ms": 120000, "persistent": False, "idle_timeout_ms": 90000,
            "quiet_after_ms": 0,
            "restart": "no", "max_restarts": 5, "restart_backoff_ms": 1000,
            "memory_limit": 512 << 20, "cpu_limit": 1.5,
            "source": None, "ready_log": None, "ready_tcp": None, "ready_http": None,
            "ready_status": None, "ready_timeout_ms": None, "health_interval_ms": None,
            "health_failures": None,
        }, start
        assert matched_line(e, first) == "boom hi there in " + real
        stop(e, first)

        again = e.call("monitor_start", **start)
        second = again["monitor_id"]
        assert second != first and again["label"] == "dev server"
        status = full_status(e, second)
        assert status["start"] == start, status["start"]
        assert status["description"] == "the one the agent started"
        assert status["envelope"] == "compact" and status["incidents"] is False
        assert matched_line(e, second) == "boom hi there in " + real
        stop(e, second)
        # monitor_list stays a table: no start maps in it.
        listed = e.call("monitor_list", include_exited=True)["monitors"]
        assert {m["monitor_id"] for m in listed} >= {first, second}
        assert all("start" not in m for m in listed)


@with_config(monitor={"max_runtime_ms": 600000})
def test_defaults_are_told_so_a_new_start_gets_them_again(e):
    # A shell command, no label, no patterns: the start map says command and
    # shell, no label (the new monitor gets its own id), patterns nil (the
    # built-in crash patterns again), the runtime cap the config gave.
    command = 'echo "panic: $((6 * 7))"; exec sleep 60'
    r = e.call("monitor_start", command=command, shell=True)
    first = r["monitor_id"]
    start = full_start(e, first)
    assert start["argv"] is None and start["command"] == command and start["shell"] is True
    assert os.path.isabs(start["cwd"]) and os.path.isdir(start["cwd"]), start
    assert start["label"] is None and start["description"] is None
    assert start["patterns"] is None and start["env"] == {}
    assert start["timeout_ms"] == 600000 and start["persistent"] is False
    assert start["memory_limit"] is None and start["cpu_limit"] is None
    assert start["notify"] == "auto" and start["mode"] == "idle" and start["incidents"] is True
    assert start["idle_timeout_ms"] == 0
    assert matched_line(e, first) == "panic: 42"
    stop(e, first)

    second = e.call("monitor_start", **start)["monitor_id"]
    status = full_status(e, second)
    assert status["start"] == start and status["label"] == second
    assert status["program"] == "/bin/sh"
    assert matched_line(e, second) == "panic: 42"
    stop(e, second)

    # persistent: no cap, and timeout_ms nil.
    third = e.call("monitor_start", argv=["sleep", "60"], persistent=True, patterns=[])
    start = full_start(e, third["monitor_id"])
    assert start["persistent"] is True and start["timeout_ms"] is None
    assert start["patterns"] == [] and start["argv"] == ["sleep", "60"]
    stop(e, third["monitor_id"])
    fourth = e.call("monitor_start", **start)["monitor_id"]
    assert full_start(e, fourth) == start
    stop(e, fourth)


def test_bytes_that_are_not_utf8_come_back_as_bin_unchanged(e):
    # A directory's name and an argument are bytes to the OS: the start map
    # gives them as msgpack bin (a str decoder would fail on them), and
    # monitor_start takes them back as they are.
    tmp = tempfile.mkdtemp(prefix="vigil-ft-odd-").encode()
    odd = os.path.join(tmp, b"odd\xff")
    os.mkdir(odd)
    try:
        arg = b"caf\xe9"
        r = e.call("monitor_start", argv=["sh", "-c", 'echo "boom $1 in $(pwd)"', "sh", arg],
                   cwd=odd, patterns=["^boom"])
        start = full_start(e, r["monitor_id"])
        assert start["cwd"] == os.path.realpath(odd), start["cwd"]
        assert start["argv"] == ["sh", "-c", 'echo "boom $1 in $(pwd)"', "sh", arg], start
        e.main.wait_ending(r["monitor_id"])
        again = e.call("monitor_start", **start)["monitor_id"]
        assert full_start(e, again) == start
        e.main.wait_ending(again)
        out = e.call("monitor_logs", monitor_id=again, stream="stdout")["stdout"]
        assert out == b"boom caf\xe9 in " + os.path.realpath(odd) + b"\n", out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


SECRET = "sk-live-0123456789abcdef"


def test_start_only_when_asked_and_env_values_only_when_revealed(e):
    r = e.call("monitor_start", argv=["sh", "-c", 'echo "$API_KEY" >/dev/null; exec sleep 60',
                                      "sh", "--token=" + SECRET],
               env={"API_KEY": SECRET, "MODE": "dev"}, label="keyed")
    mid = r["monitor_id"]
    # Not asked: the key is there (every documented key is), nil, and no
    # argument or env value is anywhere in the answer.
    plain = e.call("monitor_status", monitor_id=mid)
    assert "start" in plain and plain["start"] is None, plain
    assert SECRET not in repr(plain), plain
    # Asked: argv and env names, the values nil.
    asked = e.call("monitor_status", monitor_id=mid, include_start=True)["start"]
    assert asked["argv"][-1] == "--token=" + SECRET, asked
    assert asked["env"] == {"API_KEY": None, "MODE": None}, asked
    assert SECRET not in repr(asked["env"]), asked
    # Sent back as it is, a redacted map is refused: never a start with
    # its variables missing.
    err = expect_error("invalid_params", e.call, "monitor_start", **asked)
    assert "env.API_KEY" in err.message, err.message
    # Asked and revealed: the values.
    full = full_start(e, mid)
    assert full["env"] == {"API_KEY": SECRET, "MODE": "dev"}, full
    assert {k: v for k, v in full.items() if k != "env"} == \
        {k: v for k, v in asked.items() if k != "env"}
    # reveal_env alone is a mistake, said with the argument's name.
    err = expect_error("invalid_params", e.call, "monitor_status", monitor_id=mid,
                       reveal_env=True)
    assert "reveal_env" in err.message and "include_start" in err.message, err.message
    err = expect_error("invalid_params", e.call, "monitor_status", monitor_id=mid,
                       include_start="yes")
    assert "include_start" in err.message, err.message
    stop(e, mid)


@socket_only
def test_a_monitor_taken_over_after_a_crash_still_tells_its_start(e):
    # The start map is kept in the monitor's spec (docs/restart.md), so the
    # engine that takes the monitor over reports it as the one before did.
    e.call("session_open", session="agent")
    r = e.call("monitor_start", argv=["sh", "-c", SCRIPT], env={"GREETING": "kept"},
               label="kept", patterns=["^boom"], cpu_limit=0.5, envelope="compact")
    mid = r["monitor_id"]
    start = full_start(e, mid)
    assert start["env"] == {"GREETING": "kept"} and start["cpu_limit"] == 0.5, start
    kill_engine(e)
    with restart_on(e) as e2:
        e2.call("session_open", session="agent")
        assert full_start(e2, mid) == start
        e2.call("monitor_stop", monitor_id=mid, grace_ms=100)


if __name__ == "__main__":
    sys.exit(run_tests([
        test_start_sent_again_starts_the_same_monitor,
        test_defaults_are_told_so_a_new_start_gets_them_again,
        test_bytes_that_are_not_utf8_come_back_as_bin_unchanged,
        test_start_only_when_asked_and_env_values_only_when_revealed,
        test_a_monitor_taken_over_after_a_crash_still_tells_its_start,
    ]))
