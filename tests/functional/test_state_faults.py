"""The state directory failing under a running engine (docs/restart.md,
"When the state directory fails"): a file system too small for what the
monitors print (a small tmpfs $XDG_RUNTIME_DIR is common), and a mapped
state file cut short under a running monitor. Neither may kill the engine
or a keeper (a page of a shared mapping that has no room, or no file
behind it any more, is a SIGBUS): the monitor's use of the state
directory degrades to counting (counters.state_unkept_bytes, and a log
line saying why), while its lines still reach the ring, its matches still
notify, and its output stays readable from memory.

The full file system is a tmpfs of a few MiB mounted for the test, which
needs root (CI runs as root); elsewhere those tests say they are skipped.
Every wait is on an event with a generous bound (a reply, a file, a
notification): the CI machine is a loaded 2-core box."""

import contextlib
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import Engine, alive, default_config, parent, run_plain_tests, wait_for

BOUND_S = 60
FLOOD = 3000000  # bytes printed: three times the tmpfs, three times the spool


class Tmpfs:
    """A tmpfs of size bytes mounted at dir for the test (root only)."""

    def __init__(self, where, size):
        self.dir = os.path.join(where, "small")
        os.makedirs(self.dir)
        subprocess.check_call(["mount", "-t", "tmpfs", "-o", "size=%d,mode=0700" % size,
                               "tmpfs", self.dir])

    def free(self):
        st = os.statvfs(self.dir)
        return st.f_bavail * st.f_frsize

    def close(self):
        subprocess.call(["umount", "-l", self.dir])


def needs_root(fn):
    """Runs fn only as root (it mounts a tmpfs); says so otherwise."""
    def run(tmp):
        if os.geteuid() != 0:
            print("skip %s: mounting a small tmpfs needs root (CI runs as root)" % fn.__name__)
            return
        fn(tmp)
    run.__name__ = fn.__name__
    return run


class StateEngine(Engine):
    """A socket engine whose state directory is state_dir."""

    def __init__(self, state_dir, config=None):
        self.state_dir = state_dir
        super().__init__("socket", config or default_config(),
                         extra_args=["--state-dir", state_dir])
        self.leftovers = []  # (program pid, keeper pid) to end should a test fail

    def monitor_dir(self, mid):
        return os.path.join(self.state_dir, "monitors", mid)

    def start(self, argv, **args):
        """monitor_start: the monitor's id, its program's pid and its keeper's."""
        mid = self.call("monitor_start", argv=argv, **args)["monitor_id"]
        pid = self.call("monitor_status", monitor_id=mid)["pid"]
        keeper = parent(pid)
        self.leftovers.append((pid, keeper))
        return mid, pid, keeper

    def finish(self):
        reports = self.close()
        # A program whose engine was killed is its keeper's; a failed test
        # may leave both behind.
        for pid, keeper in self.leftovers:
            for target in (-pid, keeper):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
        assert not reports, "\n".join(reports)


@contextlib.contextmanager
def state_engine(tmp, tmpfs_size=None):
    """A StateEngine whose state directory is in tmp, or on a tmpfs of
    tmpfs_size bytes mounted there; yields the engine and the tmpfs."""
    fs = Tmpfs(tmp, tmpfs_size) if tmpfs_size else None
    try:
        e = StateEngine(os.path.join(fs.dir if fs else tmp, "state"))
        try:
            yield e, fs
        finally:
            e.finish()
    finally:
        if fs:
            fs.close()


def keeper_lived_to_the_end(mdir, epipe, code):
    """The keeper wrote its exit file with the program's code, and the
    program never lost its pipe's reader (it touches epipe when a write
    fails: its keeper was gone)."""
    wait_for(lambda: os.path.exists(os.path.join(mdir, "exit")), "the keeper's exit file")
    assert not os.path.exists(epipe), "the program's pipe lost its reader (the keeper)"
    with open(os.path.join(mdir, "exit")) as f:
        record = f.read()
    assert "code %d" % code in record, record


def engine_alive(e):
    assert e.proc.poll() is None, "vigild died (status %s):\n%s" % (e.proc.returncode,
                                                                    e.log()[-3000:])
    assert e.call("ping")["api_level"] >= 1


def waiting_script(go, then):
    return 'while [ ! -e "%s" ]; do sleep 0.02; done; %s' % (go, then)


@needs_root
def test_a_full_state_file_system_degrades_the_monitor_to_counting(tmp):
    with state_engine(tmp, 1 << 20) as (e, _):
        e.call("session_open", session="agent")
        script = ("yes 'a line of output that fills the state directory' | head -c %d; "
                  "echo; echo 'ERROR after the flood'; echo last-line" % FLOOD)
        mid, _, _ = e.start(["sh", "-c", script], patterns=["ERROR"])
        got = e.main.wait_notification(lambda n: n["monitor_id"] == mid and n["type"] == "output",
                                       timeout=BOUND_S, what="the match after the flood")
        assert "ERROR after the flood" in got["text"], got["text"]
        end = e.main.wait_ending(mid, timeout=BOUND_S)
        assert end["type"] == "exit" and end["exit_code"] == 0, end
        engine_alive(e)
        status = e.call("monitor_status", monitor_id=mid)
        counters = status["counters"]
        # What did not fit is counted, and everything was still read.
        assert 0 < counters["state_unkept_bytes"] <= counters["stdout_bytes"], counters
        assert counters["stdout_bytes"] == FLOOD + len("\nERROR after the flood\nlast-line\n")
        lines = e.call("monitor_output", monitor_id=mid)["lines"]
        assert lines[-1]["text"] == "last-line", lines[-1]
        # Its output is still there to read, from memory now.
        logs = e.call("monitor_logs", monitor_id=mid, stream="stdout",
                      offset=counters["stdout_bytes"] - 10)
        assert logs["stdout"] == b"last-line\n", logs
        e.wait_log("can no longer be kept in the state directory")
        # Another monitor still starts, on the full file system.
        mid2 = e.call("monitor_start", argv=["sh", "-c", "echo ERROR second"],
                      patterns=["ERROR"])["monitor_id"]
        got2 = e.main.wait_notification(lambda n: n["monitor_id"] == mid2, what="the second")
        assert "ERROR second" in got2["text"], got2
        e.main.wait_ending(mid2)
        engine_alive(e)


