"""The `vigil` client's exit statuses and words (issue 24, item 4), against
the real vigild: `wait` passes the monitor's ending on as `output -f` and
`run` do, `stop` of a monitor that already ended is no failure, and
`--wait-for` takes PCRE2 like `-e`. The helpers (running the client) are
test_cli.py's."""

import json
import os
import pty
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import VIGIL, run_tests, socket_only
from test_cli import ID_RE, client_env, start, vigil, vigil_ok


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


# --- durations: the config's grammar ---------------------------------------

@socket_only
def test_durations_read_the_configs_grammar(e):
    done = start(e, "--", "true")
    vigil(e, "wait", done, timeout=90)
    # Days, as the config takes them; a bare number is still seconds.
    r = vigil(e, "wait", done, "--timeout", "1d", timeout=90)
    assert r.returncode == 0, (r.returncode, r.stderr)
    r = vigil(e, "wait", done, "--timeout", "1d12h", timeout=90)
    assert r.returncode == 0, (r.returncode, r.stderr)
    # Units out of order are refused, naming the option, the value and why.
    r = vigil(e, "wait", done, "--timeout", "30m1h")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert ('--timeout: "30m1h" is not a duration: the units must come largest first, each at '
            'most once ("1h30m")' in r.stderr), r.stderr
    r = vigil(e, "stop", done, "--grace", "5m5m")
    assert r.returncode == 2 and '--grace: "5m5m" is not a duration: ' in r.stderr, r.stderr
    r = vigil(e, "start", "--timeout", "1w", "--", "true")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert '--timeout: "1w" is not a duration: the units are ms, s, m, h and d' in r.stderr, r.stderr


# --- --wait-for: PCRE2, and a waiting line on a terminal --------------------

@socket_only
def test_wait_for_takes_pcre2_like_e(e):
    r = vigil_ok(e, "start", "--wait-for", r"(?i)listening on port \d+", "--",
                 "sh", "-c", "echo booting; echo 'Listening on PORT 8080'; exec sleep 30", timeout=60)
    mid = r.stdout.strip()
    assert ID_RE.match(mid), r.stdout
    # Not on a terminal: no waiting line, only the match (scripts read this).
    assert r.stderr == "vigil: %s is ready: Listening on PORT 8080\n" % mid, r.stderr
    vigil_ok(e, "stop", mid, "--grace", "0")
    # What PCRE2 refuses is a usage error naming the option, the value and why.
    r = vigil(e, "start", "--wait-for", "(?<x", "--", "true")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert '--wait-for: "(?<x" is not a regular expression (PCRE2): ' in r.stderr, r.stderr
    assert "at offset" in r.stderr, r.stderr


def read_until(fd, needle, deadline):
    buf = b""
    while needle not in buf:
        left = deadline - time.monotonic()
        assert left > 0, "no %r in %r" % (needle, buf)
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            assert chunk, "end of the terminal before %r in %r" % (needle, buf)
            buf += chunk
    return buf


@socket_only
def test_wait_for_shows_a_waiting_line_on_a_terminal(e):
    flag = os.path.join(e.dir, "go")
    script = ("echo booting; while [ ! -e %s ]; do sleep 0.05; done; "
              "echo 'ready on 8080'; exec sleep 30" % flag)
    master, slave = pty.openpty()
    p = subprocess.Popen([VIGIL, "--socket", e.socket_path, "start", "--wait-for", "ready on",
                          "--", "sh", "-c", script], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=slave, env=client_env())
    os.close(slave)
    try:
        deadline = time.monotonic() + 60
        seen = read_until(master, b"waiting for", deadline)
        # It names what it waits for while the monitor has not matched yet.
        line = seen.decode()
        assert 'waiting for mon_' in line and 'a line matching "ready on"' in line, line
        assert "(1m00s at most)" in line, line   # the default --wait-timeout
        open(flag, "w").close()
        seen += read_until(master, b"is ready: ready on 8080", deadline)
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0, p.returncode
        mid = out.decode().strip()
        assert ID_RE.match(mid), out
        # The waiting line is erased before the answer is written.
        text = seen.decode()
        assert "\r\x1b[K" in text and text.rstrip().endswith("vigil: %s is ready: ready on 8080" % mid), text
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
    vigil_ok(e, "stop", mid, "--grace", "0")


# --- help texts ---------------------------------------------------------------

def options_of(help_text):
    """The option names a --help lists, in every table."""
    return [w.split()[0] for w in help_text.splitlines()
            if w.startswith("      --") or w.startswith("  -")]


@socket_only
def test_mcp_help_says_its_true_session_and_no_json(e):
    r = vigil_ok(e, "mcp", "--help")
    text = r.stdout
    assert "--json" not in options_of(text), options_of(text)
    assert "--session" in options_of(text), options_of(text)
    about = text.split("Options:")[0]
    assert "$VIGIL_SESSION" in about, about
    # What the help says is what it does: $VIGIL_SESSION names the session.
    env = client_env(VIGIL_SESSION="from-env")
    p = subprocess.run([VIGIL, "--socket", e.socket_path, "mcp", "--no-spawn"], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert 'serving session "from-env"' in p.stderr, p.stderr
    # --json does not apply: a usage error, not silently ignored.
    r = vigil(e, "mcp", "--json")
    assert r.returncode == 2 and "--json does not apply to mcp" in r.stderr, (r.returncode, r.stderr)
    r = vigil(e, "--json", "mcp")
    assert r.returncode == 2 and "--json does not apply to mcp" in r.stderr, (r.returncode, r.stderr)
    # Other commands still list and take it.
    assert "--json" in options_of(vigil_ok(e, "list", "--help").stdout)


@socket_only
def test_watch_help_does_not_break_a_sentence(e):
    env = client_env(COLUMNS="80")
    text = vigil_ok(e, "watch", "--help", env=env).stdout
    about = text.split("\n\n")[1]
    lines = about.splitlines()
    # Filled as one paragraph: no line ends far short of the width unless it
    # is the last (the old text broke after "with" at 13 columns).
    for line in lines[:-1]:
        assert len(line) >= 60, (line, about)
    assert all(len(line) <= 80 for line in lines), about
    assert "--oneline, one line each" in " ".join(lines), about
    # And no command's paragraph breaks a sentence on a short line.
    for cmd in ("start", "list", "status", "output", "logs", "events", "wait", "stop",
                "restart", "run", "watch", "sessions", "hook", "setup", "mcp"):
        about = vigil_ok(e, cmd, "--help", env=env).stdout.split("\n\n")[1]
        for line in about.splitlines():
            assert len(line) >= 50 or line.rstrip().endswith((".", ":")), (cmd, line)


if __name__ == "__main__":
    sys.exit(run_tests([
        test_wait_exits_with_the_monitors_status,
        test_stop_of_an_ended_monitor_is_no_failure,
        test_durations_read_the_configs_grammar,
        test_wait_for_takes_pcre2_like_e,
        test_wait_for_shows_a_waiting_line_on_a_terminal,
        test_mcp_help_says_its_true_session_and_no_json,
        test_watch_help_does_not_break_a_sentence,
    ]))
