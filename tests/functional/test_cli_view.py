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
from test_cli import Reader, client_env, finish, start, vigil, vigil_ok


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
    for title in ("ID", "LABEL", "STATE", "PID", "UPTIME", "CPU", "MEM", "COMMAND"):
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
    m = re.match(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\d+(?:\.\d)?[KMG]?i?B)\s",
                 rows[wide])
    assert m, rows[wide]
    assert re.match(r"^\d+(ms|\.\ds)$", m.group(5)), rows[wide]
    assert re.match(r"^\d+(ms|\.\ds)$", m.group(6)), rows[wide]
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


if __name__ == "__main__":
    sys.exit(run_tests([
        test_list_aligns_a_cjk_label_and_shows_command_uptime_cpu_memory,
        test_ps_and_ls_list_and_an_unknown_command_names_the_nearest,
        test_tail_and_combined_short_flags,
    ]))
