"""vigild started by something other than a host: by a service manager
(socket activation, the LISTEN_FDS protocol systemd speaks,
core/daemon/activation.h), by a script or a person (--daemon, core/daemon/daemon.h:
back in the background, returning once it listens), and its log file
(--log-file, core/daemon/logfile.h).

Each test plays the service manager itself: it makes the listening socket,
passes it as descriptor 3 with LISTEN_FDS=1 and LISTEN_PID set to the pid
vigild will run as (a shell that execs vigild keeps its pid), and checks
what a systemd user would notice: the engine serves that socket without
being told where, its children never see the variables, the socket file is
left for the manager when the engine stops, and a malformed activation is
refused with the variable and its value.

Every wait is on an event with a generous bound (a process exiting, the
socket answering, a reply): the CI machine is a loaded 2-core box."""

import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (VIGILD, Connection, check_server_uid, default_config, lua_value,
                       run_plain_tests)

START_S = 60
EXIT_S = 60


def sanitizer_reports(text):
    return [line for line in text.splitlines()
            if "ERROR: AddressSanitizer" in line or "ERROR: LeakSanitizer" in line
            or "runtime error:" in line]


class Activated:
    """A vigild started the way systemd starts it: a listening socket made
    here at sock_path, handed over as descriptor 3."""

    def __init__(self, tmp, args=(), listen_fds="1", listen_pid="self", sock_path=None,
                 env_extra=None, config=None):
        self.tmp = tmp
        self.sock_path = sock_path or os.path.join(tmp, "run", "vigil.sock")
        os.makedirs(os.path.dirname(self.sock_path), mode=0o700, exist_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.sock_path)
        self.listener.listen(16)
        config_path = os.path.join(tmp, "config.lua")
        with open(config_path, "w") as f:
            f.write("return " + lua_value(config or default_config()) + "\n")
        self.log_path = os.path.join(tmp, "vigild.log")
        self.log_file = open(self.log_path, "wb")
        env = dict(os.environ)
        env["LISTEN_FDS"] = listen_fds
        env["LISTEN_FDNAMES"] = "vigild.socket"
        env.update(env_extra or {})
        fd = self.listener.fileno()
        # A launcher that puts the socket at descriptor 3 and execs vigild,
        # which keeps the launcher's pid: the one LISTEN_PID must name.
        launcher = ("import os, sys\n"
                    "fd = int(sys.argv[1])\n"
                    "if fd != 3:\n"
                    "    os.dup2(fd, 3)\n"
                    "    os.close(fd)\n"
                    "pid = sys.argv[2]\n"
                    "os.environ['LISTEN_PID'] = pid.replace('self', str(os.getpid()))\n"
                    "os.execv(sys.argv[3], sys.argv[3:])\n")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", launcher, str(fd), listen_pid, VIGILD, "--config", config_path,
             "--no-state"] + list(args),
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log_file,
            pass_fds=(fd,))
        # The manager keeps its own copy open, as systemd does.

    def connect(self):
        deadline = time.monotonic() + START_S
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("vigild exited %s: %s" % (self.proc.returncode, self.log()))
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(START_S)
            s.connect(self.sock_path)  # the backlog holds it until vigild accepts
            check_server_uid(s, self.sock_path)
            c = Connection(s.makefile("rb", buffering=0), s.makefile("wb", buffering=0), "socket")
            c.sock = s
            # The manager's listener and vigild's are one socket: the first
            # answer proves vigild took it, not that the connect got through.
            try:
                c.call("ping", timeout=START_S)
                return c
            except Exception:
                c.close()
                if time.monotonic() > deadline:
                    raise

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def wait_log(self, text, timeout=START_S):
        """Waits (bounded) until vigild's log holds text: the engine writes
        its log from a thread of its own, so a line may land a moment after
        what it tells of has happened."""
        deadline = time.monotonic() + timeout
        while text not in self.log():
            assert time.monotonic() < deadline, "%r not in the log:\n%s" % (text, self.log())
            time.sleep(0.02)
        return self.log()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        status = self.proc.wait(EXIT_S)
        self.listener.close()
        self.log_file.close()
        reports = sanitizer_reports(self.log())
        assert not reports, "\n".join(reports) + self.log()[-4000:]
        return status


