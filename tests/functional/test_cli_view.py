"""The dev-stack view of the `vigil` client (issue 24, item 2), against the
real vigild: `list` lines its columns up by display width (a CJK label is
two columns a character) and shows each monitor's command, uptime, CPU time
and peak memory; what pm2 and docker users type (`ps`, `ls`, `logs --tail`,
`-fn 2`) is taken or gets a suggestion; and `logs -f` interleaves every
monitor's lines, each prefixed with its label. The helpers (running the
client) are test_cli.py's."""

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
import unicodedata

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import VIGIL, run_tests, socket_only
from test_cli import Reader, client_env, finish, spawn, start, vigil, vigil_ok
from test_cli_exits import read_until


def width(text):
    """Display columns of text, as a terminal shows it: East Asian wide and
    fullwidth characters take two, combining marks none."""
    w = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        w += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return w


def column_of(line, needle):
    """The display column at which needle starts in line."""
    i = line.index(needle)
    return width(line[:i])


# --- list --------------------------------------------------------------------

@socket_only
def test_list_aligns_a_cjk_label_and_shows_command_uptime_cpu_memory(e):
    wide = start(e, "--label", "サーバー", "--", "sleep", "30")
    long_cmd = start(e, "--label", "web", "--", "sh", "-c",
                     "sleep 30; echo " + "a" * 80)
    out = vigil_ok(e, "list").stdout
    lines = out.splitlines()
    header = lines[0]
    for title in ("ID", "LABEL", "STATE", "PID", "UPTIME", "RESTARTS", "CPU", "MEM", "COMMAND"):
        assert re.search(r"(^|  )%s( |$)" % title, header), (title, out)
    rows = {mid: [l for l in lines[1:] if l.startswith(mid)][0] for mid in (wide, long_cmd)}
    # Every row's cells start in the display column of their header.
    for mid, row in rows.items():
        assert column_of(row, "running") == column_of(header, "STATE"), out
    assert column_of(rows[wide], "サーバー") == column_of(header, "LABEL"), out
    # The command, cut to its bound with an ellipsis.
    assert column_of(rows[wide], "sleep 30") == column_of(header, "COMMAND"), out
    cell = rows[long_cmd][rows[long_cmd].index("sh -c"):]
    assert "\u2026" in cell and "a" * 80 not in cell, out
    # Uptime, CPU time and peak memory (monitor_status's resource_usage).
    m = re.match(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\S+)\s+"
                 r"(\d+(?:\.\d)?[KMG]?i?B)\s", rows[wide])
    assert m, rows[wide]
    assert re.match(r"^\d+(ms|\.\ds)$", m.group(5)), rows[wide]
    assert m.group(6) == "0", rows[wide]  # restarts
    assert re.match(r"^\d+(ms|\.\ds)$", m.group(7)), rows[wide]
    vigil_ok(e, "stop", wide, "--grace", "0")
    vigil_ok(e, "stop", long_cmd, "--grace", "0")


# --- what docker and pm2 users type ------------------------------------------

@socket_only
def test_ps_and_ls_list_and_an_unknown_command_names_the_nearest(e):
    mid = start(e, "--label", "web", "--", "sleep", "30")
    for alias in ("ps", "ls"):
        out = vigil_ok(e, alias).stdout
        assert out.splitlines()[0].startswith("ID ") and mid in out, (alias, out)
        assert vigil_ok(e, alias, "--help").stdout.startswith("usage: vigil list "), alias
    # One close command is named; two as close are both named.
    r = vigil(e, "lsit")
    assert r.returncode == 2 and 'did you mean "list"?' in r.stderr, r.stderr
    r = vigil(e, "stup")
    assert r.returncode == 2 and 'did you mean "stop" or "setup"?' in r.stderr, r.stderr
    vigil_ok(e, "stop", mid, "--grace", "0")


