"""Sessions through the real vigild (PROTOCOL.md section 2): ownership,
busy/idle delivery, live_safe, and a gateway that disconnects and resumes."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (HELPERS, RpcError, expect_error, run_tests, socket_only, wait_group_gone,
                       with_config)

TICK = os.path.join(HELPERS, "child_tick")


def test_ownership_isolation_between_sessions(e):
    e.call("session_open", session="alice")
    mid = e.call("monitor_start", command="sleep 30")["monitor_id"]
    e.call("session_open", session="bob")
    # From bob, alice's monitor is exactly like an unknown one.
    for method in ("monitor_status", "monitor_output", "monitor_logs", "monitor_events",
                   "monitor_stop", "monitor_wait"):
        theirs = expect_error("not_found", e.call, method, monitor_id=mid)
        unknown = expect_error("not_found", e.call, method, monitor_id="mon_000000000000")
        assert theirs.message.replace(mid, "X") == unknown.message.replace("mon_000000000000", "X")
    assert e.call("monitor_list", include_exited=True)["total"] == 0
    # A session this connection has not opened cannot be named.
    expect_error("not_found", e.call, "monitor_list", session="carol")
    # Alice still sees it.
    assert e.main.call("monitor_status", session="alice", monitor_id=mid)["state"] == "running"
    listed = {s["session"]: s for s in e.call("session_list")["sessions"]}
    assert listed["alice"]["monitors"] == 1 and listed["bob"]["monitors"] == 0
    closed = e.main.call("session_close", session="alice")
    assert closed["stopped"] == 1
    expect_error("not_found", e.call, "monitor_list", session="alice")


@socket_only
def test_two_connections_cannot_see_each_others_anonymous_monitors(e):
    other = e.connect()
    mid = other.call("monitor_start", command="sleep 30")["monitor_id"]
    expect_error("not_found", e.call, "monitor_status", monitor_id=mid)
    assert e.call("monitor_list")["total"] == 0
    # Closing that connection stops its anonymous session's monitors.
    pgid = other.call("monitor_status", monitor_id=mid)["pid"]
    other.close()
    assert wait_group_gone(pgid, 15), "the closed connection's monitor is still running"


def test_idle_notifications_held_while_busy(e):
    e.call("session_open", session="agent")
    assert e.call("session_state", state="busy") == {"state": "busy", "delivered": 0}
    mid = e.call("monitor_start", command="sh -c 'echo one; echo two'")["monitor_id"]
    e.call("monitor_wait", monitor_id=mid, **{"for": "exit"})
    # The monitor has ended, and still nothing was pushed.
    assert e.call("session_list")["sessions"][1]["queued"] >= 2
    assert [n for n in e.main.drain() if n["session"] == "agent"] == []
    r = e.call("session_state", state="idle")
    assert r["state"] == "idle" and r["delivered"] >= 2
    out = e.main.wait_notification(lambda n: n["type"] == "output")
    end = e.main.wait_ending(mid)
    assert out["seq"] < end["seq"]


@with_config(monitor={"live_mode_enabled": True})
def test_live_safe_goes_ahead_while_busy(e):
    e.call("session_open", session="agent")
    e.call("session_state", state="busy")
    idle = e.call("monitor_start", command="echo idle-one")["monitor_id"]
    e.call("monitor_wait", monitor_id=idle, **{"for": "exit"})
    live = e.call("monitor_start", command="echo live-one", mode="live_safe")
    assert live["mode"] == "live_safe" and live["note"] is None
    got = e.main.wait_notification(lambda n: n["monitor_id"] == live["monitor_id"] and n["type"] == "output")
    assert got["mode"] == "live_safe"
    assert [n for n in e.main.drain() if n["monitor_id"] == idle] == []
    e.call("session_state", state="idle")
    held = e.main.wait_notification(lambda n: n["monitor_id"] == idle and n["type"] == "output")
    assert held["seq"] > got["seq"]  # seq is given when pushed: arrival order


def test_live_safe_without_live_mode_is_downgraded_with_a_note(e):
    r = e.call("monitor_start", command="echo hi", mode="live_safe")
    assert r["mode"] == "idle"
    assert "live_mode_enabled" in r["note"]
    n = e.main.wait_notification(lambda n: n["type"] == "output")
    assert n["mode"] == "idle"


@socket_only
@with_config(rate_limit={"max_notifications": 1000})
def test_disconnect_mid_stream_and_resume_loses_nothing(e):
    gw = e.connect()
    gw.call("session_open", session="gateway")
    mid = gw.call("monitor_start", argv=[TICK, "50", "40"], notify="lines")["monitor_id"]
    # Receive a few notifications, remember the last seq seen, then vanish.
    first = gw.wait_notification(lambda n: n["type"] == "output")
    seen = [first]
    last_seq = first["seq"]
    gw.close()
    # The monitor keeps running with nobody attached; wait for it through
    # another connection that opens the same session later.
    gw2 = e.connect()
    r = gw2.call("session_open", session="gateway", last_seq=last_seq)
    assert r["resumed"] is True
    end = gw2.wait_ending(mid, timeout=30)
    rest = [n for n in gw2.drain()] + [end]
    rest.sort(key=lambda n: n["seq"])
    seqs = [n["seq"] for n in rest]
    assert seqs == list(range(last_seq + 1, last_seq + 1 + len(seqs))), seqs
    ticks = [l["text"] for n in seen + rest if n["type"] == "output" for l in n["lines"]]
    assert ticks == ["tick %d" % i for i in range(1, 41)], ticks
    assert rest[-1]["type"] == "exit"


@socket_only
@with_config(session={"linger_ms": 200})
def test_unattached_named_session_expires_after_linger(e):
    gw = e.connect()
    gw.call("session_open", session="short")
    mid = gw.call("monitor_start", command="sleep 30")["monitor_id"]
    pgid = gw.call("monitor_status", monitor_id=mid)["pid"]
    gw.close()
    # Nobody re-attaches: after the linger its monitors are stopped. The
    # wait is on the process itself (bounded), as nothing else is there to tell.
    assert wait_group_gone(pgid, 15), "the expired session's monitor still runs"
    gw2 = e.connect()
    assert gw2.call("session_open", session="short")["resumed"] is False


def test_session_open_without_a_name_and_close(e):
    r = e.call("session_open")
    assert r["session"].startswith("ses_") and r["resumed"] is False and r["next_seq"] == 1
    expect_error("invalid_params", e.call, "session_open", session="anon-1")
    expect_error("invalid_params", e.call, "session_open", session="bad name!")
    expect_error("invalid_params", e.call, "session_state", state="sleepy")
    assert e.call("session_close")["stopped"] == 0


def test_ending_notification_after_all_output(e):
    mid = e.call("monitor_start",
                 command="sh -c 'i=0; while [ $i -lt 300 ]; do echo line $i; i=$((i+1)); done; printf partial'",
                 notify="lines")["monitor_id"]
    end = e.main.wait_ending(mid)
    outputs = [n for n in e.main.drain() if n["monitor_id"] == mid]
    assert all(n["seq"] < end["seq"] for n in outputs)
    assert end["state"] == "exited"
    delivered = sum(len(n["lines"]) for n in outputs)
    reported = sum(n["suppressed"] for n in outputs) + end["suppressed"]
    assert delivered + reported == 301  # 300 lines and the partial one
    assert end["lines"][-1]["text"] == "partial"


def test_closing_the_anonymous_session_still_delivers_endings(e):
    mid = e.call("monitor_start", command="sleep 30")["monitor_id"]
    assert e.call("session_close")["stopped"] == 1
    end = e.main.wait_ending(mid)
    assert end["type"] == "stopped" and end["state"] == "stopped"
    # The connection's session is still there, and empty of ended monitors.
    assert e.call("monitor_list", include_exited=True)["total"] in (0, 1)
    assert e.call("ping", session=e.call("session_list")["sessions"][0]["session"])


def test_reopening_with_last_seq_replays_kept_notifications(e):
    e.call("session_open", session="again")
    mid = e.call("monitor_start", command="echo one")["monitor_id"]
    end = e.main.wait_ending(mid)
    e.main.drain()
    r = e.call("session_open", session="again", last_seq=0)
    assert r["resumed"] is True
    replayed = [e.main.wait_notification(lambda n: True) for _ in range(2)]
    assert [n["seq"] for n in replayed] == [1, 2] and replayed[1]["type"] == "exit"


@with_config(session={"max_sessions": 2})
def test_named_sessions_are_bounded(e):
    e.call("session_open", session="one")
    e.call("session_open", session="two")
    err = expect_error("limit_exceeded", e.call, "session_open", session="three")
    assert "session.max_sessions is 2" in err.message
    assert e.call("session_open", session="one")["resumed"] is True  # existing ones still open
    e.call("session_close", session="two")
    assert e.call("session_open", session="three")["resumed"] is False


if __name__ == "__main__":
    sys.exit(run_tests([
        test_ownership_isolation_between_sessions,
        test_two_connections_cannot_see_each_others_anonymous_monitors,
        test_idle_notifications_held_while_busy,
        test_live_safe_goes_ahead_while_busy,
        test_live_safe_without_live_mode_is_downgraded_with_a_note,
        test_disconnect_mid_stream_and_resume_loses_nothing,
        test_unattached_named_session_expires_after_linger,
        test_session_open_without_a_name_and_close,
        test_ending_notification_after_all_output,
        test_closing_the_anonymous_session_still_delivers_endings,
        test_reopening_with_last_seq_replays_kept_notifications,
        test_named_sessions_are_bounded,
    ]))
