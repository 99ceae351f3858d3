"""vigild's state directory (docs/restart.md, stage 1): where it is by
default (`state` beside the socket; none with --stdio), --state-dir and
--no-state, the config's state.dir, that it is made private and locked for
the engine's life, and that one vigild must not trust (a link, open to its
group or others) or another engine holds is refused at start with the
reason, changing nothing: no mode touched, no socket made.

Every wait is on an event with a generous bound (a process exiting, the
socket answering, a reply): the CI machine is a loaded 2-core box."""

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (VIGILD, Connection, default_config, lua_value, run_tests, socket_only,
                       stdio_only)

# Bounds for what a loaded machine may take: a start-up, an exit.
START_S = 60
EXIT_S = 60


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def sanitizer_reports(text):
    return [line for line in text.splitlines()
            if "ERROR: AddressSanitizer" in line or "ERROR: LeakSanitizer" in line
            or "runtime error:" in line]


def run_refused(args, cwd=None, env=None):
    """Runs a vigild that must refuse to start: returns (status, stderr)
    once it has exited (bounded)."""
    p = subprocess.run([VIGILD] + args, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=EXIT_S)
    err = p.stderr.decode(errors="replace")
    assert not sanitizer_reports(err), err
    return p.returncode, err


class Vigild:
    """A vigild started by a test with arguments of its own, on a socket
    (listen=PATH) or over --stdio, reached with one connection."""

    def __init__(self, args, listen=None, cwd=None, env=None):
        self.listen = listen
        self.cwd = cwd
        self.log_file = tempfile.TemporaryFile()
        if listen is None:
            self.proc = subprocess.Popen([VIGILD, "--stdio"] + args, cwd=cwd, env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.log_file)
            self.conn = Connection(self.proc.stdout, self.proc.stdin, "stdio")
        else:
            self.proc = subprocess.Popen([VIGILD, "--listen", listen] + args, cwd=cwd, env=env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=self.log_file)
            self.conn = self._connect()

    def _connect(self):
        path = os.path.join(self.cwd or os.getcwd(), self.listen)
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("vigild exited %d: %s" % (self.proc.returncode, self.log()))
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(path)
            except OSError:
                s.close()
                time.sleep(0.01)  # polling the socket's appearance at start-up only
                continue
            c = Connection(s.makefile("rb", buffering=0), s.makefile("wb", buffering=0), "socket")
            c.sock = s
            return c
        raise TimeoutError("vigild never listened on %s: %s" % (path, self.log()))

    def call(self, method, **args):
        return self.conn.call(method, timeout=START_S, **args)

    def log(self):
        """Its stderr so far (all of it once stop returned)."""
        if self.log_file.closed:
            return self.final_log
        self.log_file.seek(0)
        return self.log_file.read().decode(errors="replace")

    def stop(self):
        """Stops it (stdin closed, or SIGTERM) and returns its exit status."""
        if self.listen is None:
            self.conn.wfile.close()
        else:
            self.conn.close()
            self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(EXIT_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.conn.close()
        self.final_log = self.log()
        self.log_file.close()
        assert not sanitizer_reports(self.final_log), self.final_log
        return status


def scratch():
    """A private (0700) scratch directory, removed by the caller."""
    return tempfile.mkdtemp(prefix="vigil-state-")


def state_of(e):
    return os.path.join(os.path.dirname(e.socket_path), "state")


@socket_only
def test_the_default_state_dir_is_made_private_beside_the_socket(e):
    state = state_of(e)
    assert mode(state) == 0o700, oct(mode(state))
    assert mode(os.path.join(state, "monitors")) == 0o700
    with open(os.path.join(state, "lock")) as f:
        assert int(f.read()) == e.proc.pid
    assert e.call("api_info")["state_dir"] == state
    e.wait_log("state directory %s (locked by pid %d)" % (state, e.proc.pid))


@stdio_only
def test_a_relative_socket_path_gets_its_state_dir_beside_it_reported_absolute(e):
    base = scratch()
    try:
        os.chmod(base, 0o755)  # a project directory: its mode is left alone
        for listen, state in (("v.sock", os.path.join(base, "state")),
                              ("run/v.sock", os.path.join(base, "run", "state"))):
            v = Vigild([], listen=listen, cwd=base)
            try:
                assert v.call("api_info")["state_dir"] == state
                assert mode(state) == 0o700
            finally:
                assert v.stop() == 0
        assert mode(base) == 0o755
    finally:
        shutil.rmtree(base, ignore_errors=True)


@socket_only
def test_a_second_engine_on_the_same_state_dir_is_refused_naming_the_first(e):
    state = state_of(e)
    base = scratch()
    try:
        # The same state directory given explicitly, another socket.
        other = os.path.join(base, "v.sock")
        status, err = run_refused(["--listen", other, "--state-dir", state])
        assert status == 1, err
        assert "%s is in use by another engine (pid %d)" % (state, e.proc.pid) in err, err
        assert not os.path.exists(other), "the refused engine made its socket"
        # The same socket path, so the same default state directory: refused
        # before it could touch the first engine's socket.
        status, err = run_refused(["--listen", e.socket_path])
        assert status == 1, err
        assert "(pid %d)" % e.proc.pid in err and state in err, err
        # The first engine is unaffected: its socket answers on the
        # connection it had and on a new one, and its lock is its own.
        assert e.call("ping")["api_level"] >= 1
        assert e.connect().call("api_info", timeout=START_S)["state_dir"] == state
        with open(os.path.join(state, "lock")) as f:
            assert int(f.read()) == e.proc.pid
        # A start that fails after making its own state directory (here:
        # the socket is the first engine's) takes it back.
        fresh = os.path.join(base, "fresh")
        status, err = run_refused(["--listen", e.socket_path, "--state-dir", fresh])
        assert status == 1 and "another vigild is listening on %s" % e.socket_path in err, err
        assert not os.path.exists(fresh), os.listdir(fresh)
        assert e.call("ping")["api_level"] >= 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


@stdio_only
def test_a_state_dir_that_is_a_symbolic_link_is_refused_and_nothing_changes(e):
    base = scratch()
    try:
        real = os.path.join(base, "real")
        os.mkdir(real, 0o700)
        link = os.path.join(base, "link")
        os.symlink(real, link)
        sock = os.path.join(base, "v.sock")
        status, err = run_refused(["--listen", sock, "--state-dir", link])
        assert status == 1, err
        assert "state.dir: %s is a symbolic link" % link in err, err
        assert os.listdir(real) == [] and mode(real) == 0o700
        assert sorted(os.listdir(base)) == ["link", "real"], os.listdir(base)
        # The default beside the socket, a link too.
        run = os.path.join(base, "run")
        os.mkdir(run, 0o700)
        os.symlink(real, os.path.join(run, "state"))
        status, err = run_refused(["--listen", os.path.join(run, "v.sock")])
        assert status == 1 and "%s/state is a symbolic link" % run in err, err
        assert os.listdir(run) == ["state"] and os.listdir(real) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


@stdio_only
def test_a_state_dir_open_to_its_group_is_refused_and_left_as_it_is(e):
    base = scratch()
    try:
        for m in (0o750, 0o770):
            state = os.path.join(base, "state")
            os.mkdir(state)
            os.chmod(state, m)
            sock = os.path.join(base, "v.sock")
            # The default (state beside the socket), then the same given
            # with --state-dir over --stdio.
            for args in (["--listen", sock], ["--stdio", "--state-dir", state]):
                status, err = run_refused(args)
                assert status == 1, err
                assert state in err and "mode %04o" % m in err and "its group" in err, err
                assert mode(state) == m, "vigild changed the mode to %o" % mode(state)
                assert os.listdir(state) == [], os.listdir(state)
                assert not os.path.exists(sock), "the refused engine made its socket"
            os.rmdir(state)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@stdio_only
def test_stdio_without_state_dir_makes_none(e):
    # Neither beside a socket (there is none) nor in the default socket's
    # directory: nothing appears in the cwd or in $XDG_RUNTIME_DIR.
    base = scratch()
    try:
        xdg = os.path.join(base, "xdg")
        os.mkdir(xdg, 0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=xdg, VIGIL_LOG="info")
        v = Vigild([], cwd=base, env=env)
        try:
            assert v.call("api_info")["state_dir"] is None
        finally:
            assert v.stop() == 0
        assert os.listdir(xdg) == [] and os.listdir(base) == ["xdg"], os.listdir(base)
        # The log is complete once vigild has exited (it is flushed at exit).
        assert "no state directory (--stdio without --state-dir)" in v.log(), v.log()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    # The harness's own --stdio engine made none either.
    assert e.call("api_info")["state_dir"] is None
    assert sorted(os.listdir(e.dir)) == ["config.lua", "vigild.log"], os.listdir(e.dir)


@stdio_only
def test_no_state_makes_none(e):
    base = scratch()
    try:
        run = os.path.join(base, "run")
        v = Vigild(["--no-state"], listen=os.path.join(run, "v.sock"))
        try:
            assert v.call("api_info")["state_dir"] is None
            # The socket and its pidfile (docs/protocol.md 2.1), no state.
            assert sorted(os.listdir(run)) == ["v.pid", "v.sock"], os.listdir(run)
        finally:
            assert v.stop() == 0
        assert os.listdir(run) == []
        # --no-state wins over the config's state.dir too.
        cfg = os.path.join(base, "config.lua")
        with open(cfg, "w") as f:
            f.write("return " + lua_value(default_config(state={"dir": os.path.join(base, "cfg")}))
                    + "\n")
        v = Vigild(["--no-state", "--config", cfg])
        try:
            assert v.call("api_info")["state_dir"] is None
        finally:
            assert v.stop() == 0
        assert not os.path.exists(os.path.join(base, "cfg"))
        # Both at once is a usage error, naming both.
        status, err = run_refused(["--stdio", "--no-state", "--state-dir", base])
        assert status == 2 and "--state-dir" in err and "--no-state" in err, err
    finally:
        shutil.rmtree(base, ignore_errors=True)


@stdio_only
def test_state_dir_with_stdio_makes_one_and_holds_it_until_exit(e):
    base = scratch()
    try:
        # Relative: made absolute against vigild's cwd.
        v = Vigild(["--state-dir", "st"], cwd=base)
        state = os.path.join(base, "st")
        try:
            assert v.call("api_info")["state_dir"] == state
            assert mode(state) == 0o700 and mode(os.path.join(state, "monitors")) == 0o700
            status, err = run_refused(["--stdio", "--state-dir", state])
            assert status == 1 and "(pid %d)" % v.proc.pid in err, err
            assert v.call("ping")["api_level"] >= 1
        finally:
            assert v.stop() == 0
        # Its lock went with it: the next engine takes the same directory.
        v = Vigild(["--state-dir", state])
        try:
            assert v.call("api_info")["state_dir"] == state
            with open(os.path.join(state, "lock")) as f:
                assert int(f.read()) == v.proc.pid
        finally:
            assert v.stop() == 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


@stdio_only
def test_the_config_names_the_state_dir_and_a_reload_does_not_move_it(e):
    base = scratch()
    try:
        first, second = os.path.join(base, "first"), os.path.join(base, "second")
        cfg = os.path.join(base, "config.lua")

        def write(state):
            with open(cfg, "w") as f:
                f.write("return " + lua_value(default_config(state={"dir": state})) + "\n")

        write(first)
        v = Vigild(["--config", cfg])
        try:
            assert v.call("api_info")["state_dir"] == first
            write(second)
            assert v.call("config_reload")["reloaded"] is True
            assert v.call("api_info")["state_dir"] == first
            assert not os.path.exists(second)
        finally:
            assert v.stop() == 0
        assert "state.dir changed to %s" % second in v.log(), v.log()
        # --state-dir wins over the config.
        flag = os.path.join(base, "flag")
        v = Vigild(["--config", cfg, "--state-dir", flag])
        try:
            assert v.call("api_info")["state_dir"] == flag
        finally:
            assert v.stop() == 0
        assert not os.path.exists(second)
        # A relative state.dir is refused when the config loads.
        with open(cfg, "w") as f:
            f.write("return " + lua_value(default_config(state={"dir": "rel"})) + "\n")
        status, err = run_refused(["--stdio", "--config", cfg])
        assert status == 1 and 'state.dir must be an absolute path, got "rel"' in err, err
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run_tests([
        test_the_default_state_dir_is_made_private_beside_the_socket,
        test_a_relative_socket_path_gets_its_state_dir_beside_it_reported_absolute,
        test_a_second_engine_on_the_same_state_dir_is_refused_naming_the_first,
        test_a_state_dir_that_is_a_symbolic_link_is_refused_and_nothing_changes,
        test_a_state_dir_open_to_its_group_is_refused_and_left_as_it_is,
        test_stdio_without_state_dir_makes_none,
        test_no_state_makes_none,
        test_state_dir_with_stdio_makes_one_and_holds_it_until_exit,
        test_the_config_names_the_state_dir_and_a_reload_does_not_move_it,
    ]))