def test_an_activated_socket_is_served_at_its_own_path(tmp):
    v = Activated(tmp)
    try:
        c = v.connect()
        assert c.call("ping") is not None
        v.wait_log("listening on %s (the socket handed over, fd 3)" % v.sock_path)
    finally:
        status = v.stop()
    assert status == 0, v.log()
    # The socket's file is the manager's: left for it to listen on again.
    assert os.path.exists(v.sock_path), "vigild removed the activated socket's file"


def test_children_do_not_inherit_the_activation_variables(tmp):
    # The config lets children inherit LISTEN_*: only vigild's own removal
    # of the variables keeps them from the child.
    cfg = default_config()
    cfg["monitor"]["env_inherit"] = cfg["monitor"]["env_inherit"] + ["LISTEN_*"]
    v = Activated(tmp, config=cfg)
    try:
        c = v.connect()
        r = c.call("monitor_start",
                   argv=["sh", "-c", 'echo "pid=${LISTEN_PID-unset} fds=${LISTEN_FDS-unset} '
                                     'names=${LISTEN_FDNAMES-unset}"'],
                   patterns=[])
        mid = r["monitor_id"]
        w = c.call("monitor_wait", monitor_id=mid, timeout_ms=30000)
        assert not w["timed_out"], w
        out = c.call("monitor_output", monitor_id=mid)
        lines = [l["text"] for l in out["lines"]]
        assert "pid=unset fds=unset names=unset" in lines, lines
    finally:
        v.stop()


def test_a_socket_given_with_listen_must_be_the_activated_one(tmp):
    # --listen naming another path: vigild does not serve the manager's
    # socket as if it were that path; it listens where it was told and
    # says why it did not take the one passed.
    other = os.path.join(tmp, "run", "other.sock")
    v = Activated(tmp, args=["--listen", other])
    try:
        deadline = time.monotonic() + START_S
        while not os.path.exists(other):
            assert v.proc.poll() is None, v.log()
            assert time.monotonic() < deadline, v.log()
            time.sleep(0.02)  # waiting for the socket file to appear at start-up only
        v.wait_log("is not one listening on %s" % other)
    finally:
        v.stop()
    assert not os.path.exists(other), "a socket vigild bound itself is removed at exit"


def test_more_than_one_socket_is_refused_naming_the_variable(tmp):
    v = Activated(tmp, listen_fds="2")
    status = v.proc.wait(EXIT_S)
    v.stop()
    assert status == 1, (status, v.log())
    assert 'LISTEN_FDS must be 1..1, got "2"' in v.log(), v.log()


def test_a_malformed_listen_pid_is_refused(tmp):
    v = Activated(tmp, listen_pid="12ab")
    status = v.proc.wait(EXIT_S)
    v.stop()
    assert status == 1, (status, v.log())
    assert 'LISTEN_PID must be a process id in plain decimal digits, got "12ab"' in v.log(), \
        v.log()


def test_numbers_are_plain_digits(tmp):
    # What a service manager writes is plain decimal digits: a sign, a
    # space or a leading zero means something else wrote the variable, so
    # it is refused naming the variable and its value, never read as 1.
    for fds in (" 1", "1 ", "+1", "01", "1\n", "0x1", ""):
        v = Activated(os.path.join(tmp, "fds%d" % len(os.listdir(tmp))), listen_fds=fds)
        status = v.proc.wait(EXIT_S)
        v.stop()
        assert status == 1, (fds, status, v.log())
        want = 'LISTEN_FDS must be a count in plain decimal digits, got "%s"' % fds.replace(
            "\n", "\\n")
        assert want in v.log(), (want, v.log())
    v = Activated(os.path.join(tmp, "zero"), listen_fds="0")
    assert v.proc.wait(EXIT_S) == 1, v.log()
    v.stop()
    assert 'LISTEN_FDS must be 1..1, got "0"' in v.log(), v.log()
    for pid in ("+self", " self", "0self", "0"):
        v = Activated(os.path.join(tmp, "pid%d" % len(os.listdir(tmp))), listen_pid=pid)
        status = v.proc.wait(EXIT_S)
        v.stop()
        assert status == 1, (pid, status, v.log())
        assert "LISTEN_PID must be a process id in plain decimal digits, got" in v.log(), v.log()


