"""Line-buffered children, through the real vigild (issue 13, part 3).

A monitored program has no terminal, so C stdio and Python block-buffer its
stdout: a dev server's first lines would arrive only when a buffer fills or
the program exits. By default the engine gives every child
PYTHONUNBUFFERED=1 and, where coreutils' libstdbuf is installed, preloads it
with _STDBUF_O=L. This checks, with the machine's own PYTHONUNBUFFERED
removed (it would hide the bug):

- a Python child and a C child (printf) that print a line and then block
  are seen to print it while they still run;
- with `line_buffered: false` the Python child's line arrives only when it
  exits (the proof that the first check can fail), and so it does with the
  config's monitor.line_buffered = false unless the start asks for it;
- the variables the child gets: the engine's additions, the start's own
  values winning, LD_PRELOAD in a start's env still refused by
  monitor.env_deny, and api_info's limits saying the setting.

The children block on sigwait (SIGUSR1, blocked before they print) and
create a marker file once their print has returned, so the test knows the
line was written without sleeping on it.
"""

import os
import signal
import sys
import tempfile
import time

# This machine sets PYTHONUNBUFFERED=1 for every process; vigild, and so its
# children, would inherit it through a config that passes it on, and a
# Python child would then be unbuffered whatever the engine does. Removed
# before any engine starts.
os.environ.pop("PYTHONUNBUFFERED", None)

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import HELPERS, default_config, expect_error, run_tests, with_config

PYTHON = sys.executable
PRINTF_BLOCK = os.path.join(HELPERS, "child_printf_block")

# The Python twin of child_printf_block.c.
PY_CHILD = r"""
import signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
print("early")
open(sys.argv[1], "x").close()
signal.sigwait([signal.SIGUSR1])
print("late")
"""

# Generous: a loaded 2-core machine.
WAIT_MS = 20000


def config(**monitor):
    cfg = default_config()
    cfg["monitor"]["allowed_commands"] = cfg["monitor"]["allowed_commands"] + [PYTHON,
                                                                             PRINTF_BLOCK]
    cfg["monitor"].update(monitor)
    return cfg


def with_monitor(**monitor):
    def wrap(fn):
        fn.config = lambda: config(**monitor)
        return fn
    return wrap


def marker_path():
    d = tempfile.mkdtemp(prefix="vigil-ft-linebuf-")
    return os.path.join(d, "printed")


