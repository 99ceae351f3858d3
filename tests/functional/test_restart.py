"""An engine restart loses nothing (docs/restart.md). With a state directory
every monitored program is started by a vigil-keeper, its parent, so that
killing vigild (SIGKILL: a crash, the OOM killer) leaves it running and
never blocked: the keeper drains its output into the monitor's spools,
counting what does not fit, records the order of the two streams, stops it
after keeper.unattended_ms, and writes its true exit status. A restarted
engine takes back the epoch, every named session from its journal (its
numbering, its waiting and kept notifications) and every monitor of a
named session: the same monitor, its event log, its lines numbered and
counted as before, what it printed while no engine read processed as if
just read, its true exit; every match told exactly once across the
restart. SIGUSR2 does the same in place, with no gap. What it cannot take
(an anonymous session's monitor, an unsound spec, a corrupt journal) it
reports, sets aside and stops; a restart that fails to start leaves the
state as it was. A keeper killed under a live engine costs nothing: the
engine, a subreaper, becomes the program's parent.

Every wait is on an event with a generous bound (a file appearing, a process
ending, a reply): the CI machine is a loaded 2-core box."""

import os
import signal
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (VIGILD, Engine, alive, default_config, parent, run_tests, socket_only,
                       stdio_only, wait_for, with_config)

BOUND_S = 60
SPOOL_HEADER = 512  # spool.h, version 2
CKPT_AT = 256  # the owner's part of the header: the checkpoint (monitor_keep.c)
SPOOL_CAP = 65536


def comm(pid):
    with open("/proc/%d/comm" % pid) as f:
        return f.read().strip()


def kill_engine(e):
    e.proc.kill()
    e.proc.wait(BOUND_S)


def state_dir(e):
    return os.path.join(e.dir, "run", "state")


def monitor_dir(e, mid):
    return os.path.join(state_dir(e), "monitors", mid)


def ckpt_word(path, at):
    """A 64-bit word of the monitor's checkpoint (monitor_keep.h), which lives
    in the owner's part of its stdout spool's header (spool.h, version 2)."""
    with open(path, "rb") as f:
        f.seek(CKPT_AT + at)
        return struct.unpack("<Q", f.read(8))[0]


def spool(path):
    """A spool file's header (spool.c) and its kept bytes, oldest first."""
    with open(path, "rb") as f:
        raw = f.read()
    magic, version, stream, cap, _sum, head, cut = struct.unpack_from("<8sIIQQQQ", raw)
    assert magic == b"VIGLSPOL" and version == 2, (magic, version)
    start = max(0, head - cap)
    data = raw[SPOOL_HEADER:SPOOL_HEADER + cap]
    assert len(raw) == SPOOL_HEADER + cap, (len(raw), cap)
    # Offset o is at o mod cap: the kept bytes wrap once the spool is full.
    kept = data[start % cap:] + data[:start % cap] if head >= cap else data[:head]
    return {"stream": stream, "cap": cap, "head": head, "cut": cut,
            "lost": max(0, start - cut), "kept": kept}


def exit_record(path):
    with open(path) as f:
        lines = f.read().splitlines()
    fields = dict(line.split(" ", 1) for line in lines[1:])
    assert lines[0] == "vigil-keeper-exit 1", lines
    return fields


