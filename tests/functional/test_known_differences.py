"""Each known difference from the contract (docs/protocol.md section 11), shown
through the real vigild, so the page cannot go on describing a behaviour the
engine no longer has. The fourth (an oversized message over --stdio) is shown
in test_transport.py."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (HELPERS, default_config, run_tests, wait_group_gone)

import time

IGNORE_TERM = os.path.join(HELPERS, "child_ignore_term")


def wait_reaped(pid, timeout):
    """Waits (bounded) until pid is gone from the process table, zombie
    included: its parent, the engine, has reaped it."""
    deadline = time.monotonic() + timeout
    while os.path.exists("/proc/%d" % pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def config_with(**monitor):
    cfg = default_config(**{"session": {"queue_max": 2}})
    cfg["monitor"]["allowed_commands"].append(IGNORE_TERM)
    cfg["monitor"].update(monitor)
    return cfg


def test_1_ending_notifications_are_never_the_ones_dropped(e):
    # queue_max is 2; four monitors end while the session is busy. The
    # queue then holds four endings: more than queue_max, none dropped.
    e.call("session_open", session="busy")
    e.call("session_state", state="busy")
    mids = [e.call("monitor_start", command="true", notify="exit")["monitor_id"]
            for _ in range(4)]
    for mid in mids:
        e.call("monitor_wait", monitor_id=mid, **{"for": "exit"})
    queued = [s for s in e.call("session_list")["sessions"] if s["session"] == "busy"][0]
    assert queued["queued"] == 4, queued
    e.call("session_state", state="idle")
    for mid in mids:
        assert e.main.wait_ending(mid)["type"] == "exit"
    assert not [n for n in e.main.drain() if n["type"] == "dropped"]


test_1_ending_notifications_are_never_the_ones_dropped.config = config_with


def test_2_a_second_stop_while_a_stop_is_under_way_answers_at_once(e):
    # patterns=[]: every line is notified, so the helper's "ready" line
    # (printed once SIGTERM is ignored) arrives as an output notification.
    mid = e.call("monitor_start", argv=[IGNORE_TERM], patterns=[])["monitor_id"]
    e.main.wait_notification(lambda n: n["type"] == "output", what="ready")
    # The first stop waits for the process (SIGTERM is ignored: it takes the
    # whole grace, then SIGKILL); the second, no stronger (its SIGKILL would
    # come later), is answered before it, with the state of that moment. A
    # stronger one (SIGKILL, a shorter grace) would go through: test_methods.
    first = e.main.request("monitor_stop", {"monitor_id": mid, "grace_ms": 3000})
    second = e.call("monitor_stop", monitor_id=mid, signal="SIGINT", grace_ms=3000)
    assert second["status"] == "already_stopped" and second["state"] == "running", second
    # The second stop sent nothing: the monitor ends as the first decided,
    # after its grace.
    done = e.main.wait_response(first)
    assert done["status"] == "stopped" and done["state"] == "stopped", done
    assert done["signal"] == "SIGKILL", done


test_2_a_second_stop_while_a_stop_is_under_way_answers_at_once.config = config_with


def test_3_closing_a_named_session_stops_its_monitors_without_endings(e):
    e.call("session_open", session="gone")
    r = e.call("monitor_start", command="sleep 60")
    assert e.call("session_close", session="gone")["stopped"] == 1
    assert wait_group_gone(r["pid"], 15), "the closed session's monitor is still running"
    # Once the engine has reaped it, its ending has been made (and had
    # nowhere to go); a ping's answer comes after anything written before.
    assert wait_reaped(r["pid"], 15), "the engine never reaped the stopped process"
    e.call("ping")
    assert not [n for n in e.main.drain() if n.get("session") == "gone"
                and n["type"] != "output"]


test_3_closing_a_named_session_stops_its_monitors_without_endings.config = config_with


if __name__ == "__main__":
    sys.exit(run_tests([
        test_1_ending_notifications_are_never_the_ones_dropped,
        test_2_a_second_stop_while_a_stop_is_under_way_answers_at_once,
        test_3_closing_a_named_session_stops_its_monitors_without_endings,
    ]))
