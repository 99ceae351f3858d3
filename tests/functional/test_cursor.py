"""A session's named model cursors through the real vigild (docs/protocol.md
section 5, "Model cursors"; issue 23 item 1): cursor_take gives the kept
notifications above a cursor, exactly as they were pushed, and moves the
cursor in the same step, so two readers, on two connections, never get the
same seq; a take that waits is woken by the push (a crash line within the
batch window), and one whose connection closed takes nothing; what the
session no longer keeps is said as dropped, never skipped; a cursor and the
notifications it points at survive an engine restart (SIGKILL and SIGUSR2):
a take after it gives exactly what was not taken; every bad argument is
refused naming the argument, the bound and the value.

Every wait is on an event with a generous bound (an answer, a notification,
a log line): the CI machine is a loaded 2-core box."""

import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (default_config, expect_error, run_tests, socket_only, with_config)
from test_restart import BOUND_S, kill_engine, restart_on

# One notification per matched line, none withheld.
MANY = {"monitor": {"batch_max_lines": 1}, "rate_limit": {"max_notifications": 1000}}


def produce(conn, n, session=None):
    """A monitor printing n matched lines, each its own notification, then
    its exit: n + 1 notifications. Returns the ending once it was pushed to
    conn (after every one of its outputs), taken off conn's queue."""
    script = 'i=0; while [ $i -lt %d ]; do i=$((i+1)); echo "MATCH $i"; done' % n
    args = {"argv": ["sh", "-c", script], "patterns": ["^MATCH"], "incidents": False}
    mid = conn.call("monitor_start", session=session, **args)["monitor_id"]
    return conn.wait_ending(mid, timeout=BOUND_S)


def seqs(result):
    return [n["seq"] for n in result["notifications"]]


def answered(conn, msgid):
    """Whether conn has the answer to msgid, after a ping on conn has made a
    round trip (the engine reads a connection's calls in order, so a take
    sent before the ping and not answered by then is waiting)."""
    conn.call("ping")
    with conn.lock:
        return msgid in conn.responses


@with_config(**MANY)
def test_a_take_gives_the_pushed_notifications_once(e):
    info = e.call("api_info")
    for m in ("cursor_take", "cursor_get", "cursor_advance", "notifications_since"):
        assert m in info["methods"], m
    assert info["limits"]["session.max_cursors"] == 16, info["limits"]
    e.call("session_open", session="agent")
    assert e.call("cursor_get", cursor="model") == {"cursor": 0, "last_seq": 0, "kept_from": None}
    ending = produce(e.main, 2)
    pushed = [n for n in e.main.drain() if n["session"] == "agent"] + [ending]
    assert [n["seq"] for n in pushed] == [1, 2, 3], pushed
    took = e.call("cursor_take", cursor="model")
    # Exactly the maps pushed, text (the untrusted-observation frame) and all.
    assert took["notifications"] == pushed, (took["notifications"], pushed)
    assert "MATCH 1" in took["notifications"][0]["text"]
    assert took["cursor"] == 3 and took["last_seq"] == 3, took
    assert took["dropped"] == 0 and took["dropped_from"] is None and took["dropped_to"] is None
    # Taken once.
    again = e.call("cursor_take", cursor="model")
    assert again["notifications"] == [] and again["cursor"] == 3, again
    assert e.call("cursor_get", cursor="model") == {"cursor": 3, "last_seq": 3, "kept_from": 1}
    # Another cursor is its own; a read since a seq moves nothing.
    since = e.call("notifications_since", since_seq=1, limit=1)
    assert seqs(since) == [2] and since["last_seq"] == 3 and since["dropped"] == 0, since
    assert e.call("cursor_get", cursor="hook")["cursor"] == 0
    assert seqs(e.call("cursor_take", cursor="hook", limit=2)) == [1, 2]
    # Advance: forward only, never past the last seq.
    assert e.call("cursor_advance", cursor="hook", to=1) == {"cursor": 2}
    assert e.call("cursor_advance", cursor="hook", to=3) == {"cursor": 3}
    assert e.call("cursor_take", cursor="hook")["notifications"] == []
    listed = [s for s in e.call("session_list")["sessions"] if s["session"] == "agent"][0]
    assert listed["cursors"] == {"model": 3, "hook": 3}, listed


