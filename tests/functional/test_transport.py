"""The wire and the process around it (PROTOCOL.md section 1): malformed
input closes only its own connection, the size limit, the uid check, what
SIGTERM and a closed stdin do, and configuration errors."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import msgpack

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (VIGILD, Engine, default_config, expect_error, lua_value, run_tests,
                       socket_only, stdio_only)


def pids_in_group(pgid):
    """Live (not zombie) processes of a process group."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry))
    return found


@socket_only
def test_malformed_msgpack_closes_only_its_connection(e):
    bad = e.connect()
    good = e.connect()
    bad.send_raw(b"\xc1\xc1\xc1 this is not msgpack")
    bad.wait_closed()
    assert good.call("ping")["api_level"] == 1
    assert "not msgpack" in e.log() or "msgpack" in e.log()


@stdio_only
def test_wrong_shape_gets_an_error_and_the_connection_stays(e):
    c = e.main
    c.send_raw(msgpack.packb([0, 77, "ping", [1, 2]]))
    try:
        c.wait_response(77)
        raise AssertionError("expected an error")
    except Exception as err:
        assert "invalid_params" in str(err)
    c.send_raw(msgpack.packb({"not": "an array"}))
    deadline = time.monotonic() + 10
    while not c.errors and time.monotonic() < deadline:
        c.call("ping")
    assert c.errors and c.errors[0][0] == 1
    # A notification call of an unknown method: vigil.error, connection open.
    c.notify("nvim_set_client_info", name="pynvim")
    deadline = time.monotonic() + 10
    while len(c.errors) < 2 and time.monotonic() < deadline:
        c.call("ping")
    assert c.errors[1][0] == 10
    assert c.call("ping")["api_level"] == 1


@socket_only
def test_message_over_the_size_limit_closes_the_connection(e):
    big = e.connect()
    other = e.connect()
    # A str32 header declaring 2 MiB: refused from the header, before the body.
    big.send_raw(msgpack.packb([0, 1, "ping", [{"x": "y"}]])[:0] +
                 b"\x94\x00\x01\xa4ping\x91\x81\xa1x\xdb" + (2 * 1024 * 1024).to_bytes(4, "big"))
    big.wait_closed()
    assert other.call("ping")["api_level"] == 1


@socket_only
def test_peer_of_another_uid_is_refused(e):
    if os.geteuid() != 0:
        print("  (skipped: needs root to connect as another uid)")
        return
    # Let the kernel allow the connection, so the engine's own check is what refuses it.
    os.chmod(e.dir, 0o755)
    os.chmod(os.path.dirname(e.socket_path), 0o755)
    os.chmod(e.socket_path, 0o666)
    child = os.fork()
    if child == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX)
            s.connect(e.socket_path)
            try:
                s.sendall(msgpack.packb([0, 1, "ping", []]))
                s.settimeout(10)
                data = s.recv(100)
            except (BrokenPipeError, ConnectionResetError):
                data = b""  # closed on us before or while we wrote: refused
            os._exit(0 if data == b"" else 1)
        except Exception as err:
            sys.stderr.write("child: %r\n" % err)
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.WEXITSTATUS(status) == 0, "the other uid got an answer (%d)" % os.WEXITSTATUS(status)
    assert "refused a connection from uid 65534" in e.log()
    assert e.call("ping")["api_level"] == 1
    assert e.call("api_info")["counters"]["connections_refused"] == 1


@socket_only
def test_connections_are_bounded(e):
    second = e.connect()
    assert second.call("ping")["api_level"] == 1
    third = e.connect()
    third.wait_closed()
    assert "rpc.max_connections (2) reached" in e.log()
    counters = e.call("api_info")["counters"]
    assert counters["connections_over_limit"] == 1 and counters["connections"] == 2
    second.close()
    # A freed place is available again: wait until the engine saw it go.
    deadline = time.monotonic() + 10
    while e.call("api_info")["counters"]["connections"] != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert e.connect().call("ping")["api_level"] == 1


test_connections_are_bounded.config = lambda: default_config(rpc={"max_connections": 2})


@socket_only
def test_socket_directory_and_file_permissions(e):
    assert os.stat(os.path.dirname(e.socket_path)).st_mode & 0o777 == 0o700
    assert os.stat(e.socket_path).st_mode & 0o777 == 0o600


@socket_only
def test_sigterm_stops_every_monitor_and_leaves_nothing(e):
    pgids = []
    for i in range(3):
        r = e.call("monitor_start", argv=["sh", "-c", "trap '' TERM; sleep 60 & sleep 60; wait"])
        pgids.append(r["pid"])
    assert all(pids_in_group(p) for p in pgids)
    assert e.stop(signal.SIGTERM) == 0
    for p in pgids:
        assert pids_in_group(p) == [], "process group %d survived" % p


