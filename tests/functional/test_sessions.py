"""Sessions through the real vigild (docs/protocol.md section 3): ownership,
busy/idle delivery, live_safe, and a gateway that disconnects and resumes."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (HELPERS, Engine, default_config, expect_error, run_tests,
                       socket_only, wait_group_gone, with_config)

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


@socket_only
def test_session_list_all_lists_every_named_session(e):
    # What `vigil sessions` shows a person: every named session of the
    # engine (any connection of its uid may open them by name), with its
    # counts; never another connection's anonymous session, and only when
    # asked: a plain session_list stays this connection's.
    other = e.connect()
    other.call("monitor_start", command="sleep 30")  # in its anonymous session
    other.call("session_open", session="agent-a")
    other.call("monitor_start", command="sleep 30", session="agent-a")
    e.call("session_open", session="mine")
    plain = [s["session"] for s in e.call("session_list")["sessions"]]
    assert "agent-a" not in plain and len(plain) == 2, plain
    every = e.call("session_list", all=True)["sessions"]
    names = [s["session"] for s in every]
    assert names[0] == plain[0] and names[0].startswith("anon-"), names  # this connection's own
    assert "agent-a" in names and "mine" in names, names
    assert [n for n in names if n.startswith("anon-")] == [names[0]], names
    listed = {s["session"]: s for s in every}
    assert listed["agent-a"]["monitors"] == 1 and listed["agent-a"]["attached"] == 1, listed
    # Listing opened nothing: the session is still not this connection's.
    expect_error("not_found", e.call, "monitor_list", session="agent-a")
    err = expect_error("invalid_params", e.call, "session_list", all="yes")
    assert "all must be a boolean" in err.message, err.message
    other.close()


def test_idle_notifications_held_while_busy(e):
    e.call("session_open", session="agent")
    assert e.call("session_state", state="busy") == {"state": "busy", "delivered": 0}
    # patterns=[]: every line is notified (notify auto -> lines), so an
    # output notification is held as well as the ending.
    mid = e.call("monitor_start", command="sh -c 'echo one; echo two'", patterns=[])["monitor_id"]
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
    # patterns=[]: every line is notified, so each monitor has an output
    # notification to hold back or push ahead.
    idle = e.call("monitor_start", command="echo idle-one", patterns=[])["monitor_id"]
    e.call("monitor_wait", monitor_id=idle, **{"for": "exit"})
    live = e.call("monitor_start", command="echo live-one", mode="live_safe", patterns=[])
    assert live["mode"] == "live_safe" and live["note"] is None
    got = e.main.wait_notification(lambda n: n["monitor_id"] == live["monitor_id"] and n["type"] == "output")
    assert got["mode"] == "live_safe"
    assert [n for n in e.main.drain() if n["monitor_id"] == idle] == []
    e.call("session_state", state="idle")
    held = e.main.wait_notification(lambda n: n["monitor_id"] == idle and n["type"] == "output")
    assert held["seq"] > got["seq"]  # seq is given when pushed: arrival order


def test_live_safe_without_live_mode_is_downgraded_with_a_note(e):
    r = e.call("monitor_start", command="echo hi", mode="live_safe", patterns=[])
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
    # patterns=[]: the line is notified, so two notifications are kept
    # (the output and the exit) to be replayed.
    mid = e.call("monitor_start", command="echo one", patterns=[])["monitor_id"]
    e.main.wait_ending(mid)
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


EPOCH = re.compile(r"^[0-9a-f]{16,}$")


@socket_only
def test_a_resume_older_than_what_is_kept_says_what_was_lost(e):
    gw = e.connect()
    gw.call("session_open", session="gw")
    # Ten notifications: one line each, flushed one by one (a line per
    # batch: monitor.batch_max_lines is 1 here), then the exit.
    mid = gw.call("monitor_start", argv=[TICK, "20", "10"], notify="lines")["monitor_id"]
    end = gw.wait_ending(mid)
    seen = sorted(n["seq"] for n in gw.drain()) + [end["seq"]]
    last = end["seq"]
    assert last >= 6, seen
    gw.close()
    # Resume from seq 1: only the last 4 are kept, so seqs 2..last-4 are lost
    # and a dropped notification says so, first, standing for the last of them.
    gw2 = e.connect()
    r = gw2.call("session_open", session="gw", last_seq=1)
    assert r["resumed"] is True and EPOCH.match(r["epoch"]), r
    got = [gw2.wait_notification(lambda n: True) for _ in range(5)]
    gap = got[0]
    assert gap["type"] == "dropped", got
    assert (gap["from_seq"], gap["to_seq"], gap["dropped"]) == (2, last - 4, last - 5), gap
    assert gap["seq"] == last - 4 and gap["epoch"] == r["epoch"], gap
    assert "2..%d" % (last - 4) in gap["text"], gap["text"]
    assert [n["seq"] for n in got[1:]] == list(range(last - 3, last + 1)), got
    assert got[-1]["type"] == "exit"
    # A cursor inside what is kept loses nothing: no marker.
    gw3 = e.connect()
    gw3.call("session_open", session="gw", last_seq=last - 2)
    got = [gw3.wait_notification(lambda n: True) for _ in range(2)]
    assert [n["seq"] for n in got] == [last - 1, last], got


test_a_resume_older_than_what_is_kept_says_what_was_lost.config = lambda: default_config(
    session={"queue_max": 4}, rate_limit={"max_notifications": 1000},
    monitor={"batch_max_lines": 1})


def test_every_notification_carries_the_engine_epoch(e):
    r = e.call("session_open", session="ep")
    epoch = r["epoch"]
    assert EPOCH.match(epoch), r
    assert e.call("api_info")["epoch"] == epoch
    mid = e.call("monitor_start", argv=["echo", "hi"], notify="lines")["monitor_id"]
    end = e.main.wait_ending(mid)
    notes = e.main.drain() + [end]
    assert notes and all(n["epoch"] == epoch for n in notes), notes
    # Another engine (a restart) has another epoch.
    other = Engine(e.transport)
    try:
        assert other.call("session_open", session="ep")["epoch"] != epoch
    finally:
        other.close()


def test_after_an_engine_restart_a_cursor_continues_above_itself(e):
    # The first engine: a session gets a few notifications.
    e.call("session_open", session="gw")
    for _ in range(3):
        mid = e.call("monitor_start", argv=["echo", "hi"], notify="exit")["monitor_id"]
        end = e.main.wait_ending(mid)
    last, epoch = end["seq"], end["epoch"]
    assert last == 3
    e.stop()
    # The restarted engine does not know the session. Opening it with the
    # cursor must not restart seqs at 1 (a host deduplicating by seq would
    # drop them) and must say that what followed the cursor is lost.
    e2 = Engine(e.transport)
    try:
        r = e2.call("session_open", session="gw", last_seq=last)
        assert r["resumed"] is False and r["epoch"] != epoch, r
        marker = e2.main.wait_notification(lambda n: True)
        assert marker["type"] == "dropped" and marker["seq"] == last + 1, marker
        assert marker["from_seq"] == last + 1 and marker["to_seq"] is None, marker
        assert marker["dropped"] is None and marker["epoch"] == r["epoch"], marker
        assert "after seq %d" % last in marker["text"], marker["text"]
        assert r["next_seq"] == last + 2, r
        mid = e2.call("monitor_start", argv=["echo", "new"], notify="lines")["monitor_id"]
        end = e2.main.wait_ending(mid)
        seqs = sorted(n["seq"] for n in e2.main.drain()) + [end["seq"]]
        assert seqs[0] == last + 2 and seqs == list(range(last + 2, last + 2 + len(seqs))), seqs
        # A fresh session with last_seq 0 (nothing seen) gets no marker.
        r = e2.call("session_open", session="fresh", last_seq=0)
        assert r["next_seq"] == 1
        # A cursor past what the limit allows is refused, naming the bound.
        err = expect_error("invalid_params", e2.call, "session_open", session="big",
                           last_seq=2 ** 60)
        assert "last_seq must be 0..9007199254740991" in err.message, err.message
    finally:
        e2.close()


if __name__ == "__main__":
    sys.exit(run_tests([
        test_ownership_isolation_between_sessions,
        test_two_connections_cannot_see_each_others_anonymous_monitors,
        test_session_list_all_lists_every_named_session,
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
        test_a_resume_older_than_what_is_kept_says_what_was_lost,
        test_every_notification_carries_the_engine_epoch,
        test_after_an_engine_restart_a_cursor_continues_above_itself,
    ]))