def wait_file(path, timeout=WAIT_MS / 1000):
    """Waits (bounded) for the child to create path: its print has returned.
    The child says so in no other way the engine can see."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "the child never created %s" % path
        time.sleep(0.01)


def texts(e, mid):
    return [l["text"] for l in e.call("monitor_output", monitor_id=mid)["lines"]]


def release(e, mid, pid, marker):
    """Lets the child go on (SIGUSR1), waits for its end and returns its lines."""
    os.kill(pid, signal.SIGUSR1)
    e.main.wait_ending(mid, timeout=WAIT_MS / 1000)
    os.unlink(marker)
    os.rmdir(os.path.dirname(marker))
    return texts(e, mid)


def start(e, argv, **args):
    marker = marker_path()
    r = e.call("monitor_start", argv=argv + [marker], patterns=[], **args)
    return r["monitor_id"], r["pid"], marker


def assert_seen_while_running(e, argv, **args):
    mid, pid, marker = start(e, argv, **args)
    w = e.call("monitor_wait", monitor_id=mid, **{"for": "output"}, since_sequence=0,
               timeout_ms=WAIT_MS, timeout=WAIT_MS / 1000 + 30)
    assert w["timed_out"] is False and w["last_sequence"] >= 1, w
    # Still blocked in sigwait: the line came while it ran, not at its exit.
    assert e.call("monitor_status", monitor_id=mid)["state"] == "running"
    assert texts(e, mid) == ["early"], texts(e, mid)
    assert release(e, mid, pid, marker) == ["early", "late"]


def assert_held_until_exit(e, argv, **args):
    mid, pid, marker = start(e, argv, **args)
    wait_file(marker)
    # The print has returned; a line-buffered stdout would already be in the
    # pipe and read within milliseconds. Block-buffered, nothing comes.
    w = e.call("monitor_wait", monitor_id=mid, **{"for": "output"}, since_sequence=0,
               timeout_ms=1500)
    assert w["timed_out"] is True and w["last_sequence"] == 0, w
    assert e.call("monitor_status", monitor_id=mid)["state"] == "running"
    # At its exit stdio flushes: both lines, in order.
    assert release(e, mid, pid, marker) == ["early", "late"]


def libstdbuf_found(e):
    """Whether the engine found libstdbuf (it says so in its log at start)."""
    log = e.wait_log("line-buffered children:")
    return "preloaded with _STDBUF_O=L" in log


@with_monitor()
def test_a_python_child_is_line_buffered_by_default(e):
    assert "PYTHONUNBUFFERED" not in os.environ
    assert_seen_while_running(e, [PYTHON, "-c", PY_CHILD])


@with_monitor()
def test_a_c_child_is_line_buffered_where_libstdbuf_exists(e):
    if not libstdbuf_found(e):
        print("skip: no coreutils libstdbuf on this machine (the engine logged none); "
              "C stdio children stay block-buffered there")
        return
    assert_seen_while_running(e, [PRINTF_BLOCK])


@with_monitor()
def test_line_buffered_false_leaves_the_child_block_buffered(e):
    assert_held_until_exit(e, [PYTHON, "-c", PY_CHILD], line_buffered=False)
    if libstdbuf_found(e):
        assert_held_until_exit(e, [PRINTF_BLOCK], line_buffered=False)


@with_monitor(line_buffered=False)
def test_the_setting_turns_it_off_and_a_start_back_on(e):
    assert e.call("api_info")["limits"]["monitor.line_buffered"] is False
    assert_held_until_exit(e, [PYTHON, "-c", PY_CHILD])
    assert_seen_while_running(e, [PYTHON, "-c", PY_CHILD], line_buffered=True)


SHOW_ENV = 'echo "[$PYTHONUNBUFFERED][$_STDBUF_O][$LD_PRELOAD]"'


@with_monitor()
def test_the_environment_a_child_gets(e):
    assert e.call("api_info")["limits"]["monitor.line_buffered"] is True
    stdbuf = libstdbuf_found(e)
    # process_run takes the argument too.
    out = e.call("process_run", argv=["sh", "-c", SHOW_ENV])["stdout_summary"]
    if stdbuf:
        assert out.startswith("[1][L][/") and out.endswith("libstdbuf.so]"), out
    else:
        assert out == "[1][][]", out
    off = e.call("process_run", argv=["sh", "-c", SHOW_ENV], line_buffered=False)
    assert off["stdout_summary"] == "[][][]", off
    # The start's own values win over the engine's.
    own = e.call("process_run", argv=["sh", "-c", SHOW_ENV],
                 env={"PYTHONUNBUFFERED": "", "_STDBUF_O": "0"})["stdout_summary"]
    assert own.startswith("[][0]["), own
    # The engine's preload is its own: a start still may not set LD_PRELOAD.
    err = expect_error("denied", e.call, "process_run", argv=["sh", "-c", SHOW_ENV],
                       env={"LD_PRELOAD": "/tmp/evil.so"})
    assert "LD_PRELOAD" in err.message and "monitor.env_deny" in err.message
    # A wrong type is refused, naming the argument.
    err = expect_error("invalid_params", e.call, "monitor_start", command="true",
                       line_buffered="yes")
    assert "line_buffered" in err.message, err.message


if __name__ == "__main__":
    sys.exit(run_tests([
        test_a_python_child_is_line_buffered_by_default,
        test_a_c_child_is_line_buffered_where_libstdbuf_exists,
        test_line_buffered_false_leaves_the_child_block_buffered,
        test_the_setting_turns_it_off_and_a_start_back_on,
        test_the_environment_a_child_gets,
    ]))
