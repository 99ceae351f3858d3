"""The `vigil` client's exit statuses and words (issue 24, item 4), against
the real vigild: `wait` passes the monitor's ending on as `output -f` and
`run` do, `stop` of a monitor that already ended is no failure, and
`--wait-for` takes PCRE2 like `-e`. The helpers (running the client) are
test_cli.py's."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import run_tests, socket_only
from test_cli import start, vigil, vigil_ok


# --- wait passes the ending on ---------------------------------------------

@socket_only
def test_wait_exits_with_the_monitors_status(e):
    mid = start(e, "--", "sh", "-c", "echo bye; exit 4")
    r = vigil(e, "wait", mid, "--timeout", "1m", timeout=90)
    assert r.returncode == 4, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "%s exited (exit code 4)\n" % mid, r.stdout
    mid = start(e, "--", "sh", "-c", "kill -SEGV $$")
    r = vigil(e, "wait", mid, timeout=90)
    assert r.returncode == 128 + 11, (r.returncode, r.stdout, r.stderr)
    ok = start(e, "--", "true")
    r = vigil(e, "wait", ok, timeout=90)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    # Stopped by a request: 122, as output -f and run say it.
    slow = start(e, "--", "sleep", "30")
    vigil_ok(e, "stop", slow, "--grace", "0")
    r = vigil(e, "wait", slow, timeout=90)
    assert r.returncode == 122, (r.returncode, r.stdout, r.stderr)
    # A timeout keeps its own status, 1, and so does a match that cannot come.
    slow = start(e, "--", "sleep", "30")
    r = vigil(e, "wait", slow, "--timeout", "200ms", timeout=90)
    assert r.returncode == 1 and "timed out after 200ms" in r.stderr, (r.returncode, r.stderr)
    vigil_ok(e, "stop", slow, "--grace", "0")
    failed = start(e, "--", "sh", "-c", "exit 3")
    r = vigil(e, "wait", failed, "--for", "match", timeout=90)
    assert r.returncode == 1 and "without a match" in r.stderr, (r.returncode, r.stderr)
    # --json prints the answer and passes the status on too.
    r = vigil(e, "--json", "wait", mid, timeout=90)
    assert r.returncode == 128 + 11 and json.loads(r.stdout)["event"]["signal"] == "SIGSEGV", r


# --- stop of a monitor that already ended ------------------------------------

@socket_only
def test_stop_of_an_ended_monitor_is_no_failure(e):
    mid = start(e, "--", "sh", "-c", "exit 3")
    vigil(e, "wait", mid, timeout=90)
    r = vigil(e, "stop", mid)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "%s had already ended (exited with status 3): nothing to stop\n" % mid, r
    assert r.stderr == "", r.stderr
    r = vigil(e, "--json", "stop", mid)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    j = json.loads(r.stdout)
    assert j["monitor_id"] == mid and j["status"] == "already_exited", j
    assert j["state"] == "exited" and j["exit_code"] == 3, j
    # Stopping a stopped one stays fine, and an unknown one still fails.
    slow = start(e, "--", "sleep", "30")
    vigil_ok(e, "stop", slow, "--grace", "0")
    r = vigil_ok(e, "stop", slow)
    assert "already" in r.stdout, r.stdout
    r = vigil(e, "stop", "mon_doesnotexist0")
    assert r.returncode == 1, (r.returncode, r.stderr)


if __name__ == "__main__":
    sys.exit(run_tests([
        test_wait_exits_with_the_monitors_status,
        test_stop_of_an_ended_monitor_is_no_failure,
    ]))
