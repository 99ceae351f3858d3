"""A start through a keeper never holds the engine's loop (issue 27, point 1).

With a state directory every monitored program is started by a vigil-keeper,
and a monitor_start is answered with the child's pid, which is the keeper's
first word (its hello). That word is read from the loop: while a burst of
starts waits for its keepers, a running monitor's lines are still told and
another connection's ping is still answered, and each start is answered
when its keeper says hello, with the same answer as ever. A keeper that says
nothing within its bound is killed and its start fails, naming why, with
nothing left behind: no monitor, no directory, no process.

The keepers' hellos are held back, not raced: VIGIL_TEST_KEEPER (a test-only
setting of vigild's environment, docs/settings.md) puts a small script in
front of vigil-keeper that waits on a FIFO before it execs the real keeper.
The FIFO is opened by the test only after the ping and the line came, so
the order is decided by events, never by timing: before the fix the engine
sat in a blocking poll for the first keeper's hello, and the ping was never
answered.

Every wait is on an event with a generous bound: the CI machine is a loaded
2-core box."""

import os
import stat
import struct
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (BUILD, ERROR_CODES, Engine, RpcError, alive, default_config,
                       run_plain_tests, wait_for)

BOUND_S = 60
BURST = 30            # pipelined starts, over two sessions (16 each at most)
KEEPER = os.path.join(BUILD, "vigil-keeper")


def gated_keeper(tmp, gate, pids=None):
    """A script standing in for vigil-keeper: it records its pid, waits until
    the FIFO gate (if there is one) has a writer, then execs the real keeper
    with its arguments and descriptors unchanged."""
    path = os.path.join(tmp, "keeper-gate.sh")
    record = 'echo $$ >> "%s"\n' % pids if pids else ""
    with open(path, "w") as f:
        f.write('#!/bin/sh\n%sif [ -p "%s" ]; then : < "%s"; fi\nexec "%s" "$@"\n'
                % (record, gate, gate, KEEPER))
    os.chmod(path, 0o755)
    return path


def engine_with(tmp, keeper, hello_ms=None, **overrides):
    env = dict(os.environ, VIGIL_TEST_KEEPER=keeper)
    if hello_ms is not None:
        env["VIGIL_TEST_KEEPER_HELLO_MS"] = str(hello_ms)
    return Engine("socket", default_config(**overrides), env=env)


def finish(e, gate, gate_fd=None):
    """Releases keepers still at the gate (none is left behind), stops the
    engine and fails on a sanitizer report."""
    if gate_fd is not None:
        os.close(gate_fd)
    elif os.path.exists(gate):
        os.close(os.open(gate, os.O_RDWR))
    reports = e.close()
    assert not reports, reports


def silent_keepers(tmp, hello_ms):
    """An engine whose keepers wait at a gate nobody opens: (engine, gate,
    the file the keepers write their pids to)."""
    gate = os.path.join(tmp, "gate")
    pids = os.path.join(tmp, "pids")
    os.mkfifo(gate)
    return engine_with(tmp, gated_keeper(tmp, gate, pids), hello_ms=hello_ms), gate, pids


def spooled(path):
    """How many bytes were ever written to a spool (its header's head:
    spool.c, version 2)."""
    with open(path, "rb") as f:
        magic, version, _stream, _cap, _sum, head = struct.unpack("<8sIIQQQ", f.read(40))
    assert magic == b"VIGLSPOL" and version == 2, (magic, version)
    return head


def monitors_dir(e):
    return os.path.join(e.dir, "run", "state", "monitors")