def test_variables_meant_for_another_process_are_ignored(tmp):
    # An inherited LISTEN_PID of some other process: vigild binds its own
    # socket where --listen says, and removes it at exit as usual.
    own = os.path.join(tmp, "own", "vigil.sock")
    v = Activated(tmp, args=["--listen", own], listen_pid="1")
    try:
        deadline = time.monotonic() + START_S
        while not os.path.exists(own):
            assert v.proc.poll() is None, v.log()
            assert time.monotonic() < deadline, v.log()
            time.sleep(0.02)  # waiting for the socket file to appear at start-up only
        assert "handed over" not in v.log(), v.log()
    finally:
        assert v.stop() == 0, v.log()
    assert not os.path.exists(own)


def test_the_log_file_takes_the_log_and_rotates_at_its_bound(tmp):
    config = os.path.join(tmp, "config.lua")
    with open(config, "w") as f:
        f.write("return " + lua_value(default_config()) + "\n")
    log_path = os.path.join(tmp, "logs", "vigild.log")
    os.makedirs(os.path.dirname(log_path))
    env = dict(os.environ)
    env.pop("VIGIL_LOG", None)
    p = subprocess.Popen([VIGILD, "--stdio", "--config", config, "--log-file", log_path,
                          "--log-max-bytes", "65536"],
                         env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    c = Connection(p.stdout, p.stdin, "stdio")
    try:
        assert c.call("ping") is not None
        assert os.stat(log_path).st_mode & 0o777 == 0o600
        # Enough engine activity to log past 64 KiB: each run's start is
        # logged with its label (here the longest, 128 bytes), about 280
        # bytes a run.
        for i in range(1000):
            c.call("process_run", argv=["true"], label="%03d" % i + "x" * 125, timeout_s=30)
            if os.path.exists(log_path + ".1"):
                break
        assert os.path.exists(log_path + ".1"), "no rotation after 1000 runs"
    finally:
        c.close()
        status = p.wait(EXIT_S)
    err = p.stderr.read().decode(errors="replace")
    assert status == 0, err
    assert err == "", "with --log-file nothing goes to stderr, got %r" % err[:500]
    with open(log_path) as f:
        current = f.read()
    with open(log_path + ".1") as f:
        old = f.read()
    assert "log rotated (#" in current and ".1" in current, current[:500]
    # Rotated at the bound, never past it: the line that would cross it
    # goes to the new file (before, the check ran after each batch of lines
    # written, so the file went past the bound by up to a batch).
    assert 65536 - 8192 < len(old.encode()) <= 65536, len(old)
    assert len(current.encode()) <= 65536, len(current)
    assert old.endswith("\n") and current.endswith("\n")
    assert not sanitizer_reports(old + current)


def test_a_burst_of_log_lines_is_rotated_at_the_bound_too(tmp):
    # Lines logged faster than the writer writes them are written in
    # batches (here a policy's vigil.log lines, up to a batch of a
    # log.buffer_bytes): the file is still rotated line by line.
    config = os.path.join(tmp, "config.lua")
    policies = os.path.join(tmp, "policies")
    os.makedirs(policies)
    with open(os.path.join(policies, "chatty.lua"), "w") as f:
        f.write("local envelope = require 'vigil.envelope'\n"
                "local text = 'chatty ' .. string.rep('words ', 150)\n"
                "return { format = function(n)\n"
                "  for i = 1, 500 do vigil.log('info', text) end\n"
                "  return envelope.body(n)\n"
                "end }\n")
    cfg = default_config(log={"policy_lines_per_call": 500, "policy_lines_per_s": 100000})
    cfg["plugin_paths"] = [policies]
    with open(config, "w") as f:
        f.write("return " + lua_value(cfg) + "\n")
    log_path = os.path.join(tmp, "vigild.log")
    p = subprocess.Popen([VIGILD, "--stdio", "--config", config, "--log-file", log_path,
                          "--log-max-bytes", "65536"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    c = Connection(p.stdout, p.stdin, "stdio")
    try:
        for i in range(5):
            mid = c.call("monitor_start", argv=["echo", "ERROR %d" % i], patterns=["ERROR"],
                         policy="chatty")["monitor_id"]
            c.wait_ending(mid, timeout=START_S)
    finally:
        c.close()
        status = p.wait(EXIT_S)
    assert status == 0, p.stderr.read().decode(errors="replace")
    sizes = [os.path.getsize(log_path), os.path.getsize(log_path + ".1")]
    assert all(n <= 65536 for n in sizes), sizes
    with open(log_path, errors="replace") as f:
        assert "log rotated (#" in f.read()


def log_file_refused(tmp, log_path, why):
    """Starts vigild with --log-file log_path, which it must refuse at
    start: exit status 1, the reason on stderr, nothing appended."""
    before = None
    if os.path.lexists(log_path) and os.path.isfile(log_path):
        with open(log_path, "rb") as f:
            before = f.read()
    p = subprocess.run([VIGILD, "--stdio", "--no-state", "--log-file", log_path],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=EXIT_S)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 1, (p.returncode, err)
    assert "--log-file: %s" % log_path in err and why in err, err
    if before is not None:
        with open(log_path, "rb") as f:
            assert f.read() == before, "the engine appended to %s" % log_path


def test_a_log_file_not_safe_to_append_to_is_refused(tmp):
    target = os.path.join(tmp, "target")
    with open(target, "w") as f:
        f.write("someone else's text\n")
    os.chmod(target, 0o600)
    link = os.path.join(tmp, "link.log")
    os.symlink(target, link)
    log_file_refused(tmp, link, "is a symbolic link")
    shared = os.path.join(tmp, "shared.log")
    with open(shared, "w") as f:
        f.write("old lines\n")
    os.chmod(shared, 0o666)
    log_file_refused(tmp, shared, "is writable by others (mode 0666)")
    os.chmod(shared, 0o620)
    log_file_refused(tmp, shared, "is writable by its group (mode 0620)")
    linked = os.path.join(tmp, "linked.log")
    os.link(target, linked)
    log_file_refused(tmp, linked, "has 2 hard links")
    fifo = os.path.join(tmp, "fifo.log")
    os.mkfifo(fifo, 0o600)
    log_file_refused(tmp, fifo, "is not a regular file")
    if os.geteuid() == 0:
        theirs = os.path.join(tmp, "theirs.log")
        with open(theirs, "w") as f:
            f.write("nobody's log\n")
        os.chmod(theirs, 0o600)
        os.chown(theirs, 65534, 65534)
        log_file_refused(tmp, theirs, "belongs to uid 65534")
    else:
        print("  (skipped the other uid's file: making one needs root)")
    # A file of ours, private, is appended to.
    ours = os.path.join(tmp, "ours.log")
    with open(ours, "w") as f:
        f.write("earlier run\n")
    os.chmod(ours, 0o644)
    config = os.path.join(tmp, "config.lua")
    with open(config, "w") as f:
        f.write("return " + lua_value(default_config()) + "\n")
    p = subprocess.run([VIGILD, "--stdio", "--no-state", "--config", config, "--log-file", ours],
                       input=b"", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=EXIT_S)
    assert p.returncode == 0, p.stderr.decode()
    with open(ours) as f:
        text = f.read()
    assert text.startswith("earlier run\n") and "stdin closed" in text, text


def test_a_log_file_bound_out_of_range_is_refused(tmp):
    p = subprocess.run([VIGILD, "--stdio", "--log-file", os.path.join(tmp, "x.log"),
                        "--log-max-bytes", "12"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=EXIT_S)
    err = p.stderr.decode()
    assert p.returncode == 2, (p.returncode, err)
    assert '--log-max-bytes must be 65536..1073741824, got "12"' in err, err
    assert not os.path.exists(os.path.join(tmp, "x.log"))


def wait_gone(pid, timeout):
    """Waits (bounded) until process pid no longer exists."""
    deadline = time.monotonic() + timeout
    while os.path.exists("/proc/%d" % pid):
        state = ""
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            break
        if state == "Z":
            break
        assert time.monotonic() < deadline, "pid %d still alive" % pid
        time.sleep(0.02)  # a process that is not our child: nothing to wait on


def test_daemon_returns_once_the_engine_listens(tmp):
    config = os.path.join(tmp, "config.lua")
    with open(config, "w") as f:
        f.write("return " + lua_value(default_config()) + "\n")
    sock = os.path.join(tmp, "run", "vigil.sock")
    p = subprocess.run([VIGILD, "--daemon", "--listen", sock, "--config", config, "--no-state"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=START_S)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, (p.returncode, out, err)
    log_path = os.path.join(tmp, "run", "vigild.log")
    assert out.startswith("vigild: listening on %s (pid " % sock), out
    assert out.rstrip().endswith("log: %s" % log_path), out
    pid = int(out.split("(pid ")[1].split(")")[0])
    try:
        # Listening already: the very next command connects, no retry.
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock)
        check_server_uid(s, sock)
        c = Connection(s.makefile("rb", buffering=0), s.makefile("wb", buffering=0), "socket")
        assert c.call("ping") is not None
        # In a session of its own, away from the terminal that started it.
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        assert int(fields[3]) == pid, "not a session leader: %s" % fields
        c.close()
    finally:
        os.kill(pid, signal.SIGTERM)
        wait_gone(pid, EXIT_S)
    assert os.stat(log_path).st_mode & 0o777 == 0o600
    with open(log_path) as f:
        log = f.read()
    assert "listening on %s" % sock in log and "SIGTERM" in log, log
    assert not sanitizer_reports(log), log


def test_daemon_says_why_the_engine_did_not_start(tmp):
    config = os.path.join(tmp, "config.lua")
    with open(config, "w") as f:
        f.write("return { monitor = { max_line_bytes = 12 } }\n")
    sock = os.path.join(tmp, "run", "vigil.sock")
    p = subprocess.run([VIGILD, "--daemon", "--listen", sock, "--config", config],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=START_S)
    err = p.stderr.decode()
    assert p.returncode == 1, (p.returncode, err)
    assert "the engine did not start (it exited); the end of its log" in err, err
    assert "max_line_bytes" in err, "the reason is not shown: %s" % err
    assert not os.path.exists(sock)


def test_daemon_writes_no_log_in_a_socket_directory_others_can_write(tmp):
    # The default log goes beside the socket: a directory vigild would
    # refuse to listen in gets no log file either, and the refusal is said
    # on the terminal, not in a file nobody reads.
    shared = os.path.join(tmp, "shared")
    os.makedirs(shared)
    os.chmod(shared, 0o777)
    sock = os.path.join(shared, "vigil.sock")
    p = subprocess.run([VIGILD, "--daemon", "--listen", sock, "--no-state"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=START_S)
    err = p.stderr.decode()
    assert p.returncode == 1, (p.returncode, err)
    assert "is writable by others" in err, err
    assert os.listdir(shared) == [], os.listdir(shared)


def test_daemon_never_shows_what_a_symlinked_log_points_at(tmp):
    # The parent shows the end of the log when the engine does not start;
    # a log path that is a link (another user's doing, in a shared place)
    # is refused by the engine, and the parent must not then print the
    # file the link points at.
    secret = os.path.join(tmp, "secret")
    with open(secret, "w") as f:
        f.write("TOP-SECRET-CONTENT\n")
    link = os.path.join(tmp, "vigild.log")
    os.symlink(secret, link)
    sock = os.path.join(tmp, "run", "vigil.sock")
    p = subprocess.run([VIGILD, "--daemon", "--listen", sock, "--log-file", link, "--no-state"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=START_S)
    err = p.stderr.decode()
    assert p.returncode == 1, (p.returncode, err)
    assert "is a symbolic link" in err, err
    assert "TOP-SECRET-CONTENT" not in err, err
    with open(secret) as f:
        assert f.read() == "TOP-SECRET-CONTENT\n"


def test_daemon_with_stdio_is_a_usage_error(tmp):
    p = subprocess.run([VIGILD, "--daemon", "--stdio"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=EXIT_S)
    assert p.returncode == 2, p
    assert "--daemon and --stdio cannot be combined" in p.stderr.decode()


TESTS = [
    test_daemon_returns_once_the_engine_listens,
    test_daemon_says_why_the_engine_did_not_start,
    test_daemon_writes_no_log_in_a_socket_directory_others_can_write,
    test_daemon_never_shows_what_a_symlinked_log_points_at,
    test_daemon_with_stdio_is_a_usage_error,
    test_an_activated_socket_is_served_at_its_own_path,
    test_children_do_not_inherit_the_activation_variables,
    test_a_socket_given_with_listen_must_be_the_activated_one,
    test_more_than_one_socket_is_refused_naming_the_variable,
    test_a_malformed_listen_pid_is_refused,
    test_numbers_are_plain_digits,
    test_variables_meant_for_another_process_are_ignored,
    test_the_log_file_takes_the_log_and_rotates_at_its_bound,
    test_a_burst_of_log_lines_is_rotated_at_the_bound_too,
    test_a_log_file_not_safe_to_append_to_is_refused,
    test_a_log_file_bound_out_of_range_is_refused,
]


if __name__ == "__main__":
    sys.exit(run_plain_tests(TESTS, "vigil-act-"))
