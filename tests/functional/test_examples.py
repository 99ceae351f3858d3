"""The examples, run against the real vigild: the Python gateway
(examples/gateway/gateway.py), the C host (examples/c-host/host.c) and the
demo (examples/demo/run_demo.py --quick). Each example is a program of its
own that a user runs; these tests run it the same way and read what it
prints."""

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import BUILD, VIGILD, Impostor, run_tests, socket_only, stdio_only, with_config

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIG = os.path.join(ROOT, "config", "vigil.lua")
BEGIN = re.compile(r"^<<<VIGIL OBSERVATION ([0-9a-f]{16,}) BEGIN>>>$", re.M)


def run(argv, timeout):
    """Runs an example; returns (exit status, stdout). Its stderr is kept
    in the failure message."""
    p = subprocess.run(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    run.last = "--- stdout ---\n%s\n--- stderr ---\n%s" % (out[-6000:], err[-3000:])
    return p.returncode, out


def check_envelopes(out):
    """Every envelope that begins ends, with the same nonce; returns how many."""
    nonces = BEGIN.findall(out)
    assert nonces, "no envelope in the output\n" + run.last
    for nonce in nonces:
        assert "<<<VIGIL OBSERVATION %s END>>>" % nonce in out, run.last
    assert out.count("stream_policy: untrusted_observation") == len(nonces), run.last
    return len(nonces)


@stdio_only
def test_gateway_example_injects_idle_and_resumes(e):
    rc, out = run([sys.executable, "examples/gateway/gateway.py", "--vigild", VIGILD,
                   "--config", CONFIG], timeout=60)
    assert rc == 0, run.last
    check_envelopes(out)
    # Part 1: the build's notifications were held during the turn and
    # injected after it, the last one being its exit.
    turn_end = out.index("=== agent turn ends (session_state idle)")
    assert re.search(r"held notification\(s\) released", out), run.last
    after = out[turn_end:out.index("### part 2")]
    assert ">>> inject seq=" in after and "type=exit" in after, run.last
    assert "(idle: held during the turn" in after, run.last
    # Part 2: the restarted gateway resumed and was sent what it missed.
    assert "resumed=True" in out, run.last
    assert "replayed after the restart" in out, run.last
    assert "migration 6/6 applied" in out and "gateway example done" in out, run.last


@stdio_only
def test_gateway_example_injects_live_safe_mid_turn(e):
    tmp = tempfile.mkdtemp(prefix="vigil-ex-")
    try:
        config = os.path.join(tmp, "live.lua")
        with open(config, "w") as f:
            f.write('return { monitor = { allowed_commands = { "python3" }, '
                    'live_mode_enabled = true } }\n')
        rc, out = run([sys.executable, "examples/gateway/gateway.py", "--vigild", VIGILD,
                       "--config", config, "--no-resume"], timeout=60)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert rc == 0, run.last
    check_envelopes(out)
    # The panic went in mid-turn, at a safe point, before the turn ended.
    live = out.find("mode=live_safe (live_safe: at the safe point after")
    assert 0 <= live < out.index("=== agent turn ends"), run.last
    assert "panic: runtime error" in out[live:], run.last


def c_host_binary():
    """build/examples/vigil-c-host when the build has it, else host.c
    compiled here against the build's libvigilclient.a (clients/c), the
    way the example's README builds it by hand."""
    built = os.path.join(BUILD, "examples", "vigil-c-host")
    if os.access(built, os.X_OK):
        return built
    tmp = tempfile.mkdtemp(prefix="vigil-c-host-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    out = os.path.join(tmp, "vigil-c-host")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "msgpack"], check=True,
                           stdout=subprocess.PIPE).stdout.decode().split()
    subprocess.run(["cc", "-std=c11", "-O2", "-o", out,
                    "-I", os.path.join(ROOT, "clients", "c", "include"),
                    os.path.join(ROOT, "examples", "c-host", "host.c"),
                    os.path.join(BUILD, "clients", "c", "libvigilclient.a")] + flags, check=True)
    return out


@socket_only
@with_config(monitor={"allowed_commands": ["sh", "/nonexistent/program"]})
def test_c_host_prints_notifications_and_exits_with_the_code(e):
    host = c_host_binary()
    rc, out = run([host, "-s", e.socket_path, "-l", "crasher", "-p", "^Error: ", "--",
                   "sh", "-c", "echo starting; echo 'Error: boom' >&2; echo 'at main.js:1' >&2; exit 7"],
                  timeout=30)
    assert rc == 7, run.last
    assert check_envelopes(out) == 2, run.last          # the match, then the exit
    assert "--- notification seq=1 type=output ---" in out, run.last
    assert "--- notification seq=2 type=exit ---" in out, run.last
    assert re.search(r"^\[stderr seq=\d\] Error: boom$", out, re.M), run.last
    assert "monitor: crasher" in out and "exited with code 7" in out, run.last
    # The engine's refusals become the shell's conventions.
    assert run([host, "-s", e.socket_path, "--", "python3", "-V"], 30)[0] == 126, run.last
    assert run([host, "-s", e.socket_path, "--", "/nonexistent/program"], 30)[0] == 127, run.last
    # A signal death is 128+N.
    rc, out = run([host, "-s", e.socket_path, "--", "sh", "-c", "kill -9 $$"], 30)
    assert rc == 137 and "SIGKILL" in out, run.last


@socket_only
def test_the_socket_clients_refuse_a_server_of_another_uid(e):
    if os.geteuid() != 0:
        print("  (skipped: needs root to serve as another uid)")
        return
    imp = Impostor()
    try:
        secret = "--token=s3cr3t-%d" % os.getpid()
        rc, out = run([c_host_binary(), "-s", imp.path, "--", "echo", secret], timeout=30)
        assert rc != 0, run.last
        assert "uid 65534" in run.last and "uid %d" % os.geteuid() in run.last, run.last
        # libvigilclient refuses with the vigil command's words: one check
        # (clients/c/link/endpoint.c) for every C client.
        assert "whoever owns that socket may be impersonating vigild" in run.last, run.last
        assert imp.received() == b"", "the C host sent %r to the impostor" % imp.received()
        sys.path.insert(0, os.path.join(ROOT, "examples", "gateway"))
        import gateway
        try:
            gateway.connect_unix(imp.path).close()
            raise AssertionError("the gateway accepted the impostor")
        except PermissionError as err:
            assert "uid 65534" in str(err) and "uid %d" % os.geteuid() in str(err), err
        assert imp.received() == b""
        gateway.connect_unix(e.socket_path).close()   # the real engine passes
    finally:
        imp.close()


@stdio_only
def test_demo_shows_crash_exit_and_held_notifications(e):
    rc, out = run([sys.executable, "examples/demo/run_demo.py", "--quick", "--vigild", VIGILD,
                   "--config", CONFIG], timeout=90)
    assert rc == 0, run.last
    check_envelopes(out)
    lines = out.splitlines()
    headers = [(i, l) for i, l in enumerate(lines) if l.startswith("--- notification seq=")]
    assert headers, run.last
    # Headers are in seq order from 1, each with a mode.
    seqs = [int(re.match(r"--- notification seq=(\d+) type=(\w+) mode=(idle|live_safe) ---$", l).group(1))
            for _, l in headers]
    assert seqs == list(range(1, len(seqs) + 1)), run.last
    # The crash line was matched by a crash pattern (pattern 0 is the
    # "Error: " one) and arrived as one incident with its trace, and the
    # server's exit followed, with a non-zero code.
    m = re.search(r"^incident \d+: crash \(pattern 0\)\n"
                  r"\[stderr seq=(\d+)\] Error: connect ECONNREFUSED.*\n"
                  r"\[stderr seq=\d+\]     at ", out, re.M)
    assert m, run.last
    assert any("type=exit" in l for _, l in headers), run.last
    assert re.search(r"^status: exited with code 1 after", out, re.M), run.last
    # The restarted server was stopped by the agent.
    assert any("type=stopped" in l for _, l in headers), run.last
    # Nothing was pushed while the session was busy; what was held came
    # right after it went idle, as many as session_state said it released.
    busy = next(i for i, l in enumerate(lines) if "(session_state busy)" in l)
    idle = next(i for i, l in enumerate(lines) if "(session_state idle)" in l)
    assert not [h for h in headers if busy < h[0] < idle], run.last
    released = int(re.search(r"releases (\d+) held", lines[idle]).group(1))
    assert released >= 1, run.last
    following = [l for i, l in headers if i > idle][:released]
    assert len(following) == released and all("type=output mode=idle" in l for l in following), run.last
    nxt = [i for i, l in enumerate(lines) if i > idle and l.startswith("[agent")][0]
    assert sum(1 for i, _ in headers if idle < i < nxt) >= released, run.last
    assert "pushed during the turn: 0" in out and "=== summary ===" in out, run.last


if __name__ == "__main__":
    sys.exit(run_tests([
        test_gateway_example_injects_idle_and_resumes,
        test_gateway_example_injects_live_safe_mid_turn,
        test_c_host_prints_notifications_and_exits_with_the_code,
        test_the_socket_clients_refuse_a_server_of_another_uid,
        test_demo_shows_crash_exit_and_held_notifications,
    ]))
