"""Functional test harness: the real vigild, driven over the wire.

Each test gets an Engine: vigild started with a config written for the test,
reached over --stdio (a child whose stdin/stdout are the connection) or over a
Unix socket in a private directory (any number of connections). A reader
thread decodes the msgpack-rpc stream, matches responses to requests by msgid
and queues notifications; tests wait on those with a deadline (an event they
can await, never a sleep).

Tests are plain functions taking (engine); `run_tests` runs each over both
transports unless marked @socket_only or @stdio_only, and prints
"N passed, N failed".
"""

import atexit
import msgpack
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

BUILD = os.environ.get("VIGIL_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
VIGILD = os.path.join(BUILD, "vigild")
VIGIL = os.path.join(BUILD, "vigil")
HELPERS = os.environ.get("VIGIL_TEST_HELPERS", os.path.join(BUILD, "tests"))

ERROR_CODES = {
    "internal": 0, "invalid_params": 1, "not_found": 2, "denied": 3, "limit_exceeded": 4,
    "invalid_pattern": 5, "command_not_found": 6, "spawn_failed": 7, "already_exited": 8,
    "disabled": 9, "unknown_method": 10,
}


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__("[%d] %s" % (code, message))
        self.code = code
        self.message = message


def lua_value(v):
    """A Python value as Lua source."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(lua_value(x) for x in v) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join("%s = %s" % (k, lua_value(x)) for k, x in v.items()) + "}"
    raise TypeError(v)


def default_config(**overrides):
    """A config allowing the programs tests run, with small test-friendly limits."""
    cfg = {
        "monitor": {
            "allowed_commands": ["sh", "/bin/sh", "echo", "cat", "sleep", "printf", "true",
                                 "false", "seq", "head", "yes",
                                 os.path.join(HELPERS, "child_tick")],
            "allow_shell": True,
            "kill_grace_ms": 500,
            "exit_drain_ms": 300,
            "max_monitors_per_session": 16,
            # What children inherit of vigild's environment: the engine's
            # default list, plus the run's tag (the no_orphans check finds
            # leftovers by it) and the sanitizers' options.
            "env_inherit": ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_*", "TERM", "TZ",
                            "TMPDIR", "VIGIL_TEST_RUN", "ASAN_OPTIONS", "UBSAN_OPTIONS",
                            "LSAN_OPTIONS"],
        },
    }
    for group, values in overrides.items():
        if isinstance(values, dict):
            cfg.setdefault(group, {}).update(values)
        else:
            cfg[group] = values
    return cfg


class Connection:
    """One msgpack-rpc connection (a pair of binary streams)."""

    def __init__(self, rfile, wfile, name):
        self.rfile, self.wfile, self.name = rfile, wfile, name
        self.lock = threading.Condition()
        self.responses = {}
        self.notifications = []
        self.errors = []          # vigil.error notifications
        self.closed = False
        self.next_id = 1
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
        try:
            while True:
                data = self.rfile.read1(65536) if hasattr(self.rfile, "read1") else self.rfile.read(65536)
                if not data:
                    break
                unpacker.feed(data)
                for msg in unpacker:
                    with self.lock:
                        if msg[0] == 1:
                            self.responses[msg[1]] = (msg[2], msg[3])
                        elif msg[0] == 2 and msg[1] == "vigil.notification":
                            self.notifications.append(msg[2][0])
                        elif msg[0] == 2 and msg[1] == "vigil.error":
                            self.errors.append(msg[2])
                        self.lock.notify_all()
        except (OSError, ValueError):
            pass
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def send_raw(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def request(self, method, args=None, session=None):
        """Sends a request; returns its msgid (answer with wait_response)."""
        with self.lock:
            msgid = self.next_id
            self.next_id += 1
        params = [] if args is None and session is None else [dict(args or {})]
        if session is not None:
            params[0]["session"] = session
        self.send_raw(msgpack.packb([0, msgid, method, params], use_bin_type=True))
        return msgid

    def wait_response(self, msgid, timeout=30):
        deadline = time.monotonic() + timeout
        with self.lock:
            while msgid not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise TimeoutError("%s: no response to msgid %d" % (self.name, msgid))
                self.lock.wait(left)
            err, result = self.responses.pop(msgid)
        if err is not None:
            raise RpcError(err[0], err[1])
        return result

    def call(self, method, timeout=30, session=None, **args):
        return self.wait_response(self.request(method, args, session), timeout)

    def notify(self, method, **args):
        self.send_raw(msgpack.packb([2, method, [args] if args else []], use_bin_type=True))

    def wait_notification(self, pred, timeout=30, what="a notification"):
        """The first queued notification matching pred (removed from the queue)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for i, n in enumerate(self.notifications):
                    if pred(n):
                        return self.notifications.pop(i)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("%s: timed out waiting for %s; have %r" % (
                        self.name, what, [(n["type"], n.get("monitor_id"), n["seq"]) for n in self.notifications]))
                self.lock.wait(left)

    def wait_ending(self, monitor_id, timeout=30):
        return self.wait_notification(
            lambda n: n["monitor_id"] == monitor_id and n["type"] in
            ("exit", "stopped", "timed_out", "idle_timeout", "overload"),
            timeout, "the ending of %s" % monitor_id)

    def drain(self):
        with self.lock:
            out, self.notifications = self.notifications, []
        return out

    def wait_closed(self, timeout=10):
        deadline = time.monotonic() + timeout
        with self.lock:
            while not self.closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("%s: still open" % self.name)
                self.lock.wait(left)

    def close(self):
        sock = getattr(self, "sock", None)
        if sock is not None:
            # shutdown, not only close: the reader thread blocked in recv holds
            # the socket open, so a close alone would send no FIN.
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for f in (self.wfile, self.rfile, sock):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass


class Engine:
    """A vigild under test."""

    def __init__(self, transport, config=None, extra_args=(), cwd=None, env=None):
        self.transport = transport
        self.dir = tempfile.mkdtemp(prefix="vigil-ft-")
        self.config_path = None
        if config is not False:
            self.config_path = os.path.join(self.dir, "config.lua")
            with open(self.config_path, "w") as f:
                f.write("return " + lua_value(config if config is not None else default_config()) + "\n")
        args = [VIGILD]
        if self.config_path:
            args += ["--config", self.config_path]
        elif "--config" not in extra_args:
            # No config at all: without this vigild would look one up
            # (the user's, the bundled one).
            args.append("--no-config")
        self.stderr_path = os.path.join(self.dir, "vigild.log")
        self.stderr = open(self.stderr_path, "wb")
        self.socket_path = os.path.join(self.dir, "run", "vigil.sock")
        self.conns = []
        if transport == "stdio":
            args.append("--stdio")
            # The tests read the engine's whole log; embedded (--stdio) it
            # logs only warnings unless VIGIL_LOG asks for more.
            env = dict(env or os.environ, VIGIL_LOG=os.environ.get("VIGIL_LOG") or "info")
            self.proc = subprocess.Popen(args + list(extra_args), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.stderr, cwd=cwd,
                                         env=env)
            self.main = Connection(self.proc.stdout, self.proc.stdin, "stdio")
            self.conns.append(self.main)
            # A first answer means the config has been read: a test may now
            # rewrite the file (for reloads) without racing the start-up.
            self.main.call("ping")
        else:
            args += ["--listen", self.socket_path]
            self.proc = subprocess.Popen(args + list(extra_args), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=self.stderr, cwd=cwd,
                                         env=env)
            self.main = self._connect_when_listening()

    def _connect_when_listening(self, timeout=10):
        """The first connection, made as soon as vigild listens. It is the
        connection the test uses, not a probe closed again: a probe would
        count against rpc.max_connections until the engine has seen it go,
        which on a loaded machine can be after the test's next connect."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("vigild exited: %s" % self.log())
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(self.socket_path)
                return self._wrap(s)
            except OSError:
                s.close()
            time.sleep(0.01)  # polling the socket's appearance at start-up only
        raise TimeoutError("vigild never listened on %s" % self.socket_path)

    def _wrap(self, s):
        check_server_uid(s, self.socket_path)
        c = Connection(s.makefile("rb", buffering=0), s.makefile("wb", buffering=0), "socket")
        c.sock = s
        self.conns.append(c)
        return c

    def connect(self):
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.socket_path)
        return self._wrap(s)

    def call(self, method, **args):
        return self.main.call(method, **args)

    def log(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")

    def wait_log(self, text, timeout=10):
        """Waits (bounded) until vigild's log holds text, and returns the log.
        The engine writes its log from a thread of its own (log.c), so a line
        about an event may land a moment after the event itself is seen; the
        file is the only witness, so it is read again until the line is
        there or the bound passes (then the assertion fails with the log)."""
        deadline = time.monotonic() + timeout
        while True:
            log = self.log()
            if text in log or time.monotonic() >= deadline:
                assert text in log, "%r not in vigild's log:\n%s" % (text, log[-3000:])
                return log
            time.sleep(0.02)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def close(self):
        """Stops vigild and cleans up. Returns the sanitizer reports found in
        its log (the ASan build reports there, not in an exit status the
        test would otherwise see)."""
        for c in self.conns:
            c.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        log = self.log()
        reports = [line for line in log.splitlines()
                   if "ERROR: AddressSanitizer" in line or "ERROR: LeakSanitizer" in line
                   or "runtime error:" in line]
        shutil.rmtree(self.dir, ignore_errors=True)
        return reports


def alive(pid):
    """Whether pid is a live process (a zombie counts as gone: a keeper whose
    engine died is re-parented to whoever reaps here, maybe nobody)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def parent(pid):
    """The parent pid of process pid."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def wait_for(pred, what, timeout=60):
    """Waits (bounded) until pred() holds, for what the file system or the
    process table shows (nothing tells a waiter of those)."""
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.02)  # the file system and the process table tell nobody


def peer_uid(sock):
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def check_server_uid(sock, path):
    """Refuses (closes sock, raises) a server running as neither our uid nor
    root: whoever owns a socket path we were given could be an impostor."""
    uid = peer_uid(sock)
    if uid not in (os.geteuid(), 0):
        sock.close()
        raise ConnectionRefusedError(
            "refusing the engine at %s: it runs as uid %d, not as uid %d (ours) or root"
            % (path, uid, os.geteuid()))


# A msgpack-rpc server that answers every request with a plausible result and
# records every byte it receives: what a user who owns a socket directory could
# put in vigild's place. Run as another uid by Impostor.
IMPOSTOR_SCRIPT = r"""
import msgpack, os, socket, sys, threading
path, log = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(8)
print("ready", flush=True)
RESULT = {"version": "0.1.0", "api_level": 1, "session": "impostor", "resumed": False,
          "next_seq": 1, "monitor_id": "mon_impostor0", "label": "impostor", "mode": "idle",
          "notify": "auto", "pid": 1, "started_at": "2026-01-01T00:00:00.000+00:00", "note": None}
def serve(c):
    u = msgpack.Unpacker(raw=False)
    while True:
        data = c.recv(65536)
        if not data:
            return
        with open(log, "ab") as f:
            f.write(data)
        u.feed(data)
        for m in u:
            if m[0] == 0:
                c.sendall(msgpack.packb([1, m[1], None, RESULT]))
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


class Impostor:
    """A socket served by a process of another uid (65534), in a directory of
    its own; received() is every byte a client sent it. Needs root."""

    UID = 65534

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="vigil-impostor-")
        os.chmod(self.dir, 0o755)
        home = os.path.join(self.dir, "theirs")
        os.mkdir(home, 0o755)
        os.chown(home, self.UID, self.UID)
        self.path = os.path.join(home, "vigil.sock")
        self.log = os.path.join(home, "received")
        # In its own directory: the test's may be one the other uid cannot
        # enter (a checkout in /root). sys.executable is the system python3
        # the suite runs with (tests/CMakeLists.txt), which any uid can run.
        self.proc = subprocess.Popen([sys.executable, "-c", IMPOSTOR_SCRIPT, self.path, self.log],
                                     user=self.UID, group=self.UID, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, cwd=home)
        line = self.proc.stdout.readline()
        if line != b"ready\n":
            self.close()
            raise RuntimeError("the impostor did not start: %r" % line)

    def received(self):
        try:
            with open(self.log, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return b""

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def group_alive(pgid):
    """Whether any live (not zombie) process is in process group pgid."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def wait_group_gone(pgid, timeout):
    """Waits (bounded) for a process group the engine is ending to be gone:
    the engine sends no notification to anyone else, so the process table is
    the only witness."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.02)
    return False


def socket_only(fn):
    fn.transports = ("socket",)
    return fn


def stdio_only(fn):
    fn.transports = ("stdio",)
    return fn


def expect_error(code_name, fn, *args, **kwargs):
    """Calls fn and returns the RpcError it must raise with that code."""
    try:
        fn(*args, **kwargs)
    except RpcError as e:
        assert e.code == ERROR_CODES[code_name], "expected %s, got %s" % (code_name, e)
        assert e.message.startswith(code_name + ": "), e.message
        return e
    raise AssertionError("expected %s, but the call succeeded" % code_name)


def run_tests(tests, config=None):
    """Runs each test over its transports; prints results and the summary."""
    passed = failed = 0
    only = os.environ.get("VIGIL_TEST_ONLY")
    for test in tests:
        for transport in getattr(test, "transports", ("stdio", "socket")):
            name = "%s[%s]" % (test.__name__, transport)
            if only and only not in name:
                continue
            engine = None
            ok = False
            start = time.monotonic()
            try:
                cfg = getattr(test, "config", config)
                engine = Engine(transport, cfg() if callable(cfg) else cfg)
                test(engine)
                ok = True
            except Exception:
                ok = False
                failed += 1
                print("FAIL %s" % name, flush=True)
                traceback.print_exc()
                if engine is not None:
                    sys.stdout.write("--- vigild log ---\n" + engine.log()[-4000:] + "\n")
            finally:
                if engine is not None:
                    log = engine.log()
                    reports = engine.close()
                    if reports and ok:
                        ok = False
                        failed += 1
                        print("FAIL %s: vigild's sanitizer reported:\n  %s\n%s" % (
                            name, "\n  ".join(reports), log[-6000:]), flush=True)
            if ok:
                passed += 1
                print("ok   %s (%.1fs)" % (name, time.monotonic() - start), flush=True)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


def scratch_dir(prefix):
    """A new temporary directory for files a test module writes (configs, a
    broken executable, a working directory), removed when the test's
    process exits, so that a run of the suite leaves nothing in /tmp."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def run_plain_tests(tests, prefix="vigil-ft-"):
    """Runs tests that start their own processes: each is called with a
    private temporary directory (removed after). Prints results and the
    summary like run_tests; returns the exit status."""
    passed = failed = 0
    only = os.environ.get("VIGIL_TEST_ONLY")
    for test in tests:
        if only and only not in test.__name__:
            continue
        tmp = tempfile.mkdtemp(prefix=prefix)
        start = time.monotonic()
        try:
            test(tmp)
            passed += 1
            print("ok   %s (%.1fs)" % (test.__name__, time.monotonic() - start), flush=True)
        except Exception:
            failed += 1
            print("FAIL %s" % test.__name__, flush=True)
            traceback.print_exc()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


def with_config(**overrides):
    """Decorator: run this test with default_config(**overrides)."""
    def wrap(fn):
        fn.config = lambda: default_config(**overrides)
        return fn
    return wrap