def test_a_burst_of_starts_holds_neither_lines_nor_pings(tmp):
    gate = os.path.join(tmp, "gate")
    line_fifo = os.path.join(tmp, "line")
    os.mkfifo(line_fifo)
    e = engine_with(tmp, gated_keeper(tmp, gate))
    gate_fd = line_fd = None
    try:
        # A running monitor (its keeper not gated yet), reading a FIFO the
        # test writes its line to once the burst is in flight.
        running = e.main.call("monitor_start", argv=["cat", line_fifo], notify="lines",
                              timeout=BOUND_S)
        assert isinstance(running["pid"], int) and running["pid"] > 0, running
        os.mkfifo(gate)
        b = e.connect()
        sessions = ["burst-a", "burst-b"]
        for s in sessions:
            b.call("session_open", session=s)
        # One write holding every request: the engine reads them together.
        import msgpack
        raw, ids = b"", []
        for i in range(BURST):
            with b.lock:
                msgid = b.next_id
                b.next_id += 1
            ids.append(msgid)
            raw += msgpack.packb([0, msgid, "monitor_start",
                                  [{"argv": ["sleep", "600"], "label": "burst-%d" % i,
                                    "session": sessions[i % 2]}]], use_bin_type=True)
        b.send_raw(raw)
        # Another connection's ping is answered while every start of the
        # burst still waits for its keeper (held at the gate).
        c = e.connect()
        assert c.call("ping", timeout=BOUND_S) is not None
        # And a running monitor's line is told meanwhile.
        line_fd = os.open(line_fifo, os.O_RDWR)
        os.write(line_fd, b"told-during-the-burst\n")
        n = e.main.wait_notification(
            lambda n: n["monitor_id"] == running["monitor_id"]
            and "told-during-the-burst" in repr(n), timeout=BOUND_S, what="the running line")
        assert n is not None
        with b.lock:
            answered = [i for i in ids if i in b.responses]
        assert answered == [], "starts answered before their keepers said hello: %r" % answered
        # The keepers go on: every start is answered, with the usual answer.
        gate_fd = os.open(gate, os.O_RDWR)
        for msgid in ids:
            r = b.wait_response(msgid, timeout=BOUND_S)
            assert sorted(r) == sorted(running), (r, running)
            assert isinstance(r["pid"], int) and r["pid"] > 0 and alive(r["pid"]), r
        for s in sessions:
            listed = b.call("monitor_list", session=s)
            assert listed["total"] == BURST // 2, listed
            assert all(m["state"] == "running" and m["pid"] > 0 for m in listed["monitors"]), listed
    finally:
        if line_fd is not None:
            os.close(line_fd)
        finish(e, gate, gate_fd)


def test_a_keeper_that_never_says_hello_fails_its_start_and_leaves_nothing(tmp):
    e, gate, pids = silent_keepers(tmp, 300)
    try:
        try:
            e.main.call("monitor_start", argv=["sleep", "600"], label="mute", timeout=BOUND_S)
            raise AssertionError("a start whose keeper said nothing succeeded")
        except RpcError as err:
            assert err.code == ERROR_CODES["spawn_failed"], err
            assert "no hello within 300 ms" in err.message, err.message
            assert "keeper-gate.sh" in err.message, err.message
        # Nothing is left: no monitor, no directory, no keeper.
        listed = e.main.call("monitor_list", include_exited=True)
        assert listed["total"] == 0, listed
        assert os.listdir(monitors_dir(e)) == [], os.listdir(monitors_dir(e))
        with open(pids) as f:
            keeper = int(f.read().split()[0])
        wait_for(lambda: not os.path.exists("/proc/%d" % keeper),
                 "the mute keeper %d killed and reaped" % keeper)
        info = e.main.call("api_info")
        assert info["counters"]["keeper_hello_timeouts"] == 1, info["counters"]
        assert info["counters"]["monitors_running"] == 0, info["counters"]
        # The engine goes on: with the gate gone the next start runs.
        os.unlink(gate)
        r = e.main.call("monitor_start", argv=["sh", "-c", "echo up; sleep 600"], timeout=BOUND_S)
        assert r["pid"] > 0 and alive(r["pid"]), r
    finally:
        finish(e, gate)


def test_a_stop_while_the_keeper_starts_is_applied_at_its_hello(tmp):
    gate = os.path.join(tmp, "gate")
    os.mkfifo(gate)
    e = engine_with(tmp, gated_keeper(tmp, gate))
    gate_fd = None
    try:
        start = e.main.request("monitor_start", {"argv": ["sleep", "600"], "label": "early"})
        # The starting monitor is listed (its id known), with no pid yet.
        listed = e.main.call("monitor_list", timeout=BOUND_S)
        assert listed["total"] == 1, listed
        m = listed["monitors"][0]
        assert m["pid"] is None and m["state"] == "running", m
        stop = e.main.request("monitor_stop", {"monitor_id": m["monitor_id"], "grace_ms": 200})
        with e.main.lock:
            assert start not in e.main.responses and stop not in e.main.responses
        gate_fd = os.open(gate, os.O_RDWR)
        started = e.main.wait_response(start, timeout=BOUND_S)
        assert started["monitor_id"] == m["monitor_id"] and started["pid"] > 0, started
        # The stop recorded while it started is sent once its pid is known:
        # answered when the process is gone.
        stopped = e.main.wait_response(stop, timeout=BOUND_S)
        assert stopped["status"] == "stopped" and stopped["state"] == "stopped", stopped
        wait_for(lambda: not alive(started["pid"]), "the stopped child gone")
    finally:
        finish(e, gate, gate_fd)