@needs_root
def test_a_keeper_survives_a_full_state_file_system(tmp):
    # The tmpfs is filled up to a little room by a file of the test's own,
    # which the test removes once the flood is spooled: then the keeper's
    # exit file, the proof that it lived to the end, has room.
    with state_engine(tmp, 4 << 20) as (e, fs):
        go, flooded, go2 = (os.path.join(tmp, n) for n in ("go", "flooded", "go2"))
        epipe = os.path.join(tmp, "epipe")
        script = waiting_script(go, "trap '' PIPE; yes 'keeper flood line' | head -c %d; "
                                    "touch %s; %s; echo after || touch %s; exit 5"
                                % (FLOOD, flooded, waiting_script(go2, "true"), epipe))
        mid, pid, keeper = e.start(["sh", "-c", script])
        filler = os.path.join(fs.dir, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, fs.free() - (256 << 10)))
        mdir = e.monitor_dir(mid)
        e.proc.kill()
        e.proc.wait(BOUND_S)
        open(go, "w").close()
        wait_for(lambda: os.path.exists(flooded), "the flood to be written")
        assert alive(keeper), "the keeper died spooling into a full file system"
        os.unlink(filler)
        open(go2, "w").close()
        keeper_lived_to_the_end(mdir, epipe, 5)


def test_state_files_cut_short_under_a_running_monitor_cost_only_their_keeping(tmp):
    with state_engine(tmp) as (e, _):
        e.call("session_open", session="agent")
        go, go2 = os.path.join(tmp, "go"), os.path.join(tmp, "go2")
        script = ("echo 'ERROR before'; echo err-before >&2; %s; echo 'ERROR after the cut'; "
                  "echo err-after >&2; %s; echo 'ERROR last'; seq 1 20000 | tail -n 1"
                  % (waiting_script(go, "true"), waiting_script(go2, "true")))
        mid, _, _ = e.start(["sh", "-c", script], patterns=["ERROR"])
        first = e.main.wait_notification(lambda n: n["monitor_id"] == mid, what="the first match")
        assert "ERROR before" in first["text"], first["text"]
        mdir = e.monitor_dir(mid)
        # Every file of the monitor's directory that the engine maps (the
        # checkpoint is in the stdout spool's header).
        for name in ("stdout", "stderr", "events"):
            os.truncate(os.path.join(mdir, name), 0)
        open(go, "w").close()
        got = e.main.wait_notification(lambda n: n["monitor_id"] == mid and
                                       "ERROR after the cut" in n["text"],
                                       what="the match after the cut")
        engine_alive(e)
        open(go2, "w").close()
        e.main.wait_notification(lambda n: n["monitor_id"] == mid and "ERROR last" in n["text"],
                                 what="the last match")
        end = e.main.wait_ending(mid)
        assert end["type"] == "exit" and end["exit_code"] == 0, end
        engine_alive(e)
        counters = e.call("monitor_status", monitor_id=mid)["counters"]
        assert counters["state_unkept_bytes"] > 0, counters
        assert counters["state_unkept_events"] > 0, counters  # the later matches, the exit
        texts = [l["text"] for l in e.call("monitor_output", monitor_id=mid)["lines"]]
        assert texts[-1] == "20000" and "ERROR after the cut" in texts, texts
        logs = e.call("monitor_logs", monitor_id=mid, stream="stderr", offset=0)
        assert logs["stderr"].endswith(b"err-after\n"), logs
        e.wait_log("its stdout can no longer be kept in the state directory")
        e.wait_log("its stderr can no longer be kept in the state directory")
        e.wait_log("its event log can no longer be kept in the state directory")
        e.wait_log("its checkpoint's file was cut short under it")
        assert got["type"] == "output"


def test_a_keeper_survives_its_spool_cut_short(tmp):
    with state_engine(tmp) as (e, _):
        go, epipe = os.path.join(tmp, "go"), os.path.join(tmp, "epipe")
        script = waiting_script(go, "trap '' PIPE; seq 1 100000 || touch %s; exit 6" % epipe)
        mid, pid, keeper = e.start(["sh", "-c", script])
        mdir = e.monitor_dir(mid)
        e.proc.kill()
        e.proc.wait(BOUND_S)
        # The keeper maps the spools when its engine is gone: it has
        # detached once its order record is there.
        wait_for(lambda: os.path.exists(os.path.join(mdir, "order")), "the keeper to detach")
        os.truncate(os.path.join(mdir, "stdout"), 4096)
        open(go, "w").close()
        keeper_lived_to_the_end(mdir, epipe, 6)
        wait_for(lambda: not alive(keeper), "the keeper to end")


TESTS = [
    test_a_full_state_file_system_degrades_the_monitor_to_counting,
    test_a_keeper_survives_a_full_state_file_system,
    test_state_files_cut_short_under_a_running_monitor_cost_only_their_keeping,
    test_a_keeper_survives_its_spool_cut_short,
]


if __name__ == "__main__":
    sys.exit(run_plain_tests(TESTS, "vigil-sf-"))
