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


if __name__ == "__main__":
    sys.exit(run_tests([
        test_list_aligns_a_cjk_label_and_shows_command_uptime_cpu_memory,
    ]))
