"""A backlog of big notifications reaches a host that reads (issue 22,
point 11): a session's full queue released at once (session_state idle,
a re-attach with last_seq) is written as fast as the host takes it, never
past rpc.max_output_bytes and never cutting the connection, however many
times larger than the bound the backlog is. A host that stops reading
altogether is still closed, once it has taken nothing for
rpc.output_stall_ms while output waits (docs/protocol.md section 2.4).

The notifications are lines of control bytes, which the envelope escapes
to four times their size: 4000 bytes a line, 4 lines a batch, about 64 KiB
a notification, as big as the output bound set here. Every wait is on an
event (a notification, an answer, the connection's end) with a generous
bound."""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import default_config, run_tests, socket_only

QUEUE = 48
# About 40 notifications of 4 lines, and the ending: all of them fit the
# queue (none dropped), 40 times the output bound.
LINES = (QUEUE - 8) * 4
# LINES lines of 4000 \x01 bytes each, then the monitor exits.
SPEW = "yes \"$(head -c 4000 /dev/zero | tr '\\0' '\\1')\" | head -n %d" % LINES


def config(**rpc):
    return default_config(rpc=dict({"max_output_bytes": 65536}, **rpc),
                          session={"queue_max": QUEUE},
                          rate_limit={"max_notifications": 1000})


def fill_while_busy(conn, session):
    """Opens session on conn, busy, and runs SPEW to its end: the session
    then holds a full queue of big notifications. Returns the monitor id."""
    conn.call("session_open", session=session)
    conn.call("session_state", state="busy")
    mid = conn.call("monitor_start", command=SPEW, shell=True, patterns=[],
                    notify="lines")["monitor_id"]
    w = conn.call("monitor_wait", monitor_id=mid, timeout_ms=60000)
    assert w["state"] == "exited" and not w["timed_out"], w
    return mid


def read_through(conn, mid, first_seq):
    """Waits for mid's ending and returns every notification conn got,
    checking they are seqs first_seq.. in order, none lost."""
    end = conn.wait_ending(mid, timeout=120)
    got = sorted(conn.drain() + [end], key=lambda n: n["seq"])
    seqs = [n["seq"] for n in got]
    assert seqs == list(range(first_seq, first_seq + len(seqs))), seqs
    assert [n["type"] for n in got if n["type"] not in ("output", "exit")] == [], got
    return got


def test_a_full_queue_released_at_idle_reaches_a_reader(e):
    mid = fill_while_busy(e.main, "gw")
    queued = [s for s in e.call("session_list")["sessions"] if s["session"] == "gw"][0]["queued"]
    assert 30 <= queued < QUEUE, queued
    # What the connection's output bound took at once; the rest follows as
    # the host reads.
    delivered = e.call("session_state", state="idle")["delivered"]
    assert 1 <= delivered <= queued, (delivered, queued)
    got = read_through(e.main, mid, 1)
    assert len(got) == queued and sum(len(n["text"]) for n in got) > 30 * 65536, len(got)
    # Every line arrived escaped, none cut by a closed connection.
    assert all("\\x01" in n["text"] for n in got if n["type"] == "output")
    info = e.call("api_info")
    assert info["counters"]["connections_closed_slow"] == 0, info["counters"]
    assert info["counters"]["notifications_lost_behind"] == 0, info["counters"]


@socket_only
def test_a_replay_of_kept_notifications_reaches_a_reader(e):
    gw = e.connect()
    mid = fill_while_busy(gw, "gw")
    gw.call("session_state", state="idle")
    first = read_through(gw, mid, 1)
    gw.close()
    # A new gateway, reading as fast as it can, resumes from the start:
    # everything kept comes again, 20 times the output bound.
    again = e.connect()
    r = again.call("session_open", session="gw", last_seq=0)
    assert r["resumed"] is True, r
    got = read_through(again, mid, 1)
    assert [n["text"] for n in got] == [n["text"] for n in first]
    assert again.call("ping") is not None
    assert e.call("api_info")["counters"]["connections_closed_slow"] == 0


@socket_only
def test_a_peer_that_stops_reading_is_closed_once_stalled(e):
    # A raw socket that sends requests but never reads: its answers and the
    # backlog fill the kernel's buffer and then the output bound; it took
    # nothing for output_stall_ms, so it is closed, logged and counted.
    s = socket.socket(socket.AF_UNIX)
    s.connect(e.socket_path)
    try:
        import msgpack
        s.sendall(msgpack.packb([0, 1, "session_open", [{"session": "gw"}]]))
        s.sendall(msgpack.packb([0, 2, "monitor_start", [{
            "command": SPEW, "shell": True, "patterns": [], "notify": "lines"}]]))
        e.wait_log("client stopped reading", timeout=120)
        log = e.wait_log("closed: client stopped reading")
        assert "output_stall_ms" in log, log[-2000:]
        assert e.call("api_info")["counters"]["connections_closed_slow"] == 1
    finally:
        s.close()


test_a_peer_that_stops_reading_is_closed_once_stalled.config = lambda: config(
    output_stall_ms=1000)


if __name__ == "__main__":
    sys.exit(run_tests([
        test_a_full_queue_released_at_idle_reaches_a_reader,
        test_a_replay_of_kept_notifications_reaches_a_reader,
        test_a_peer_that_stops_reading_is_closed_once_stalled,
    ], config=config))