def test_what_waits_for_idle_is_not_taken_until_it_goes(e):
    e.call("session_open", session="agent")
    e.call("session_state", state="busy")
    mid = e.call("monitor_start", argv=["sh", "-c", "echo MATCH 1"], patterns=["^MATCH"],
                 mode="idle")["monitor_id"]
    e.call("monitor_wait", monitor_id=mid, timeout_ms=BOUND_S * 1000, **{"for": "exit"})
    listed = [s for s in e.call("session_list")["sessions"] if s["session"] == "agent"][0]
    assert listed["queued"] == 2, listed
    # Held (no seq yet): nothing to take.
    took = e.call("cursor_take", cursor="model")
    assert took["notifications"] == [] and took["last_seq"] == 0, took
    e.call("session_state", state="idle")
    assert seqs(e.call("cursor_take", cursor="model")) == [1, 2]


@with_config(session={"queue_max": 4}, **MANY)
def test_what_the_session_no_longer_keeps_is_said_never_skipped(e):
    e.call("session_open", session="agent")
    produce(e.main, 7)  # seqs 1..8, the last 4 kept
    took = e.call("cursor_take", cursor="model", limit=2)
    assert seqs(took) == [5, 6], took
    assert (took["dropped"], took["dropped_from"], took["dropped_to"]) == (4, 1, 4), took
    assert took["cursor"] == 6 and took["last_seq"] == 8
    assert e.call("cursor_get", cursor="model")["kept_from"] == 5
    rest = e.call("cursor_take", cursor="model")
    assert seqs(rest) == [7, 8] and rest["dropped"] == 0, rest
    since = e.call("notifications_since", since_seq=2)
    assert seqs(since) == [5, 6, 7, 8] and (since["dropped_from"], since["dropped_to"]) == (3, 4)


