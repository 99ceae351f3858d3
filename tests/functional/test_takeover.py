"""What a restarted engine does with what it took over (docs/restart.md),
beyond test_restart.py's take-over itself (issue 22, points 6, 7 and 15):

- an engine that took a running monitor over (after SIGKILL, or after the
  SIGUSR2 upgrade) ends on SIGTERM like any other: it exits 0, leaves no
  process behind, and releases the state directory's lock;
- a monitor whose keeper cannot be reached at the take-over (killed while
  no engine ran, its keeper.sock removed, or replaced by a symbolic link)
  comes back ended, state `failed`, with the reason, its program stopped,
  and the engine still ends cleanly (no abort, no sanitizer report);
- a match the engine before had made but not yet told (its incident still
  assembling, or its batch window still open) when it was killed is told
  by the next engine, once, counted, and incident ids go on from where
  that engine was;
- a keeper left alone stops its program and ends when its monitor's
  directory is removed (nobody could take it over any more);
- a keeper that ends during the take-over (its program finished while no
  engine ran: it says hello, then goes before it attaches) is not lost: its
  monitor's output and true exit are told from what the keeper left.

Every wait is on an event with a generous bound: the CI machine is a loaded
2-core box."""

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from test_restart import (BOUND_S, alive, kill_engine, monitor_dir, parent, restart_on,
                          state_dir, wait_for)
from vigiltest import default_config, group_alive, run_tests, socket_only, with_config


def sigterm_ends(engine, what, close=True):
    """SIGTERM to engine: it must exit 0 within the bound, with no sanitizer
    report in its log. close: clean up after it (not for the test's own
    engine, whose directory holds the state directory)."""
    engine.proc.send_signal(signal.SIGTERM)
    try:
        rc = engine.proc.wait(BOUND_S)
    except subprocess.TimeoutExpired:
        engine.proc.kill()  # nothing left behind, whatever the verdict
        engine.proc.wait()
        raise AssertionError("%s: vigild did not exit within %ds of SIGTERM" % (what, BOUND_S))
    log = engine.log()
    reports = engine.close() if close else [
        l for l in log.splitlines() if "Sanitizer" in l or "runtime error:" in l]
    assert rc == 0, "%s: vigild exited %r:\n%s" % (what, rc, log[-3000:])
    assert not reports, "%s: sanitizer reports:\n%s" % (what, "\n".join(reports))


def lock_released(e):
    """A new engine starts on e's state directory (a held lock refuses it),
    finds nothing left to take over, and ends."""
    e3 = restart_on(e)
    try:
        log = e3.wait_log("state directory %s (locked by pid %d)" % (state_dir(e), e3.proc.pid))
        assert "took over" not in log and "left by an engine" not in log, log[-3000:]
    finally:
        sigterm_ends(e3, "the engine after")


