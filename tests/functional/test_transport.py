"""The wire and the process around it (docs/protocol.md section 2): malformed
input closes only its own connection, the size limit, the uid check, a
connect flood (a connected client still answered at once, the refusals
logged once a window with their count), what SIGTERM and a closed stdin do,
and configuration errors."""

import re

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import msgpack

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (HELPERS, VIGILD, Engine, Impostor, check_server_uid, default_config,
                       expect_error, lua_value, run_tests, scratch_dir, socket_only, stdio_only)


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
    e.wait_log("msgpack")


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
def test_message_over_the_size_limit_is_answered_then_its_connection_closed(e):
    big = e.connect()
    other = e.connect()
    # A str32 header declaring 2 MiB, then its 2 MiB: skipped as it comes,
    # answered once it has ended; then, over a socket, that connection (and
    # only it) is closed, as docs/protocol.md section 2 says.
    size = 2 * 1024 * 1024
    head = b"\x94\x00\x01\xa4ping\x91\x81\xa1x\xdb" + size.to_bytes(4, "big")
    big.send_raw(head)
    for _ in range(size // 65536):
        big.send_raw(b"y" * 65536)
    err = expect_error("limit_exceeded", big.wait_response, 1)
    assert "rpc.max_message_bytes (1048576)" in err.message, err.message
    assert "%d bytes" % (len(head) + size) in err.message, err.message
    big.wait_closed()
    assert other.call("ping")["api_level"] == 1
    e.wait_log("over rpc.max_message_bytes")
    # A container whose declared count cannot fit: the same.
    third = e.connect()
    env = {"K%06d" % i: "v" * 64 for i in range(20000)}   # about 1.6 MiB of entries
    msgid = third.request("monitor_start", {"argv": ["echo"], "env": env})
    err = expect_error("limit_exceeded", third.wait_response, msgid, 60)
    assert "rpc.max_message_bytes (1048576)" in err.message, err.message
    third.wait_closed()
    assert other.call("session_list")["sessions"][0]["monitors"] == 0


@stdio_only
def test_an_oversized_stdin_is_answered_and_the_engine_lives_on(e):
    # Over --stdio a closed connection stops the engine and every monitor:
    # an over-long request must cost that request only.
    mid = e.call("monitor_start", command="sleep 60")["monitor_id"]
    c = e.main
    msgid = c.request("process_run", {"argv": ["cat"], "stdin": b"z" * (2 * 1024 * 1024)})
    err = expect_error("limit_exceeded", c.wait_response, msgid, 60)
    assert "rpc.max_message_bytes (1048576)" in err.message, err.message
    assert c.call("ping")["api_level"] == 1
    assert c.call("monitor_status", monitor_id=mid)["state"] == "running"
    assert e.proc.poll() is None
    # What fits still runs.
    r = c.call("process_run", argv=["cat"], stdin=b"fits" * 1000)
    assert r["stdout_summary"] == "fits" * 1000 and r["exit_code"] == 0
    c.call("monitor_stop", monitor_id=mid)


@stdio_only
def test_a_container_too_big_for_the_limit_is_skipped_and_answered(e):
    c = e.main
    env = {"K%04d" % i: "v" for i in range(400)}   # about 3 KiB of entries
    err = expect_error("limit_exceeded", c.call, "monitor_start", argv=["echo"], env=env)
    assert "rpc.max_message_bytes (1024)" in err.message, err.message
    # A notification call that is too big gets vigil.error; the connection stays.
    c.notify("monitor_start", argv=["echo"], env=env)
    deadline = time.monotonic() + 10
    while not c.errors and time.monotonic() < deadline:
        c.call("ping")
    assert c.errors and c.errors[0][0] == 4 and "limit_exceeded" in c.errors[0][1], c.errors
    assert c.call("ping")["api_level"] == 1
    assert c.call("session_list")["sessions"][0]["monitors"] == 0


test_a_container_too_big_for_the_limit_is_skipped_and_answered.config = \
    lambda: default_config(rpc={"max_message_bytes": 1024})


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
    e.wait_log("refused a connection from uid 65534")
    assert e.call("ping")["api_level"] == 1
    assert e.call("api_info")["counters"]["connections_refused"] == 1


@socket_only
def test_connections_are_bounded(e):
    second = e.connect()
    assert second.call("ping")["api_level"] == 1
    third = e.connect()
    third.wait_closed()
    e.wait_log("rpc.max_connections (2) reached")
    counters = e.call("api_info")["counters"]
    assert counters["connections_over_limit"] == 1 and counters["connections"] == 2
    second.close()
    # A freed place is available again: wait until the engine saw it go.
    deadline = time.monotonic() + 10
    while e.call("api_info")["counters"]["connections"] != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert e.connect().call("ping")["api_level"] == 1


test_connections_are_bounded.config = lambda: default_config(rpc={"max_connections": 2})


# A ping on a connection made before the flood answers within this, while
# 16 processes connect and close as fast as they can (before accepting was
# fair, the worst took 14 s on the 2-core CI machine, one in 112 s with 32
# processes; now tens of ms).
FLOOD_PING_BOUND_S = 2.0


@socket_only
def test_a_connect_flood_does_not_starve_a_connected_client(e):
    stop = os.path.join(e.dir, "stop-flood")
    flood = subprocess.Popen([os.path.join(HELPERS, "child_connect_flood"), e.socket_path, "16",
                              "64", stop], stdout=subprocess.PIPE)
    worst = 0.0
    try:
        # The flood is on once the engine has refused a good many.
        deadline = time.monotonic() + 60
        while e.main.call("api_info", timeout=60)["counters"]["connections_over_limit"] < 2000:
            assert time.monotonic() < deadline, "the flood never got going"
        for _ in range(200):
            start = time.monotonic()
            e.main.call("ping", timeout=120)
            worst = max(worst, time.monotonic() - start)
    finally:
        open(stop, "w").close()
        out = flood.communicate(timeout=120)[0].decode()
    assert flood.returncode == 0 and out.startswith("connections "), out
    assert worst < FLOOD_PING_BOUND_S, "a ping took %.1f s during the flood" % worst
    # Every refusal is counted in the log: the first line of a window in
    # full, then "refused N more ..." once a window (10 s). The last count
    # comes when its window ends (and the flood's last connects may still
    # be arriving).
    deadline = time.monotonic() + 60
    while True:
        refused = e.call("api_info")["counters"]["connections_over_limit"]
        log = e.log()
        firsts = log.count("refused a connection from")
        more = [int(n) for n in re.findall(
            r"refused (\d+) more connections in the last \d+ s: rpc.max_connections \(8\) "
            r"reached", log)]
        if firsts + sum(more) == refused or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # the window's timer tells nobody but the log
    assert firsts + sum(more) == refused, (firsts, more, refused)
    assert firsts <= 3 and len(more) <= 6, (firsts, more)
    assert "rpc.max_connections reached" not in log, "a refused connection's close was logged"
    assert e.call("ping")["api_level"] >= 1


test_a_connect_flood_does_not_starve_a_connected_client.config = \
    lambda: default_config(rpc={"max_connections": 8})


@socket_only
def test_socket_directory_and_file_permissions(e):
    assert os.stat(os.path.dirname(e.socket_path)).st_mode & 0o777 == 0o700
    assert os.stat(e.socket_path).st_mode & 0o777 == 0o600


def listen_in(sock_path, cwd=None, env=None, timeout=20):
    """Runs vigild --listen sock_path. A refused start returns (status, log);
    one that listens is stopped (SIGTERM) once its socket answers, and returns
    (None, log)."""
    args = [VIGILD, "--listen", sock_path] if sock_path else [VIGILD, "--listen"]
    p = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    path = sock_path if sock_path is None or os.path.isabs(sock_path) else os.path.join(cwd, sock_path)
    if path is None:
        path = os.path.join(env["XDG_RUNTIME_DIR"], "vigil", "vigil.sock")
    while p.poll() is None and time.monotonic() < deadline:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            s.close()
            p.terminate()
            break
        except OSError:
            s.close()
        time.sleep(0.01)  # polling the socket's appearance at start-up only
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        raise
    listened = p.returncode == 0 or p.returncode == -signal.SIGTERM
    return (None if listened else p.returncode), err.decode(errors="replace")


def private_tmp():
    d = tempfile.mkdtemp(prefix="vigil-dir-")
    return d


@socket_only
def test_a_socket_directory_of_another_uid_is_refused(e):
    if os.geteuid() != 0:
        print("  (skipped: needs root to make a directory of another uid)")
        return
    # The default directory, squatted before vigild first ran: 0700 and
    # owned by someone else ($XDG_RUNTIME_DIR points the default into a
    # private place, so the test never touches the real /tmp/vigil-$EUID).
    xdg = private_tmp()
    try:
        squat = os.path.join(xdg, "vigil")
        os.mkdir(squat, 0o700)
        os.chown(squat, 65534, 65534)
        env = dict(os.environ, XDG_RUNTIME_DIR=xdg)
        status, log = listen_in(None, env=env)
        assert status == 1, "vigild listened in a directory of uid 65534:\n" + log
        assert squat in log and "uid 65534" in log and "0700" in log, log
        assert "uid %d" % os.geteuid() in log, log
        st = os.lstat(squat)
        assert st.st_uid == 65534 and st.st_mode & 0o7777 == 0o700
        assert not os.path.exists(os.path.join(squat, "vigil.sock"))
    finally:
        shutil.rmtree(xdg, ignore_errors=True)


@socket_only
def test_a_socket_directory_writable_by_others_is_refused_and_left_as_it_is(e):
    base = private_tmp()
    try:
        for mode in (0o777, 0o770, 0o1777):
            d = os.path.join(base, "open-%o" % mode)
            os.mkdir(d)
            os.chmod(d, mode)
            status, log = listen_in(os.path.join(d, "vigil.sock"))
            assert status == 1, "vigild listened in a %o directory:\n%s" % (mode, log)
            assert d in log and ("%04o" % mode) in log and "writable" in log, log
            assert os.stat(d).st_mode & 0o7777 == mode, "vigild changed the mode of %s" % d
            assert not os.path.exists(os.path.join(d, "vigil.sock"))
        # A symbolic link to a private directory is not the directory itself.
        real = os.path.join(base, "real")
        os.mkdir(real, 0o700)
        link = os.path.join(base, "link")
        os.symlink(real, link)
        status, log = listen_in(os.path.join(link, "vigil.sock"))
        assert status == 1 and "symbolic link" in log, log
        assert os.listdir(real) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


@socket_only
def test_a_shared_sticky_directory_such_as_tmp_is_refused(e):
    name = "/tmp/vigil-test-%d-%d.sock" % (os.getpid(), time.monotonic_ns())
    try:
        status, log = listen_in(name)
        assert status == 1, "vigild listened in /tmp:\n" + log
        assert "/tmp" in log and "private directory" in log, log
    finally:
        if os.path.lexists(name):
            os.unlink(name)


@socket_only
def test_listen_in_a_project_directory_leaves_its_mode_alone(e):
    project = private_tmp()
    try:
        os.chmod(project, 0o755)
        status, log = listen_in("./v.sock", cwd=project)
        assert status is None, "vigild refused %s:\n%s" % (project, log)
        assert os.stat(project).st_mode & 0o7777 == 0o755, oct(os.stat(project).st_mode)
        # A directory vigild makes itself is private whatever the umask.
        old = os.umask(0)
        try:
            status, log = listen_in(os.path.join(project, "made", "v.sock"))
        finally:
            os.umask(old)
        assert status is None, log
        assert os.stat(os.path.join(project, "made")).st_mode & 0o7777 == 0o700
    finally:
        shutil.rmtree(project, ignore_errors=True)


@socket_only
def test_the_test_client_refuses_a_server_of_another_uid(e):
    if os.geteuid() != 0:
        print("  (skipped: needs root to serve as another uid)")
        return
    imp = Impostor()
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(imp.path)
        try:
            check_server_uid(s, imp.path)
            raise AssertionError("the impostor was accepted")
        except ConnectionRefusedError as err:
            assert "uid 65534" in str(err) and "uid %d" % os.geteuid() in str(err), err
        assert imp.received() == b""
        # The engine itself (our uid) passes the same check.
        s = socket.socket(socket.AF_UNIX)
        s.connect(e.socket_path)
        check_server_uid(s, e.socket_path)
        s.close()
    finally:
        imp.close()


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
    d = scratch_dir("vigil-cfg-")
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
    d = scratch_dir("vigil-cfg-")
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
        test_message_over_the_size_limit_is_answered_then_its_connection_closed,
        test_an_oversized_stdin_is_answered_and_the_engine_lives_on,
        test_a_container_too_big_for_the_limit_is_skipped_and_answered,
        test_peer_of_another_uid_is_refused,
        test_connections_are_bounded,
        test_a_connect_flood_does_not_starve_a_connected_client,
        test_socket_directory_and_file_permissions,
        test_a_socket_directory_of_another_uid_is_refused,
        test_a_socket_directory_writable_by_others_is_refused_and_left_as_it_is,
        test_a_shared_sticky_directory_such_as_tmp_is_refused,
        test_listen_in_a_project_directory_leaves_its_mode_alone,
        test_the_test_client_refuses_a_server_of_another_uid,
        test_sigterm_stops_every_monitor_and_leaves_nothing,
        test_stdin_eof_stops_every_monitor_and_exits,
        test_config_errors_name_field_bound_and_value,
        test_no_config_fails_closed,
        test_config_monitors_start_at_boot_in_their_session,
        test_a_config_monitor_that_is_refused_stops_the_start,
    ]))