def test_an_engine_ended_while_a_keeper_is_silent_ends_cleanly(tmp):
    e, gate, pids = silent_keepers(tmp, 1000)
    try:
        start = e.main.request("monitor_start", {"argv": ["sleep", "600"]})
        # Requests are served in order: once the ping is answered the start
        # is in flight (its keeper launched, its hello awaited).
        e.main.call("ping", timeout=BOUND_S)
        with e.main.lock:
            assert start not in e.main.responses, "the start was answered before its keeper"
        wait_for(lambda: os.path.exists(pids), "the keeper launched")
        with open(pids) as f:
            keeper = int(f.read().split()[0])
        # SIGTERM: the engine waits for nothing but that keeper's bound, and
        # ends with nothing left.
        assert e.stop(timeout=BOUND_S) == 0, e.log()[-3000:]
        assert not os.path.exists("/proc/%d" % keeper) or not alive(keeper), keeper
        assert os.listdir(monitors_dir(e)) == [], os.listdir(monitors_dir(e))
    finally:
        finish(e, gate)


def test_an_engine_killed_between_a_keepers_launch_and_its_hello_is_taken_over(tmp):
    """The engine dies (SIGKILL) after a keeper was launched and before its
    hello: the start was never answered, but the monitor was listed, its
    spec names its keeper, and its keeper starts the program anyway and
    goes on unattended. A restarted engine takes it over like any other
    monitor of a named session: running, with the program's pid, its output
    told."""
    gate = os.path.join(tmp, "gate")
    pids = os.path.join(tmp, "pids")
    os.mkfifo(gate)
    e = engine_with(tmp, gated_keeper(tmp, gate, pids))
    gate_fd = None
    e2 = None
    try:
        e.main.call("session_open", session="agent")
        go = os.path.join(tmp, "go")
        script = 'echo "ERROR early"; while [ ! -e "%s" ]; do sleep 0.02; done; echo "ERROR late"' % go
        start = e.main.request("monitor_start", {"argv": ["sh", "-c", script], "label": "gated",
                                                 "patterns": ["ERROR"]})
        wait_for(lambda: os.path.exists(pids) and open(pids).read().strip() != "",
                 "the keeper launched (waiting at the gate)")
        [m] = e.main.call("monitor_list", timeout=BOUND_S)["monitors"]
        mid = m["monitor_id"]
        assert m["pid"] is None, m
        with e.main.lock:
            assert start not in e.main.responses, "the start was answered before its keeper"
        e.proc.kill()
        e.proc.wait(BOUND_S)
        # The keeper goes on: past the gate it starts the program, finds no
        # engine to say hello to, and keeps the program unattended.
        gate_fd = os.open(gate, os.O_RDWR)
        state = os.path.join(e.dir, "run", "state")
        wait_for(lambda: spooled(os.path.join(state, "monitors", mid, "stdout")) > 0,
                 "the program's first line spooled by its keeper")
        e2 = Engine("socket", default_config(), extra_args=["--state-dir", state])
        e2.wait_log("took over %s (gated) in session agent" % mid, timeout=BOUND_S)
        e2.main.call("session_open", session="agent")
        listed = e2.main.call("monitor_list", include_exited=True)["monitors"]
        assert len(listed) == 1, (listed, e2.log()[-3000:])
        [m2] = listed
        assert m2["monitor_id"] == mid and m2["state"] == "running", (m2, e2.log()[-6000:])
        assert isinstance(m2["pid"], int) and m2["pid"] > 0 and alive(m2["pid"]), m2
        early = e2.main.wait_notification(lambda n: n["monitor_id"] == mid and "ERROR early" in repr(n),
                                          timeout=BOUND_S, what="the line printed before the crash")
        assert early is not None
        open(go, "w").close()
        late = e2.main.wait_notification(lambda n: n["monitor_id"] == mid and "ERROR late" in repr(n),
                                         timeout=BOUND_S, what="the line printed after the take-over")
        assert late is not None
        end = e2.main.wait_ending(mid)
        assert end["type"] == "exit" and end["exit_code"] == 0, end
    finally:
        if e2 is not None:
            reports = e2.close()
            assert not reports, reports
        finish(e, gate, gate_fd)


if __name__ == "__main__":
    sys.exit(run_plain_tests([
        test_a_burst_of_starts_holds_neither_lines_nor_pings,
        test_a_keeper_that_never_says_hello_fails_its_start_and_leaves_nothing,
        test_a_stop_while_the_keeper_starts_is_applied_at_its_hello,
        test_an_engine_ended_while_a_keeper_is_silent_ends_cleanly,
        test_an_engine_killed_between_a_keepers_launch_and_its_hello_is_taken_over,
    ], prefix="vigil-start-"))