def start_waiting(e, go, then):
    """A monitor that waits for the file go, then runs the shell text then."""
    script = 'while [ ! -e "%s" ]; do sleep 0.02; done; %s' % (go, then)
    mid = e.call("monitor_start", argv=["/bin/sh", "-c", script])["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    return mid, pid


class Restarted(Engine):
    """A new engine on an earlier one's state directory (it takes over or
    sweeps what that one left), whose log a failure shows too."""

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is not None:
            sys.stdout.write("--- the restarted vigild's log ---\n" + self.log()[-4000:] + "\n")
        self.close()


def restart_on(e, extra=(), config=None):
    """A new engine on e's state directory."""
    return Restarted("socket", config or default_config(),
                     extra_args=["--state-dir", state_dir(e)] + list(extra))


@socket_only
@with_config(monitor={"capture_max_bytes": SPOOL_CAP})
def test_a_child_outlives_a_killed_engine_never_blocks_and_its_loss_is_counted(e):
    go = os.path.join(e.dir, "go")
    total = 1000000
    mid, pid = start_waiting(e, go, 'head -c %d /dev/zero | tr "\\0" x; echo; echo marker-end; exit 7'
                             % total)
    keeper = parent(pid)
    assert comm(keeper) == "vigil-keeper", comm(keeper)
    kill_engine(e)
    assert alive(pid), "the program died with its engine"
    # It writes 15 times the spool's size with no engine reading: a pipe
    # nobody drained would block it at 64 KiB and it would never exit.
    open(go, "w").close()
    exit_path = os.path.join(monitor_dir(e, mid), "exit")
    wait_for(lambda: os.path.exists(exit_path), "the keeper's exit file")
    x = exit_record(exit_path)
    assert (x["exited"], x["code"], x["signal"], x["cause"]) == ("1", "7", "0", "exited"), x
    assert not alive(pid)
    wait_for(lambda: not alive(keeper), "the keeper to end")
    out = spool(os.path.join(monitor_dir(e, mid), "stdout"))
    written = total + len("\nmarker-end\n")
    assert out["head"] == written, out["head"]
    assert out["cut"] == 0, "the engine had read nothing of it: %d" % out["cut"]
    assert out["lost"] == written - SPOOL_CAP, (out["lost"], written - SPOOL_CAP)
    assert out["kept"].endswith(b"x\nmarker-end\n"), out["kept"][-40:]
    # No stderr was written: its spool was never made (spool_defer).
    assert not os.path.exists(os.path.join(monitor_dir(e, mid), "stderr"))
    restart_on(e).close()  # sweeps the directory


@socket_only
def test_the_checkpoint_shares_the_stdout_spools_first_page(e):
    # Issue 27: the header, the checkpoint and the first output share a page
    # (spool version 2), so a quiet monitor holds no page for the checkpoint
    # alone: there is no checkpoint file, and the word after the ring's next
    # seq is read from the stdout spool's header.
    e.call("session_open", session="agent")
    mid = e.call("monitor_start", argv=["sh", "-c", "echo one; echo two; exec sleep 60"],
                 patterns=["never"])["monitor_id"]
    mdir = monitor_dir(e, mid)
    stdout = os.path.join(mdir, "stdout")
    wait_for(lambda: ckpt_word(stdout, 16) == len("one\ntwo\n"),
             "the checkpoint's cut past the two lines")
    assert ckpt_word(stdout, 32) == 3, ckpt_word(stdout, 32)  # the ring's next seq
    with open(stdout, "rb") as f:
        assert f.read(8) == b"VIGLSPOL"
        f.seek(CKPT_AT)
        assert f.read(8) == b"VIGLCKPT"
        f.seek(SPOOL_HEADER)
        assert f.read(8) == b"one\ntwo\n"  # on the same page as both
    assert SPOOL_HEADER + 8 <= 4096
    assert "checkpoint" not in os.listdir(mdir), os.listdir(mdir)
    e.call("monitor_stop", monitor_id=mid)


@socket_only
def test_a_restarted_engine_takes_over_a_running_monitor(e):
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    script = ('echo "ERROR before"; while [ ! -e "%s" ]; do sleep 0.02; done; echo "ERROR while down"; '
              'echo after; while [ ! -e "%s.2" ]; do sleep 0.02; done; echo "ERROR live"; exit 4'
              % (go, go))
    mid = e.call("monitor_start", argv=["sh", "-c", script], label="server",
                 patterns=["ERROR"])["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    started_at = e.call("monitor_events", monitor_id=mid)["events"][0]["at"]
    wait_for(lambda: spool(os.path.join(monitor_dir(e, mid), "stdout"))["cut"] == len("ERROR before\n"),
             "the engine to read the first line")
    kill_engine(e)
    open(go, "w").close()  # printed while no engine reads: spooled by the keeper
    wait_for(lambda: spool(os.path.join(monitor_dir(e, mid), "stdout"))["head"]
             == len("ERROR before\nERROR while down\nafter\n"), "the keeper to spool the gap")
    with restart_on(e) as e2:
        e2.wait_log("took over %s (server) in session agent, pid %d" % (mid, pid))
        e2.call("session_open", session="agent")
        down = e2.main.wait_notification(lambda n: n["monitor_id"] == mid and n["type"] == "output",
                                         what="the match made while no engine read")
        assert "ERROR while down" in down["text"], down["text"]
        [m] = e2.call("monitor_list")["monitors"]
        assert (m["monitor_id"], m["label"], m["pid"]) == (mid, "server", pid), m
        open(go + ".2", "w").close()
        live = e2.main.wait_notification(lambda n: n["monitor_id"] == mid and n["type"] == "output",
                                         what="the match made after the take-over")
        assert "ERROR live" in live["text"], live["text"]
        end = e2.main.wait_ending(mid)
        assert end["type"] == "exit" and end["exit_code"] == 4, end
        texts = [l["text"] for l in e2.call("monitor_output", monitor_id=mid)["lines"]]
        assert texts == ["ERROR before", "ERROR while down", "after", "ERROR live"], texts
        # The event log came back with its ids and times; what the replay
        # and the new engine logged follows it, nothing twice.
        events = e2.call("monitor_events", monitor_id=mid)["events"]
        assert [ev["id"] for ev in events] == list(range(1, len(events) + 1)), events
        assert events[0]["type"] == "started" and events[0]["at"] == started_at, events[0]
        assert [ev["type"] for ev in events].count("started") == 1, events
        matches = [ev["line"] for ev in events if ev["type"] == "match"]
        assert matches == ["ERROR before", "ERROR while down", "ERROR live"], matches
        assert events[-1]["type"] == "exited" and events[-1]["exit_code"] == 4, events[-1]


@socket_only
def test_a_program_started_by_its_keeper_gets_a_large_environment_whole(e):
    # The program's environment travels through the keeper's exec and sits
    # on the keeper's stack (it is linked against musl where it can be, for
    # its memory: CMakeLists.txt); 12 variables of 60000 bytes each (720 KB,
    # under rpc.max_message_bytes) reach the program whole, each byte.
    names = ["BIGVAR_%d" % i for i in range(12)]
    env = {n: "".join(chr(ord("a") + (i + j) % 26) for j in range(60000)) for i, n in enumerate(names)}
    script = ('echo "parent $(cat /proc/$PPID/comm)"; for n in %s; do eval "v=\\${$n}"; '
              'printf "%%s %%s %%s\\n" "$n" "${#v}" "$(printf %%s "$v" | cksum)"; done' % " ".join(names))
    mid = e.call("monitor_start", argv=["sh", "-c", script], env=env)["monitor_id"]
    end = e.main.wait_ending(mid)
    assert end["type"] == "exit" and end["exit_code"] == 0, end
    want = ["parent vigil-keeper"]
    for n in names:
        sums = subprocess.run(["cksum"], input=env[n].encode(), capture_output=True, check=True)
        want.append("%s 60000 %s" % (n, sums.stdout.decode().strip()))
    texts = [l["text"] for l in e.call("monitor_output", monitor_id=mid)["lines"]]
    assert texts == want, (texts, want)


@socket_only
def test_lines_of_both_streams_printed_while_down_keep_their_order(e):
    # The keeper records the order in which it spooled each stream's
    # chunks, so the replay interleaves stdout and stderr as printed.
    e.call("session_open", session="agent")
    go, done = os.path.join(e.dir, "go"), os.path.join(e.dir, "done")
    script = ('while [ ! -e "%s" ]; do sleep 0.02; done; for i in 1 2 3 4 5 6; do '
              'if [ $((i %% 2)) -eq 1 ]; then echo "out $i"; else echo "err $i" >&2; fi; '
              'sleep 0.05; done; touch "%s"; sleep 600' % (go, done))
    mid = e.call("monitor_start", argv=["sh", "-c", script])["monitor_id"]
    kill_engine(e)
    # The keeper has detached (it starts its order record then) before the
    # program prints, so each line is a chunk of its own.
    wait_for(lambda: os.path.exists(os.path.join(monitor_dir(e, mid), "order")),
             "the keeper to detach")
    open(go, "w").close()
    wait_for(lambda: os.path.exists(done), "the program to print its lines")
    with restart_on(e) as e2:
        e2.wait_log("took over %s" % mid)
        e2.call("session_open", session="agent")
        lines = e2.call("monitor_output", monitor_id=mid)["lines"]
        got = [(l["stream"], l["text"]) for l in lines]
        want = [("stdout" if i % 2 else "stderr", ("out %d" if i % 2 else "err %d") % i)
                for i in range(1, 7)]
        assert got == want, got
        assert not os.path.exists(os.path.join(monitor_dir(e, mid), "order"))
        e2.call("monitor_stop", monitor_id=mid)


def start_lines_then(e, n, then):
    """In session "agent", a monitor (patterns ["ERROR"]) that prints "line 1"
    to "line N", then waits for the file go and runs the shell text then.
    Returns its id and go once the engine has processed the N lines (its
    checkpoint's cut, in the stdout spool's header)."""
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    script = ('seq -f "line %%g" 1 %d; while [ ! -e "%s" ]; do sleep 0.02; done; %s'
              % (n, go, then))
    mid = e.call("monitor_start", argv=["sh", "-c", script], patterns=["ERROR"])["monitor_id"]
    written = sum(len("line %d\n" % i) for i in range(1, n + 1))
    out = os.path.join(monitor_dir(e, mid), "stdout")
    wait_for(lambda: ckpt_word(out, 16) == written,
             "the engine to have processed the %d lines" % n)
    return mid, go


def taken_over_after(e, mid, go, text):
    """Kills e's engine, lets mid's program go on (the file go), and starts a
    new engine on the state directory, which takes mid over: returns it (to
    be used in a with) once, in session "agent", it has told mid's output
    holding text."""
    kill_engine(e)
    open(go, "w").close()
    e2 = restart_on(e)
    try:
        e2.call("session_open", session="agent")
        got = e2.main.wait_notification(lambda n: n["monitor_id"] == mid and n["type"] == "output")
        assert text in got["text"], got["text"]
    except BaseException:
        e2.__exit__(*sys.exc_info())
        raise
    return e2


@socket_only
@with_config(monitor={"capture_max_bytes": 4096, "ring_max_lines": 100})
def test_line_numbers_and_counters_survive_a_take_over(e):
    # 5000 lines before the crash, of which the 4 KiB spool keeps the last
    # few hundred: the taken-over monitor still counts 5000 and numbers its
    # kept lines as the engine before had them (its checkpoint).
    mid, go = start_lines_then(e, 5000, 'echo "ERROR after"; exit 0')
    with taken_over_after(e, mid, go, "ERROR after") as e2:
        counters = e2.call("monitor_status", monitor_id=mid)["counters"]
        assert counters["lines"] == 5001 and counters["matched"] == 1, counters
        lines = e2.call("monitor_output", monitor_id=mid)["lines"]
        assert lines[-1]["seq"] == 5001 and lines[-1]["text"] == "ERROR after", lines[-1]
        assert lines[-2]["seq"] == 5000 and lines[-2]["text"] == "line 5000", lines[-2]
        assert all(l["text"] == "line %d" % l["seq"] for l in lines[:-1]), lines[:3]


def resident_kib(pid):
    """KiB resident of each file the process pid maps (smaps), by path."""
    out, path = {}, None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                path = head[5] if len(head) > 5 else None
                if path is not None:
                    out.setdefault(path, 0)
            elif head[0] == "Rss:" and path is not None:
                out[path] += int(head[1])
    return out


@socket_only
@with_config(monitor={"capture_max_bytes": 3584})
def test_a_quiet_monitor_s_state_is_one_page_of_the_engine_and_is_read_back(e):
    # Issue 27: with capture_max_bytes 3584 the stdout spool (its 512-byte
    # header, the checkpoint in it, and the bytes) is one page, the only page
    # the engine holds for it after it wrapped; the stderr spool, never
    # written, is not even made (no file, no page). A takeover reads the
    # monitor back all the same, and its first stderr byte makes the file.
    mid, go = start_lines_then(e, 1000, 'echo "ERROR after"; echo "late err" >&2; exit 0')
    out = os.path.join(monitor_dir(e, mid), "stdout")
    err = os.path.join(monitor_dir(e, mid), "stderr")
    assert os.path.getsize(out) == 4096, os.path.getsize(out)
    assert spool(out)["cap"] == 3584
    assert not os.path.exists(err), "a stderr spool was made before any stderr"
    rss = resident_kib(e.proc.pid)
    assert rss.get(out) == 4, rss.get(out)
    assert err not in rss, rss.get(err)
    with taken_over_after(e, mid, go, "ERROR after") as e2:
        end = e2.main.wait_ending(mid)
        assert end["type"] == "exit" and end["exit_code"] == 0, end
        lines = e2.call("monitor_output", monitor_id=mid)["lines"]
        assert [(l["seq"], l["stream"], l["text"]) for l in lines[-3:]] == [
            (1000, "stdout", "line 1000"), (1001, "stdout", "ERROR after"),
            (1002, "stderr", "late err")], lines[-3:]
        assert all(l["text"] == "line %d" % l["seq"] for l in lines[:-2]), lines[:3]
        logs = e2.call("monitor_logs", monitor_id=mid, stream="stderr", offset=0)
        assert logs["stderr"] == b"late err\n", logs


@socket_only
def test_a_checkpoint_whose_next_seq_is_0_is_not_believed(e):
    # The page's ring_next_seq is 1 from its start; 0 is a garbled file.
    # Believed, the taken-over monitor's next line would get seq 0 (the
    # protocol's seqs start at 1); refused, the counters come from the spools.
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    script = ('printf "a\\nb\\n"; while [ ! -e "%s" ]; do sleep 0.02; done; echo "ERROR c"; '
              'exit 0' % go)
    mid = e.call("monitor_start", argv=["sh", "-c", script], patterns=["ERROR"])["monitor_id"]
    ckpt = os.path.join(monitor_dir(e, mid), "stdout")
    wait_for(lambda: ckpt_word(ckpt, 16) == 4,
             "the engine to have processed the two lines")
    kill_engine(e)
    with open(ckpt, "r+b") as f:
        f.seek(CKPT_AT + 32)
        f.write(struct.pack("<Q", 0))
    open(go, "w").close()
    with restart_on(e) as e2:
        e2.wait_log("%s: its checkpoint is unsound" % mid)
        e2.call("session_open", session="agent")
        got = e2.main.wait_notification(lambda n: n["monitor_id"] == mid and n["type"] == "output")
        assert "ERROR c" in got["text"], got["text"]
        lines = e2.call("monitor_output", monitor_id=mid)["lines"]
        assert [l["seq"] for l in lines] == [1, 2, 3], lines
        assert [l["text"] for l in lines] == ["a", "b", "ERROR c"], lines


@socket_only
def test_a_monitor_taken_over_survives_the_next_crash_too(e):
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    script = ('for n in 1 2; do while [ ! -e "%s.$n" ]; do sleep 0.02; done; echo "ERROR gap $n"; '
              'done; exit 3' % go)
    mid = e.call("monitor_start", argv=["sh", "-c", script], patterns=["ERROR"])["monitor_id"]
    engines = [e]
    try:
        for n in (1, 2):
            kill_engine(engines[-1])
            open("%s.%d" % (go, n), "w").close()
            engines.append(restart_on(e))
            engines[-1].call("session_open", session="agent")
            got = engines[-1].main.wait_notification(
                lambda x: x["monitor_id"] == mid and x["type"] == "output",
                what="the match of gap %d" % n)
            assert "ERROR gap %d" % n in got["text"], got["text"]
            assert "ERROR gap %d" % (3 - n) not in got["text"], got["text"]
        end = engines[-1].main.wait_ending(mid)
        assert end["exit_code"] == 3, end
    finally:
        for x in engines[1:]:
            x.close()


def collect_until_ending(conn, mid, into, what):
    """Appends conn's notifications to into until mid's ending is among them."""
    while True:
        n = conn.wait_notification(lambda x: True, what=what)
        into.append(n)
        if n["monitor_id"] == mid and n["type"] not in ("output", "dropped", "policy_error"):
            return n


NUMBERED_TOTAL = 600
NUMBERED_CONFIG = {"rate_limit": {"max_notifications": 1000}}


def numbered_through(e, disrupt):
    """A child printing a numbered line every few ms, every 10th a match,
    disrupted mid-stream by disrupt(e), which returns the engine (and its
    connection) to go on with; the host resumes with the last seq it had.
    Across the disruption: every match notified exactly once, the seqs 1..n
    with no gap and no repeat, the same epoch, every line counted and
    numbered as printed, and the child's true exit."""
    total = NUMBERED_TOTAL
    epoch = e.call("session_open", session="agent")["epoch"]
    script = ('i=0; while [ $i -lt %d ]; do i=$((i+1)); if [ $((i %% 10)) -eq 0 ]; then '
              'echo "MATCH $i"; else echo "line $i"; fi; sleep 0.004; done; exit 5' % total)
    # incidents off: each match is its own line to account for (in the
    # incident stage the numbered matches would coalesce as repeats).
    mid = e.call("monitor_start", argv=["sh", "-c", script], patterns=["^MATCH"],
                 label="numbers", incidents=False)["monitor_id"]
    got = []
    while True:  # until a few matches have come: the disruption is mid-stream
        n = e.main.wait_notification(lambda x: True, what="the first matches")
        got.append(n)
        if n["type"] == "output" and any("MATCH 100" == l["text"] for l in n["lines"]):
            break
    old = e.main
    e2, conn = disrupt(e)
    old.wait_closed(BOUND_S)
    got += old.drain()  # whatever the engine before had written is the host's
    last = max(n["seq"] for n in got)
    again = conn.call("session_open", session="agent", last_seq=last)
    assert again["epoch"] == epoch, (again, epoch)
    end = collect_until_ending(conn, mid, got, "the rest of the matches and the exit")
    assert end["type"] == "exit" and end["exit_code"] == 5, end
    seqs = [n["seq"] for n in got]
    assert seqs == list(range(1, len(got) + 1)), seqs
    assert all(n["epoch"] == epoch for n in got), set(n["epoch"] for n in got)
    assert not [n for n in got if n["type"] == "dropped"], "something was lost"
    matched = [l["text"] for n in got if n["type"] == "output" for l in n["lines"]]
    assert matched == ["MATCH %d" % i for i in range(10, total + 1, 10)], matched
    status = conn.call("monitor_status", monitor_id=mid)
    assert status["counters"]["lines"] == total, status["counters"]
    assert status["counters"]["matched"] == total // 10, status["counters"]
    assert status["counters"]["dropped"] == 0, status["counters"]
    lines = conn.call("monitor_output", monitor_id=mid)["lines"]
    assert lines and lines[-1]["seq"] == total, lines[-1:]
    for l in lines:
        want = ("MATCH %d" if l["seq"] % 10 == 0 else "line %d") % l["seq"]
        assert l["text"] == want, l
    return e2


@socket_only
@with_config(**NUMBERED_CONFIG)
def test_every_line_and_match_survives_a_sigkill_mid_stream_each_notified_once(e):
    engines = []

    def crash(e):
        kill_engine(e)
        engines.append(restart_on(e, config=default_config(**NUMBERED_CONFIG)))
        return engines[-1], engines[-1].main

    try:
        numbered_through(e, crash)
    except BaseException:
        for x in engines:
            sys.stdout.write("--- the restarted vigild's log ---\n" + x.log()[-4000:] + "\n")
        raise
    finally:
        for x in engines:
            x.close()


@socket_only
@with_config(**NUMBERED_CONFIG)
def test_a_graceful_restart_sigusr2_hands_everything_over_with_no_gap(e):
    # SIGUSR2: vigild execs itself, same pid, the listening socket handed
    # over; the host's connection closes and it resumes on a new one.
    pid = e.proc.pid
    child = {}

    def graceful(e):
        [m] = e.call("monitor_list")["monitors"]
        child["pid"] = m["pid"]
        os.kill(pid, signal.SIGUSR2)
        e.wait_log("(the socket handed over, fd ", timeout=BOUND_S)
        return e, e.connect()

    numbered_through(e, graceful)
    assert e.proc.poll() is None and e.proc.pid == pid
    log = e.log()
    assert "restarting as " in log and "took over " in log, log[-3000:]
    assert "not taken over" not in log and "lost past the spool" not in log, log[-3000:]
    # The child was never anyone's but its keeper's, and nothing is left.
    assert not alive(child["pid"])
    wait_for(lambda: not os.listdir(os.path.join(state_dir(e), "monitors")),
             "the ended monitor's directory to go")


@socket_only
def test_a_notification_waiting_at_the_crash_is_delivered_after_it_with_its_text(e):
    # An idle notification waits while the session is busy; the engine dies
    # with it waiting. The restarted engine holds it still, and a host that
    # attaches gets it, numbered next, with the text the old engine made;
    # one resuming from an older cursor gets the kept ones again, same
    # seqs, same text.
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    mid = e.call("monitor_start", argv=["sh", "-c", 'echo "ERROR one"; while [ ! -e "%s" ]; do '
                                        'sleep 0.02; done; echo "ERROR two"; sleep 600' % go],
                 patterns=["ERROR"], mode="idle")["monitor_id"]
    first = e.main.wait_notification(lambda n: n["monitor_id"] == mid, what="ERROR one")
    assert first["seq"] == 1 and "ERROR one" in first["text"], first
    e.call("session_state", state="busy")
    open(go, "w").close()
    journal = os.path.join(state_dir(e), "sessions", "session.agent")
    wait_for(lambda: b"ERROR two" in open(journal, "rb").read(), "the held notification's record")
    assert not e.main.drain(), "a busy session pushed an idle notification"
    kill_engine(e)
    with restart_on(e) as e2:
        e2.wait_log("session agent brought back: next seq 2, 1 notification(s) kept for resume, "
                    "1 waiting")
        e2.call("session_open", session="agent", last_seq=1)
        second = e2.main.wait_notification(lambda n: n["monitor_id"] == mid, what="ERROR two")
        assert second["seq"] == 2 and "ERROR two" in second["text"], second
        other = e2.connect()
        other.call("session_open", session="agent", last_seq=0)
        replayed = [other.wait_notification(lambda n: n["seq"] == k, what="seq %d again" % k)
                    for k in (1, 2)]
        assert replayed[0]["text"] == first["text"], (replayed[0]["text"], first["text"])
        assert replayed[1]["text"] == second["text"]
        e2.call("monitor_stop", monitor_id=mid)


@socket_only
def test_a_crash_between_a_notification_and_its_checkpoint_tells_it_once(e):
    # The notification is in the session's journal before it is pushed,
    # with the checkpoint that is stored right after; a crash between the
    # two (simulated: the checkpoint page put back as it was before the
    # batch) is caught up from the journal, so the batch is not told again.
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    mid = e.call("monitor_start", argv=["sh", "-c", 'echo "ERROR one"; while [ ! -e "%s" ]; do '
                                        'sleep 0.02; done; echo "ERROR two"; sleep 600' % go],
                 patterns=["ERROR"], incidents=False)["monitor_id"]
    first = e.main.wait_notification(lambda n: n["monitor_id"] == mid, what="ERROR one")
    assert first["seq"] == 1, first
    ckpt = os.path.join(monitor_dir(e, mid), "stdout")
    wait_for(lambda: ckpt_word(ckpt, 72) == 1,
             "the checkpoint after the first notification")
    kill_engine(e)
    with open(ckpt, "r+b") as f:  # cut, next seq, counters, notifications: before the batch
        f.seek(CKPT_AT + 16)
        f.write(struct.pack("<QQQQQQQQ", 0, 0, 1, 0, 0, 0, 0, 0))
    open(go, "w").close()
    with restart_on(e) as e2:
        e2.wait_log("%s: its checkpoint is taken from its session's journal" % mid)
        e2.call("session_open", session="agent", last_seq=1)
        second = e2.main.wait_notification(lambda n: n["monitor_id"] == mid, what="ERROR two")
        assert second["seq"] == 2 and "ERROR two" in second["text"], second
        assert "ERROR one" not in second["text"], second["text"]
        status = e2.call("monitor_status", monitor_id=mid)["counters"]
        assert (status["lines"], status["matched"], status["notifications"]) == (2, 2, 2), status
        e2.call("monitor_stop", monitor_id=mid)


@socket_only
def test_a_restart_that_fails_to_start_leaves_the_state_as_it_was(e):
    # Started again where its socket cannot be bound, vigild exits 1 after
    # taking the state back; the monitor goes on under its keeper and the
    # session's journal stays, so the next start takes both.
    e.call("session_open", session="agent")
    mid = e.call("monitor_start", argv=["sh", "-c", "echo ERROR one; sleep 600"],
                 patterns=["ERROR"])["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    e.main.wait_notification(lambda n: n["monitor_id"] == mid, what="the match")
    kill_engine(e)
    os.unlink(e.socket_path)
    open(e.socket_path, "w").close()  # not a socket: the listen is refused
    p = subprocess.run([VIGILD, "--listen", e.socket_path, "--config", e.config_path,
                        "--state-dir", state_dir(e)], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=BOUND_S)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 1, err
    assert "is not a socket" in err and "the state directory is left as it was" in err, err
    assert alive(pid)
    assert os.path.exists(os.path.join(state_dir(e), "sessions", "session.agent"))
    assert os.path.exists(os.path.join(monitor_dir(e, mid), "spec"))
    os.unlink(e.socket_path)
    with restart_on(e) as e2:
        e2.wait_log("took over %s" % mid)
        again = e2.call("session_open", session="agent", last_seq=0)
        assert again["resumed"] is True and again["next_seq"] == 2, again
        e2.call("monitor_stop", monitor_id=mid)


@socket_only
def test_a_corrupt_session_journal_is_set_aside_and_reported_never_trusted(e):
    e.call("session_open", session="agent")
    e.call("session_open", session="other")
    sessions = os.path.join(state_dir(e), "sessions")
    wait_for(lambda: os.path.exists(os.path.join(sessions, "session.other")), "the journals")
    kill_engine(e)
    bad = os.path.join(sessions, "session.agent")
    with open(bad, "r+b") as f:  # a flipped byte inside the first record
        f.seek(40)
        b = f.read(1)
        f.seek(40)
        f.write(bytes([b[0] ^ 0xff]))
    with restart_on(e) as e2:
        e2.wait_log("session agent is not brought back: ")
        e2.wait_log("journal: the record at offset 16 fails its sum; the file is set aside as "
                    "aside/session.agent.")
        e2.wait_log("session other brought back")
        aside = os.listdir(os.path.join(state_dir(e), "aside"))
        assert len(aside) == 1 and aside[0].startswith("session.agent."), aside
        # The session starts afresh; a host resuming it is told what is lost.
        fresh = e2.call("session_open", session="agent", last_seq=7)
        assert fresh["resumed"] is False, fresh
        lost = e2.main.wait_notification(lambda n: n["type"] == "dropped", what="the loss")
        assert lost["seq"] == 8 and lost["from_seq"] == 8 and lost["to_seq"] is None, lost
        assert e2.call("session_open", session="other")["resumed"] is True


@socket_only
def test_a_journal_torn_by_the_crash_loses_only_its_cut_record(e):
    e.call("session_open", session="agent")
    mid = e.call("monitor_start", argv=["sh", "-c", "echo ERROR here; sleep 600"],
                 patterns=["ERROR"])["monitor_id"]
    e.main.wait_notification(lambda n: n["monitor_id"] == mid, what="the match")
    kill_engine(e)
    journal = os.path.join(state_dir(e), "sessions", "session.agent")
    with open(journal, "ab") as f:  # a record whose write the crash cut short
        f.write(struct.pack("<II", 500, 0) + b"\x86\xa1t")
    with restart_on(e) as e2:
        e2.wait_log("session agent: the last 11 bytes of its journal were a record cut short")
        e2.wait_log("session agent brought back: next seq 2, 1 notification(s) kept")
        e2.call("session_open", session="agent", last_seq=0)
        again = e2.main.wait_notification(lambda n: n["monitor_id"] == mid, what="the match again")
        assert again["seq"] == 1 and "ERROR here" in again["text"], again
        e2.call("monitor_stop", monitor_id=mid)


@socket_only
def test_an_exit_while_no_engine_was_there_is_reported_with_its_code(e):
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    mid, pid = start_waiting(e, go, "echo done; exit 7")
    kill_engine(e)
    open(go, "w").close()
    wait_for(lambda: os.path.exists(os.path.join(monitor_dir(e, mid), "exit")),
             "the keeper's exit file")
    with restart_on(e) as e2:
        e2.call("session_open", session="agent")
        end = e2.main.wait_ending(mid)
        assert end["type"] == "exit" and end["exit_code"] == 7, end
        status = e2.call("monitor_status", monitor_id=mid)
        assert status["state"] == "exited" and status["exit_code"] == 7, status


@socket_only
def test_a_garbled_spec_is_not_trusted_the_monitor_is_stopped_and_reported(e):
    e.call("session_open", session="agent")
    mid = e.call("monitor_start", argv=["sleep", "600"])["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    kill_engine(e)
    spec_path = os.path.join(monitor_dir(e, mid), "spec")
    with open(spec_path, "r+b") as f:
        f.seek(40)
        b = f.read(1)
        f.seek(40)
        f.write(bytes([b[0] ^ 0x40]))
    with restart_on(e) as e2:
        log = e2.wait_log("monitor %s was left by an engine" % mid)
        assert "sum does not match" in log, log[-2000:]
        assert "the spec is set aside as aside/monitor.%s.spec." % mid in log, log[-2000:]
        [aside] = os.listdir(os.path.join(state_dir(e), "aside"))
        assert aside.startswith("monitor.%s.spec." % mid), aside
        wait_for(lambda: not alive(pid), "the program to be stopped")
        e2.call("session_open", session="agent")
        assert e2.call("monitor_list")["monitors"] == []


@socket_only
def test_a_restarted_engine_reports_and_stops_what_a_killed_one_left(e):
    mid = e.call("monitor_start", argv=["sleep", "600"])["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    keeper = parent(pid)
    kill_engine(e)
    assert alive(pid) and alive(keeper)
    with restart_on(e) as e2:
        log = e2.wait_log("monitor %s was left by an engine that ended without stopping it" % mid)
        line = [l for l in log.splitlines() if mid in l][0]
        assert "its session was anonymous" in line, line
        assert "keeper (pid %d): stopped" % keeper in line, line
        assert "killed by signal 9 (stopped)" in line, line
        wait_for(lambda: not alive(pid) and not alive(keeper), "the program and keeper to end")
        assert os.listdir(os.path.join(state_dir(e), "monitors")) == []
        # The engine serves on: a new monitor starts and ends.
        m2 = e2.call("monitor_start", argv=["sh", "-c", "exit 3"])["monitor_id"]
        assert e2.main.wait_ending(m2)["exit_code"] == 3


def anonymous_kib(pid):
    """A process's anonymous memory (smaps_rollup), in KiB: the pages it
    wrote for itself. (Private_Dirty would count its program's code too
    while a fresh build's file is not yet written back.)"""
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1])
    raise AssertionError("no Anonymous in smaps_rollup")


@socket_only
@with_config(monitor={"capture_max_bytes": SPOOL_CAP})
def test_a_keeper_gives_back_what_it_drained_once_taken_over(e):
    # A keeper runs per monitor; what it drained into the spools while no
    # engine read must not stay in its private memory once an engine reads
    # the pipes again (its drain buffer held 64 KiB for good before).
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    total = 4 * 1024 * 1024
    mid, pid = start_waiting(e, go, "yes 0123456789abcdef | head -c %d; sleep 3600" % total)
    keeper = parent(pid)
    before = anonymous_kib(keeper)
    kill_engine(e)
    open(go, "w").close()  # a flood while no engine reads: the keeper drains it
    wait_for(lambda: spool(os.path.join(monitor_dir(e, mid), "stdout"))["head"] == total,
             "the keeper to drain the flood")
    with restart_on(e) as e2:
        e2.wait_log("took over %s" % mid)
        after = anonymous_kib(keeper)
        # A sanitized keeper's memory is mostly its sanitizer's (shadow,
        # quarantine), which grows with what it did: only the plain build
        # measures the keeper's own.
        with open("/proc/%d/maps" % keeper) as f:
            sanitized = "libasan" in f.read()
        assert sanitized or after - before < 32, (before, after)
        e2.call("session_open", session="agent")
        e2.call("monitor_stop", monitor_id=mid)
        e2.main.wait_ending(mid)


@socket_only
@with_config(keeper={"unattended_ms": 1000}, monitor={"kill_grace_ms": 500})
def test_a_keeper_left_alone_stops_its_program_after_keeper_unattended_ms(e):
    mid = e.call("monitor_start", argv=["sleep", "600"])["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    kill_engine(e)
    exit_path = os.path.join(monitor_dir(e, mid), "exit")
    wait_for(lambda: os.path.exists(exit_path), "the unattended stop")
    x = exit_record(exit_path)
    assert (x["exited"], x["code"], x["signal"], x["cause"]) == (
        "1", "-1", str(int(signal.SIGTERM)), "unattended"), x
    assert not alive(pid)
    restart_on(e).close()


@socket_only
def test_a_keeper_killed_under_a_live_engine_loses_nothing(e):
    go = os.path.join(e.dir, "go")
    mid, pid = start_waiting(e, go, "echo after; exit 5")
    keeper = parent(pid)
    os.kill(keeper, signal.SIGKILL)
    wait_for(lambda: parent(pid) == e.proc.pid, "the engine to become the program's parent")
    open(go, "w").close()
    end = e.main.wait_ending(mid)
    assert end["exit_code"] == 5, end
    lines = e.call("monitor_output", monitor_id=mid)["lines"]
    assert [l["text"] for l in lines] == ["after"], lines


@socket_only
def test_a_graceful_shutdown_leaves_no_monitor_directory(e):
    e.call("monitor_start", argv=["sleep", "600"])
    mid = e.call("monitor_start", argv=["sh", "-c", "echo hi"])["monitor_id"]
    e.main.wait_ending(mid)
    # An ended monitor's directory goes once its ending is told (nothing
    # for a restart to tell again); the running one's stays until the end.
    wait_for(lambda: len(os.listdir(os.path.join(state_dir(e), "monitors"))) == 1,
             "the ended monitor's directory to go")
    assert e.stop() == 0
    assert os.listdir(os.path.join(state_dir(e), "monitors")) == []


@socket_only
def test_after_a_shutdown_the_next_engine_draws_a_new_epoch(e):
    # SIGTERM keeps nothing, the epoch included: a host's cursor from the
    # engine before reads as "what followed it is gone" (a crash keeps it).
    epoch = e.call("session_open", session="agent")["epoch"]
    assert e.stop() == 0
    assert not os.path.exists(os.path.join(state_dir(e), "epoch"))
    with restart_on(e) as e2:
        again = e2.call("session_open", session="agent", last_seq=4)
        assert again["resumed"] is False and again["epoch"] != epoch, (again, epoch)


@stdio_only
def test_without_a_state_directory_the_engine_is_the_parent(e):
    mid = e.call("monitor_start", argv=["sleep", "600"])["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    assert parent(pid) == e.proc.pid
    assert e.call("api_info")["state_dir"] is None


TESTS = [
    test_a_child_outlives_a_killed_engine_never_blocks_and_its_loss_is_counted,
    test_the_checkpoint_shares_the_stdout_spools_first_page,
    test_a_restarted_engine_takes_over_a_running_monitor,
    test_a_program_started_by_its_keeper_gets_a_large_environment_whole,
    test_lines_of_both_streams_printed_while_down_keep_their_order,
    test_line_numbers_and_counters_survive_a_take_over,
    test_a_quiet_monitor_s_state_is_one_page_of_the_engine_and_is_read_back,
    test_a_checkpoint_whose_next_seq_is_0_is_not_believed,
    test_a_monitor_taken_over_survives_the_next_crash_too,
    test_every_line_and_match_survives_a_sigkill_mid_stream_each_notified_once,
    test_a_graceful_restart_sigusr2_hands_everything_over_with_no_gap,
    test_a_notification_waiting_at_the_crash_is_delivered_after_it_with_its_text,
    test_a_crash_between_a_notification_and_its_checkpoint_tells_it_once,
    test_a_restart_that_fails_to_start_leaves_the_state_as_it_was,
    test_a_corrupt_session_journal_is_set_aside_and_reported_never_trusted,
    test_a_journal_torn_by_the_crash_loses_only_its_cut_record,
    test_an_exit_while_no_engine_was_there_is_reported_with_its_code,
    test_a_garbled_spec_is_not_trusted_the_monitor_is_stopped_and_reported,
    test_a_restarted_engine_reports_and_stops_what_a_killed_one_left,
    test_a_keeper_left_alone_stops_its_program_after_keeper_unattended_ms,
    test_a_keeper_killed_under_a_live_engine_loses_nothing,
    test_a_keeper_gives_back_what_it_drained_once_taken_over,
    test_a_graceful_shutdown_leaves_no_monitor_directory,
    test_after_a_shutdown_the_next_engine_draws_a_new_epoch,
    test_without_a_state_directory_the_engine_is_the_parent,
]

if __name__ == "__main__":
    sys.exit(run_tests(TESTS))