@stdio_only
def test_stdin_eof_stops_every_monitor_and_exits(e):
    r = e.call("monitor_start", command="sleep 60")
    pgid = r["pid"]
    e.main.wfile.close()
    assert e.proc.wait(20) == 0
    assert pids_in_group(pgid) == []


def check_config(text):
    d = tempfile.mkdtemp(prefix="vigil-cfg-")
    path = os.path.join(d, "c.lua")
    with open(path, "w") as f:
        f.write(text)
    p = subprocess.run([VIGILD, "--check-config", path], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr, path


@stdio_only
def test_config_errors_name_field_bound_and_value(e):
    rc, out, path = check_config("return { monitor = { max_monitors_per_session = 40 } }")
    assert rc == 1 and "monitor.max_monitors_per_session must be 1..16, got 40" in out, out
    assert path in out
    rc, out, _ = check_config("return { monitor = { colour = 1 } }")
    assert rc == 1 and "colour" in out, out
    rc, out, path = check_config("return {\n monitor = {\n")
    assert rc == 1 and path + ":" in out, out
    rc, out, _ = check_config("return { rate_limit = { overload_ms = 2000, window_ms = 10000 } }")
    assert rc == 1 and "overload_ms" in out, out
    rc, out, _ = check_config("return {}")
    assert rc == 0 and "ok" in out, out
    # A bad config stops the start.
    rc, out, path = check_config("return { monitor = { line_max_bytes = 12 } }")
    assert rc == 1 and "monitor.line_max_bytes must be 256..1048576, got 12" in out, out
    p = subprocess.run([VIGILD, "--stdio", "--config", path], input=b"", capture_output=True)
    assert p.returncode != 0 and path.encode() in p.stderr


def _boot_config():
    cfg = default_config()
    cfg["monitors"] = [
        {"session": "boot", "label": "booted", "command": "sh -c 'echo hello from boot; echo Error: early >&2'",
         "patterns": ["^Error:"], "notify": "matches"},
    ]
    return cfg


def test_config_monitors_start_at_boot_in_their_session(e):
    # The notifications were made before anyone attached: they waited.
    r = e.call("session_open", session="boot")
    assert r["resumed"] is True
    out = e.main.wait_notification(lambda n: n["type"] == "output")
    end = e.main.wait_notification(lambda n: n["type"] == "exit")
    assert out["session"] == "boot" and out["label"] == "booted"
    assert [l["text"] for l in out["lines"]] == ["Error: early"]
    assert end["seq"] > out["seq"]
    listed = e.call("monitor_list", include_exited=True)
    assert listed["total"] == 1 and listed["monitors"][0]["label"] == "booted"


test_config_monitors_start_at_boot_in_their_session.config = _boot_config


@stdio_only
def test_a_config_monitor_that_is_refused_stops_the_start(e):
    d = tempfile.mkdtemp(prefix="vigil-cfg-")
    path = os.path.join(d, "c.lua")
    cfg = default_config()
    cfg["monitors"] = [{"session": "boot", "command": "rm -rf /nothing"}]
    with open(path, "w") as f:
        f.write("return " + lua_value(cfg) + "\n")
    p = subprocess.run([VIGILD, "--stdio", "--config", path], input=b"", capture_output=True,
                       timeout=20)
    assert p.returncode == 1, p
    assert b"monitors[1]" in p.stderr and b"denied" in p.stderr, p.stderr


def test_no_config_fails_closed(e):
    e2 = Engine(e.transport, config=False)
    try:
        err = expect_error("denied", e2.call, "monitor_start", command="echo hi")
        assert "empty" in err.message
    finally:
        e2.close()


if __name__ == "__main__":
    sys.exit(run_tests([
        test_malformed_msgpack_closes_only_its_connection,
        test_wrong_shape_gets_an_error_and_the_connection_stays,
        test_message_over_the_size_limit_closes_the_connection,
        test_peer_of_another_uid_is_refused,
        test_connections_are_bounded,
        test_socket_directory_and_file_permissions,
        test_sigterm_stops_every_monitor_and_leaves_nothing,
        test_stdin_eof_stops_every_monitor_and_exits,
        test_config_errors_name_field_bound_and_value,
        test_no_config_fails_closed,
        test_config_monitors_start_at_boot_in_their_session,
        test_a_config_monitor_that_is_refused_stops_the_start,
    ]))