@socket_only
def test_tail_and_combined_short_flags(e):
    mid = start(e, "--", "sh", "-c", "for i in 1 2 3 4 5; do echo line$i; done")
    vigil_ok(e, "wait", mid)
    # output --tail N is -n N: the last N lines.
    out = vigil_ok(e, "output", mid, "--tail", "2").stdout
    assert [l.split()[-1] for l in out.splitlines()] == ["line4", "line5"], out
    r = vigil(e, "output", mid, "--tail", "2", "-n", "3")
    assert r.returncode == 2 and "--tail" in r.stderr, r.stderr
    # logs --tail N: the last N lines of the capture, as written.
    assert vigil_ok(e, "logs", mid, "--tail", "2").stdout == "line4\nline5\n"
    assert vigil_ok(e, "logs", mid, "--stdout", "--tail=1").stdout == "line5\n"
    # -fn 2: follow, after the last 2 lines (the monitor has ended, so it
    # prints them and says how it ended).
    r = vigil(e, "output", mid, "-fn", "2")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert [l.split()[-1] for l in r.stdout.splitlines()] == ["line4", "line5"], r.stdout
    assert "[exited with status 0]" in r.stderr, r.stderr
    # -fn2 too; a letter that is no short option of the command is refused.
    r = vigil(e, "output", mid, "-fn2")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 2, (r.stdout, r.stderr)
    r = vigil(e, "output", mid, "-fx")
    assert r.returncode == 2 and 'unknown option "-x"' in r.stderr, r.stderr


# --- every monitor's lines, interleaved ----------------------------------------

def gated(flag, first, then):
    """A shell script that prints first, waits for the file flag, prints then."""
    return ("echo %s; while [ ! -e %s ]; do sleep 0.05; done; echo %s; exec sleep 30"
            % (first, flag, then))


@socket_only
def test_logs_follow_interleaves_every_monitor_with_its_label(e):
    flag = os.path.join(e.dir, "go")
    api = start(e, "--label", "api", "--", "sh", "-c", gated(flag, "api-one", "api-two"))
    follow = spawn(e, "logs", "-f")
    try:
        r = Reader(follow)
        r.until(lambda b: b"api | api-one\n" in b, 60, "api's first line")
        # A monitor started after the follow began is followed too, and the
        # labels are padded to the longest one (display width: 2 a character).
        worker = start(e, "--label", "ワーカー", "--", "sh", "-c", "echo w-one; echo w-two; exec sleep 30")
        r.until(lambda b: b"w-two\n" in b, 60, "the worker's lines")
        open(flag, "w").close()
        r.until(lambda b: b"api-two\n" in b, 60, "api's second line")
        lines = r.buf.decode().splitlines()
        assert "ワーカー | w-one" in lines and "ワーカー | w-two" in lines, lines
        assert "api      | api-two" in lines, lines
        assert "\x1b" not in r.buf.decode(), r.buf   # plain: not a terminal
        # It ends on SIGINT.
        follow.send_signal(signal.SIGINT)
        assert follow.wait(30) != 0
    finally:
        finish(follow)
    # output --all -f is the same view; -n 1 keeps one line a monitor first.
    follow = spawn(e, "output", "--all", "-fn", "1")
    try:
        r = Reader(follow)
        r.until(lambda b: b"api-two\n" in b and b"w-two\n" in b, 60, "the last lines")
        assert b"api-one" not in r.buf and b"w-one" not in r.buf, r.buf
    finally:
        finish(follow)
    # And it ends when the engine goes.
    follow = spawn(e, "logs", "-f")
    try:
        Reader(follow).until(lambda b: b"w-two\n" in b, 60, "the worker's lines")
        e.stop()
        assert follow.wait(30) == 0, follow.stderr.read()
    finally:
        finish(follow)


@socket_only
def test_logs_follow_colours_each_label_on_a_terminal(e):
    mid = start(e, "--label", "web", "--", "sh", "-c", "echo hello; exec sleep 30")
    for env, coloured in ((client_env(), True), (client_env(NO_COLOR="1"), False)):
        master, slave = pty.openpty()
        p = subprocess.Popen([VIGIL, "--socket", e.socket_path, "logs", "-f"],
                             stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE,
                             env=env)
        os.close(slave)
        try:
            seen = read_until(master, b"hello", time.monotonic() + 60).decode()
            if coloured:
                assert re.search(r"\x1b\[[0-9;]*mweb \|\x1b\[0m hello", seen), repr(seen)
            else:
                assert "web | hello" in seen and "\x1b" not in seen, repr(seen)
        finally:
            p.send_signal(signal.SIGINT)
            p.wait(30)
            p.stderr.close()
            os.close(master)
    vigil_ok(e, "stop", mid, "--grace", "0")


if __name__ == "__main__":
    sys.exit(run_tests([
        test_list_aligns_a_cjk_label_and_shows_command_uptime_cpu_memory,
        test_ps_and_ls_list_and_an_unknown_command_names_the_nearest,
        test_tail_and_combined_short_flags,
        test_logs_follow_interleaves_every_monitor_with_its_label,
        test_logs_follow_colours_each_label_on_a_terminal,
    ]))