@socket_only
@with_config(**MANY)
def test_two_readers_taking_at_once_never_get_the_same_seq(e):
    total = 120
    e.call("session_open", session="agent")
    readers = [e.connect(), e.connect()]
    for r in readers:
        r.call("session_open", session="agent")
    got = [[], []]
    done = threading.Event()
    errors = []

    def read(i):
        try:
            deadline = time.monotonic() + BOUND_S
            while not done.is_set() and time.monotonic() < deadline:
                took = readers[i].call("cursor_take", cursor="model", limit=3, wait_ms=1000)
                got[i] += seqs(took)
                if len(got[0]) + len(got[1]) >= total + 1:
                    done.set()
        except Exception as x:  # reported by the main thread
            errors.append(x)
            done.set()

    threads = [threading.Thread(target=read, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    produce(e.main, total)
    for t in threads:
        t.join(BOUND_S + 5)
    assert not errors, errors
    both = got[0] + got[1]
    assert sorted(both) == list(range(1, total + 2)), (got, len(both))
    for g in got:
        assert g == sorted(g), g  # each reader's in order


@socket_only
def test_two_waiters_on_one_cursor_each_get_one_notification(e):
    e.call("session_open", session="agent")
    a, b = e.connect(), e.connect()
    for c in (a, b):
        c.call("session_open", session="agent")
    wa = a.request("cursor_take", {"cursor": "model", "wait_ms": 600000})
    assert not answered(a, wa)
    wb = b.request("cursor_take", {"cursor": "model", "wait_ms": 600000})
    assert not answered(b, wb)
    e.call("monitor_start", argv=["sh", "-c", "echo 'ERROR one'; exec sleep 600"],
           patterns=["ERROR"])
    first = a.wait_response(wa, BOUND_S)
    assert seqs(first) == [1] and "ERROR one" in first["notifications"][0]["text"], first
    # The other waits on: the notification was the first waiter's.
    assert not answered(b, wb)
    e.call("monitor_stop", monitor_id=e.call("monitor_list")["monitors"][0]["monitor_id"])
    second = b.wait_response(wb, BOUND_S)
    assert seqs(second) == [2] and second["notifications"][0]["type"] == "stopped", second


def test_a_waiter_is_woken_by_a_crash_line_within_the_batch_window(e):
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    script = 'while [ ! -e "%s" ]; do sleep 0.02; done; echo "panic: boom"; exec sleep 600' % go
    mid = e.call("monitor_start", argv=["sh", "-c", script], patterns=["panic:"])["monitor_id"]
    waiting = e.main.request("cursor_take", {"cursor": "model", "wait_ms": 600000})
    assert not answered(e.main, waiting)
    start = time.monotonic()
    open(go, "w").close()
    woken = e.main.wait_response(waiting, BOUND_S)
    took_s = time.monotonic() - start
    assert seqs(woken) == [1] and "panic: boom" in woken["notifications"][0]["text"], woken
    # The batch window (200 ms) and the child's own polling, with a generous
    # bound for a loaded machine: far below the 600 s the take would wait.
    assert took_s < 30, took_s
    # A wait that times out answers with nothing, the cursor where it was.
    late = e.call("cursor_take", cursor="model", wait_ms=50)
    assert late["notifications"] == [] and late["cursor"] == 1, late
    e.call("monitor_stop", monitor_id=mid)


@socket_only
def test_a_waiter_whose_connection_closed_takes_nothing(e):
    e.call("session_open", session="agent")
    other = e.connect()
    other.call("session_open", session="agent")
    other.request("cursor_take", {"cursor": "model", "wait_ms": 600000})
    other.call("ping")  # the take is waiting
    other.close()
    e.wait_log("closed: ", timeout=BOUND_S)
    produce(e.main, 1)
    took = e.call("cursor_take", cursor="model")
    assert seqs(took) == [1, 2], took


@socket_only
def test_a_waiter_of_a_closed_session_is_told(e):
    e.call("session_open", session="agent")
    other = e.connect()
    other.call("session_open", session="agent")
    waiting = other.request("cursor_take", {"cursor": "model", "wait_ms": 600000})
    assert not answered(other, waiting)
    e.call("session_close", session="agent")
    err = expect_error("not_found", other.wait_response, waiting, BOUND_S)
    assert 'session "agent" was closed while cursor_take waited' in err.message, err.message


def cursor_before_restart(e):
    """Seqs 1..6 in session agent; model took 1..2, hook advanced to 5."""
    e.call("session_open", session="agent")
    produce(e.main, 5)
    assert seqs(e.call("cursor_take", cursor="model", limit=2)) == [1, 2]
    assert e.call("cursor_advance", cursor="hook", to=5) == {"cursor": 5}


def cursor_after_restart(conn):
    """On a connection to the engine that came back: each cursor goes on
    exactly where it was."""
    conn.call("session_open", session="agent")
    assert conn.call("cursor_get", cursor="model") == {"cursor": 2, "last_seq": 6, "kept_from": 1}
    took = conn.call("cursor_take", cursor="model")
    # Exactly what was not taken: nothing at or below the cursor again,
    # nothing above it lost, with the text it had.
    assert seqs(took) == [3, 4, 5, 6] and took["dropped"] == 0, took
    assert "MATCH 3" in took["notifications"][0]["text"]
    assert seqs(conn.call("cursor_take", cursor="hook")) == [6]
    assert conn.call("cursor_take", cursor="model")["notifications"] == []


@socket_only
@with_config(**MANY)
def test_a_sigkill_restart_keeps_the_cursor_and_what_it_points_at(e):
    cursor_before_restart(e)
    kill_engine(e)
    with restart_on(e, config=default_config(**MANY)) as again:
        cursor_after_restart(again.main)


@socket_only
@with_config(**MANY)
def test_a_sigusr2_restart_keeps_the_cursor_and_what_it_points_at(e):
    cursor_before_restart(e)
    os.kill(e.proc.pid, signal.SIGUSR2)
    e.wait_log("(the socket handed over, fd ", timeout=BOUND_S)
    cursor_after_restart(e.connect())


@with_config(session={"queue_max": 8, "max_cursors": 2})
def test_bad_arguments_are_refused_naming_argument_bound_and_value(e):
    e.call("session_open", session="agent")
    err = expect_error("invalid_params", e.call, "cursor_take")
    assert err.message == "invalid_params: cursor is required", err.message
    err = expect_error("invalid_params", e.call, "cursor_take", cursor="a b")
    assert err.message == ('invalid_params: cursor: "a b" must be 1..64 characters of '
                           '[A-Za-z0-9._:-]'), err.message
    err = expect_error("invalid_params", e.call, "cursor_get", cursor="x" * 65)
    assert "must be 1..64 characters" in err.message, err.message
    err = expect_error("invalid_params", e.call, "cursor_take", cursor="m", limit=9)
    assert err.message == ('invalid_params: limit must be 1..8, got 9 (session "agent" keeps '
                           'at most 8 notifications: session.queue_max)'), err.message
    err = expect_error("invalid_params", e.call, "cursor_take", cursor="m", limit=0)
    assert "limit must be 1..8" in err.message and "got 0" in err.message, err.message
    err = expect_error("invalid_params", e.call, "cursor_take", cursor="m", wait_ms=3600001)
    assert err.message == "invalid_params: wait_ms must be 0..3600000, got 3600001", err.message
    err = expect_error("invalid_params", e.call, "cursor_advance", cursor="m", to=1)
    assert err.message == ('invalid_params: to must be 0..0 (session "agent"\'s last seq), '
                           'got 1'), err.message
    err = expect_error("invalid_params", e.call, "cursor_advance", cursor="m")
    assert err.message == "invalid_params: to is required", err.message
    err = expect_error("invalid_params", e.call, "notifications_since", since_seq=-1)
    assert "since_seq" in err.message, err.message
    err = expect_error("invalid_params", e.call, "notifications_since")
    assert err.message == "invalid_params: since_seq is required", err.message
    err = expect_error("invalid_params", e.call, "cursor_take", cursor="m", bogus=1)
    assert 'unknown argument "bogus"' in err.message, err.message
    expect_error("not_found", e.call, "cursor_take", cursor="m", session="other")
    # Nothing changed by any of those: no cursor was made.
    assert [s for s in e.call("session_list")["sessions"]
            if s["session"] == "agent"][0]["cursors"] == {}
    e.call("cursor_take", cursor="one")
    e.call("cursor_advance", cursor="two", to=0)
    err = expect_error("limit_exceeded", e.call, "cursor_take", cursor="three")
    assert err.message == ('limit_exceeded: session.max_cursors is 2 and session "agent" has 2 '
                           'cursors (one, two); "three" would be one more'), err.message
    # A take sent as a notification would move the cursor with nobody to
    # read what it took: refused, said with a vigil.error.
    e.main.notify("cursor_take", cursor="one")
    e.call("ping")
    with e.main.lock:
        said = list(e.main.errors)
    assert said and "cursor_take must be sent as a request" in said[-1][1], said


TESTS = [
    test_a_take_gives_the_pushed_notifications_once,
    test_what_waits_for_idle_is_not_taken_until_it_goes,
    test_what_the_session_no_longer_keeps_is_said_never_skipped,
    test_two_readers_taking_at_once_never_get_the_same_seq,
    test_two_waiters_on_one_cursor_each_get_one_notification,
    test_a_waiter_is_woken_by_a_crash_line_within_the_batch_window,
    test_a_waiter_whose_connection_closed_takes_nothing,
    test_a_waiter_of_a_closed_session_is_told,
    test_a_sigkill_restart_keeps_the_cursor_and_what_it_points_at,
    test_a_sigusr2_restart_keeps_the_cursor_and_what_it_points_at,
    test_bad_arguments_are_refused_naming_argument_bound_and_value,
]

if __name__ == "__main__":
    sys.exit(run_tests(TESTS))