def adopt_running(e, argv=("sleep", "600")):
    """A named session's monitor that runs until told; returns its id, pid
    and keeper's pid."""
    e.call("session_open", session="agent")
    mid = e.call("monitor_start", argv=list(argv), label="sleeper")["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    return mid, pid, parent(pid)


@socket_only
def test_sigterm_ends_an_engine_that_took_a_monitor_over_after_sigkill(e):
    mid, pid, keeper = adopt_running(e)
    kill_engine(e)
    e2 = restart_on(e)
    try:
        e2.wait_log("took over %s (sleeper)" % mid)
    except BaseException:
        e2.close()
        raise
    sigterm_ends(e2, "after a SIGKILL restart")
    assert not alive(pid) and not alive(keeper), "the monitor outlived its engine's shutdown"
    lock_released(e)


@socket_only
def test_sigterm_ends_an_engine_that_took_a_monitor_over_after_sigusr2(e):
    mid, pid, keeper = adopt_running(e)
    os.kill(e.proc.pid, signal.SIGUSR2)
    e.wait_log("took over %s (sleeper)" % mid, timeout=BOUND_S)
    assert e.proc.poll() is None
    sigterm_ends(e, "after a SIGUSR2 upgrade", close=False)
    wait_for(lambda: not alive(pid) and not alive(keeper), "the program and its keeper to end")
    lock_released(e)


def unreachable_keeper(e, spoil, reason):
    """The engine is killed, spoil(monitor directory, keeper pid) makes its
    keeper unreachable; the restarted engine reports the monitor ended,
    state failed, with reason in its ending, its program and keeper gone,
    and ends cleanly on SIGTERM."""
    mid, pid, keeper = adopt_running(e)
    kill_engine(e)
    spoil(monitor_dir(e, mid), keeper)
    e2 = restart_on(e)
    try:
        e2.call("session_open", session="agent")
        end = e2.main.wait_ending(mid, timeout=BOUND_S)
        assert end["type"] == "exit" and end["state"] == "failed", end
        assert end["exit_code"] is None and end["signal"] is None, end
        assert reason in end["reason"], end["reason"]
        assert "status: failed" in end["text"] and reason in end["text"], end["text"]
        status = e2.call("monitor_status", monitor_id=mid)
        assert status["state"] == "failed" and status["reason"] == end["reason"], status
        wait_for(lambda: not alive(pid) and not alive(keeper), "the program and its keeper to end")
        wait_for(lambda: not os.path.exists(monitor_dir(e, mid)), "its directory to go")
    except BaseException:
        sys.stdout.write("--- the restarted vigild's log ---\n" + e2.log()[-4000:] + "\n")
        e2.close()
        raise
    sigterm_ends(e2, "after taking over a monitor whose keeper was unreachable")
    lock_released(e)


@socket_only
def test_a_keeper_killed_while_no_engine_ran_is_reported_and_its_program_stopped(e):
    def spoil(d, keeper):
        os.kill(keeper, signal.SIGKILL)
        wait_for(lambda: not alive(keeper), "the keeper to die")
    unreachable_keeper(e, spoil, "its keeper was gone and recorded no exit")


@socket_only
def test_a_removed_keeper_socket_is_reported_and_its_keeper_stopped(e):
    unreachable_keeper(e, lambda d, keeper: os.unlink(os.path.join(d, "keeper.sock")),
                       "keeper.sock is missing")


@socket_only
def test_a_keeper_socket_replaced_by_a_symlink_is_not_followed(e):
    def spoil(d, keeper):
        # A link to a socket that answers: following it would be trusting
        # whatever the link names.
        os.unlink(os.path.join(d, "keeper.sock"))
        os.symlink(e.socket_path, os.path.join(d, "keeper.sock"))
    unreachable_keeper(e, spoil, "keeper.sock is not a socket")


@socket_only
def test_a_detached_keeper_stops_its_program_when_its_directory_is_removed(e):
    # A child of the program in its group, which must go too.
    mid, pid, keeper = adopt_running(e, ["sh", "-c", "sleep 600 & exec sleep 600"])
    kill_engine(e)
    d = monitor_dir(e, mid)
    wait_for(lambda: os.path.exists(os.path.join(d, "order")), "the keeper to detach")
    assert alive(pid) and alive(keeper)
    shutil.rmtree(d)  # as a logout's cleaning of $XDG_RUNTIME_DIR would
    wait_for(lambda: not group_alive(pid), "the program's group to be stopped")
    wait_for(lambda: not alive(keeper), "the keeper to end")
    restart_on(e).close()  # nothing left to take over or to stop


# Each crash its own failure: repeats of one would be coalesced.
ERRORS = {1: "ValueError", 2: "KeyError", 3: "TypeError"}


def crash_lines(n):
    return ["Traceback (most recent call last):", '  File "app.py", line %d, in <module>' % n,
            last_line(n)]


def crash_then(n, then, stderr=False):
    """Shell text: a three-line Python crash numbered n (on stderr if
    asked), then the text then."""
    to = " >&2" if stderr else ""
    return "; ".join("echo '%s'%s" % (l, to) for l in crash_lines(n)) + "; " + then


def last_line(n):
    return "%s: crash %d" % (ERRORS[n], n)


def wait_go(path):
    return 'while [ ! -e "%s" ]; do sleep 0.02; done' % path


def line_seen(e, mid, text):
    return lambda: any(l["text"] == text
                       for l in e.call("monitor_output", monitor_id=mid)["lines"])


def crash_notes(notes, n):
    """The output notifications whose incidents hold crash n."""
    return [x for x in notes if x["type"] == "output" and
            any(l["text"] == last_line(n) for l in x["lines"])]


def resume_then(e2, mid, last_seq, files):
    """On the restarted engine e2: once it took mid over, the host resumes
    the session from last_seq and the files are made (the program goes on);
    returns mid's notifications up to its ending."""
    e2.wait_log("took over %s (crashy)" % mid)
    e2.call("session_open", session="agent", last_seq=last_seq)
    for f in files:
        open(f, "w").close()
    got = []
    while True:
        n = e2.main.wait_notification(lambda x: x["monitor_id"] == mid, timeout=BOUND_S,
                                      what="the notifications up to the ending")
        got.append(n)
        if n["type"] != "output":
            return got


# The batch is full (and goes at once) with one three-line incident; an
# incident stays open, assembling, for up to 10 s with no line and 60 s in
# all: the kill lands inside that without any timing race but a machine
# stalled for 10 s.
ASSEMBLING = {"incident": {"quiet_ms": 10000, "max_open_ms": 60000},
              "monitor": {"batch_max_lines": 3, "flush_interval_ms": 60000}}


@socket_only
@with_config(**ASSEMBLING)
def test_a_crash_still_assembling_at_a_sigkill_is_told_once_after_it_and_ids_go_on(e):
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    script = "; ".join([crash_then(1, "echo ok 1"), wait_go(go + "1"),
                        crash_then(2, wait_go(go + "2")), "echo ok 2",
                        crash_then(3, "echo ok 3"), wait_go(go + "3"), "exit 0"])
    mid = e.call("monitor_start", argv=["sh", "-c", script], label="crashy")["monitor_id"]
    first = e.main.wait_notification(lambda n: n["monitor_id"] == mid, what="crash 1")
    assert first["seq"] == 1 and [i["id"] for i in first["incidents"]] == [1], first
    open(go + "1", "w").close()
    # Crash 2 is read (in the ring) and its incident assembles: nothing
    # closes it until "ok 2", which waits for go2.
    wait_for(line_seen(e, mid, last_line(2)), "crash 2 to be read")
    kill_engine(e)
    early = crash_notes(e.main.drain(), 2)
    assert not early, "crash 2 was told before the kill (a stall of 10 s?): %r" % early
    with restart_on(e, config=default_config(**ASSEMBLING)) as e2:
        got = resume_then(e2, mid, 1, [go + "2", go + "3"])
        assert [n["seq"] for n in got] == [2, 3, 4], [(n["seq"], n["type"], n["text"]) for n in got]
        [two] = crash_notes(got, 2)
        [three] = crash_notes(got, 3)
        assert [i["id"] for i in two["incidents"]] == [2], two["incidents"]
        assert [i["id"] for i in three["incidents"]] == [3], three["incidents"]
        assert [l["text"] for l in two["lines"]] == crash_lines(2), two["lines"]
        assert got[-1]["type"] == "exit" and got[-1]["exit_code"] == 0, got[-1]
        counters = e2.call("monitor_status", monitor_id=mid)["counters"]
        lines = e2.call("monitor_output", monitor_id=mid)["lines"]
        assert [l["seq"] for l in lines] == list(range(1, 13)), lines
        assert (counters["lines"], counters["incidents"], counters["notifications"]) == (12, 3, 4), \
            counters
        events = e2.call("monitor_events", monitor_id=mid)["events"]
        assert [ev["incident"] for ev in events if ev["type"] == "incident"] == [1, 2, 3], events


@socket_only
@with_config(**ASSEMBLING)
def test_a_crash_told_while_another_assembles_is_not_told_again_after_a_sigkill(e):
    # Crash 1 assembles on stderr; crash 2, on stdout, is told meanwhile.
    # The engine dies: the next one tells crash 1 (it was waiting) and not
    # crash 2 (it was told), and gives no id twice.
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    script = "; ".join([crash_then(1, wait_go(go + "1"), stderr=True),
                        crash_then(2, "echo ok 2"), wait_go(go + "2"),
                        "echo ok 1 >&2", wait_go(go + "3"), "exit 0"])
    mid = e.call("monitor_start", argv=["sh", "-c", script], label="crashy")["monitor_id"]
    wait_for(line_seen(e, mid, last_line(1)), "crash 1 to be read")
    open(go + "1", "w").close()
    two = e.main.wait_notification(lambda n: n["monitor_id"] == mid, what="crash 2")
    assert two["seq"] == 1 and crash_notes([two], 2), two
    kill_engine(e)
    assert not crash_notes(e.main.drain(), 1), "crash 1 was told before the kill"
    with restart_on(e, config=default_config(**ASSEMBLING)) as e2:
        got = resume_then(e2, mid, 1, [go + "2", go + "3"])
        assert [n["seq"] for n in got] == [2, 3], [(n["seq"], n["text"]) for n in got]
        [one] = crash_notes(got, 1)
        assert not crash_notes(got, 2), "crash 2 was told again"
        [inc] = one["incidents"]
        assert inc["id"] not in (two["incidents"][0]["id"],), (inc, two["incidents"])
        assert [l["stream"] for l in one["lines"]] == ["stderr"] * 3, one["lines"]
        counters = e2.call("monitor_status", monitor_id=mid)["counters"]
        assert (counters["incidents"], counters["notifications"]) == (2, 3), counters


# Each incident closes at once (its next line does not belong), and the
# batch it enters waits a minute for more.
BATCH_OPEN = {"monitor": {"flush_interval_ms": 60000}}


@socket_only
@with_config(**BATCH_OPEN)
def test_a_crash_in_an_open_batch_at_a_sigkill_is_told_once_after_it(e):
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    script = "; ".join([crash_then(1, wait_go(go + "0")), "echo ok 1", wait_go(go), "exit 3"])
    mid = e.call("monitor_start", argv=["sh", "-c", script], label="crashy")["monitor_id"]
    # The trace is read while its incident assembles (a read of its own:
    # the program waits), then "ok 1" closes it into the batch.
    wait_for(line_seen(e, mid, last_line(1)), "the crash to be read")
    open(go + "0", "w").close()
    wait_for(lambda: any(ev["type"] == "incident" for ev in
                         e.call("monitor_events", monitor_id=mid)["events"]),
             "the incident to close (into the batch)")
    kill_engine(e)
    assert not crash_notes(e.main.drain(), 1), "told before the kill (a stall of a minute?)"
    with restart_on(e, config=default_config(**BATCH_OPEN)) as e2:
        got = resume_then(e2, mid, 0, [go])  # its exit flushes the batch
        assert [n["type"] for n in got] == ["output", "exit"], [n["type"] for n in got]
        [one] = crash_notes(got, 1)
        assert one["seq"] == 1 and [i["id"] for i in one["incidents"]] == [1], one
        assert got[-1]["exit_code"] == 3, got[-1]
        counters = e2.call("monitor_status", monitor_id=mid)["counters"]
        assert (counters["lines"], counters["incidents"], counters["notifications"]) == (4, 1, 2), \
            counters
        events = e2.call("monitor_events", monitor_id=mid)["events"]
        assert [ev["type"] for ev in events].count("incident") == 1, events


def keeper_that_goes_after_hello(d, keeper, pid):
    """Binds keeper.sock in d as a keeper whose program has just ended:
    it takes one connection, says hello (kKeeperHello: protocol 1, its pid,
    its child's pid) and closes without attaching, as a real keeper that
    finished its drain at that moment does. Returns the accepting thread."""
    here = os.getcwd()
    os.chdir(d)  # the directory's path may pass sun_path's bound
    try:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind("keeper.sock")
    finally:
        os.chdir(here)
    srv.listen(1)
    srv.settimeout(BOUND_S)

    def serve():
        try:
            conn, _ = srv.accept()
            conn.sendall(struct.pack("=IIqqq", 10, 3, 1, keeper, pid))
            conn.close()
        except OSError:
            pass
        finally:
            srv.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


@socket_only
def test_a_keeper_that_ends_during_the_take_over_leaves_its_output_and_exit(e):
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    script = "; ".join([wait_go(go), crash_then(1, "exit 3")])
    mid = e.call("monitor_start", argv=["sh", "-c", script], label="crashy")["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    keeper = parent(pid)
    kill_engine(e)
    d = monitor_dir(e, mid)
    open(go, "w").close()
    # The program crashes and exits with no engine: its keeper spools the
    # lines, writes the exit file and ends.
    wait_for(lambda: os.path.exists(os.path.join(d, "exit")), "the keeper's exit file")
    wait_for(lambda: not alive(keeper), "the keeper to end")
    sock = os.path.join(d, "keeper.sock")
    if os.path.lexists(sock):
        os.unlink(sock)
    served = keeper_that_goes_after_hello(d, keeper, pid)
    with restart_on(e) as e2:
        e2.call("session_open", session="agent")
        try:
            got = []
            while not got or got[-1]["type"] == "output":
                got.append(e2.main.wait_notification(
                    lambda n: n["monitor_id"] == mid, timeout=BOUND_S,
                    what="the monitor's notifications up to its ending"))
        except BaseException:
            sys.stdout.write("--- the restarted vigild's log ---\n" + e2.log()[-4000:] + "\n")
            raise
        served.join(BOUND_S)
        assert not served.is_alive(), "the engine never reached the keeper's socket"
        end = got[-1]
        assert end["type"] == "exit" and end["exit_code"] == 3, end
        assert crash_notes(got, 1), [(n["type"], n["text"]) for n in got]
        status = e2.call("monitor_status", monitor_id=mid)
        assert status["exit_code"] == 3, status


TESTS = [
    test_sigterm_ends_an_engine_that_took_a_monitor_over_after_sigkill,
    test_sigterm_ends_an_engine_that_took_a_monitor_over_after_sigusr2,
    test_a_keeper_killed_while_no_engine_ran_is_reported_and_its_program_stopped,
    test_a_removed_keeper_socket_is_reported_and_its_keeper_stopped,
    test_a_keeper_socket_replaced_by_a_symlink_is_not_followed,
    test_a_detached_keeper_stops_its_program_when_its_directory_is_removed,
    test_a_keeper_that_ends_during_the_take_over_leaves_its_output_and_exit,
    test_a_crash_still_assembling_at_a_sigkill_is_told_once_after_it_and_ids_go_on,
    test_a_crash_told_while_another_assembles_is_not_told_again_after_a_sigkill,
    test_a_crash_in_an_open_batch_at_a_sigkill_is_told_once_after_it,
]

if __name__ == "__main__":
    sys.exit(run_tests(TESTS))
