"""The engine's lifecycle from a terminal (issue 24, item 1): the pidfile
beside the socket, `vigil shutdown` and `vigil engine status`, vigild
finding its config like the CLI and saying which it uses, `--daemon`
showing its warning before it detaches, and the "no engine" hint naming
`--daemon`. Each test starts its own vigild in a private directory."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import VIGIL, VIGILD, alive, default_config, lua_value, run_plain_tests, wait_for


def write_config(tmp, **overrides):
    path = os.path.join(tmp, "config.lua")
    with open(path, "w") as f:
        f.write("return " + lua_value(default_config(**overrides)) + "\n")
    return path


def clean_env(tmp, **extra):
    """An environment with no config of the user's: HOME and the XDG
    directories are the test's own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIGIL_SESSION", "VIGIL_SOCKET", "VIGIL_CONFIG", "XDG_CONFIG_HOME",
                        "NO_COLOR", "COLUMNS")}
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    env["HOME"] = home
    env["XDG_STATE_HOME"] = os.path.join(home, "state")
    env.update(extra)
    return env


class Vigild:
    """A vigild listening on tmp/run/vigil.sock, its stderr in tmp/vigild.log."""

    def __init__(self, tmp, args=("--config",), env=None):
        self.tmp = tmp
        self.sock = os.path.join(tmp, "run", "vigil.sock")
        self.pidfile = os.path.join(tmp, "run", "vigil.pid")
        self.log_path = os.path.join(tmp, "vigild.log")
        argv = [VIGILD, "--listen", self.sock]
        if args == ("--config",):
            argv += ["--config", write_config(tmp)]
        else:
            argv += list(args)
        self.env = env or clean_env(tmp)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=log, env=self.env)
        wait_for(lambda: self.proc.poll() is not None or self.listening(), "vigild to listen",
                 timeout=30)
        assert self.proc.poll() is None, self.log()

    def listening(self):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(self.sock)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def vigil(v, *args, timeout=60, env=None):
    return subprocess.run([VIGIL, "--socket", v.sock] + list(args), capture_output=True,
                          text=True, timeout=timeout, env=env or v.env)


# --- the pidfile ------------------------------------------------------------

def test_the_pidfile_names_the_engine_and_goes_with_it(tmp):
    v = Vigild(tmp)
    try:
        with open(v.pidfile) as f:
            assert f.read() == "%d\n" % v.proc.pid
        st = os.lstat(v.pidfile)
        assert st.st_uid == os.geteuid() and (st.st_mode & 0o777) == 0o644, oct(st.st_mode)
        v.proc.send_signal(signal.SIGTERM)
        assert v.proc.wait(30) == 0
        assert not os.path.exists(v.pidfile), os.listdir(os.path.dirname(v.pidfile))
    finally:
        v.close()


def test_a_stale_pidfile_is_replaced(tmp):
    run = os.path.join(tmp, "run")
    os.makedirs(run, mode=0o700)
    # A pidfile a killed engine left: a pid that is not this engine's.
    with open(os.path.join(run, "vigil.pid"), "w") as f:
        f.write("999999\n")
    v = Vigild(tmp)
    try:
        with open(v.pidfile) as f:
            assert f.read() == "%d\n" % v.proc.pid
        wait_for(lambda: "replaced a stale one naming pid 999999" in v.log(), "the log line")
    finally:
        v.close()


def test_a_pidfile_that_is_a_link_is_left_alone(tmp):
    run = os.path.join(tmp, "run")
    os.makedirs(run, mode=0o700)
    target = os.path.join(tmp, "precious")
    with open(target, "w") as f:
        f.write("keep me\n")
    os.symlink(target, os.path.join(run, "vigil.pid"))
    v = Vigild(tmp)
    try:
        # Neither the link nor what it points at is touched, and the
        # engine serves all the same, saying why it has no pidfile.
        assert os.path.islink(v.pidfile) and os.readlink(v.pidfile) == target
        with open(target) as f:
            assert f.read() == "keep me\n"
        wait_for(lambda: "is a symbolic link, not a pidfile this engine wrote" in v.log(),
                 "the warning")
        v.proc.send_signal(signal.SIGTERM)
        assert v.proc.wait(30) == 0
        assert os.path.islink(v.pidfile)
    finally:
        v.close()


TESTS = [
    test_the_pidfile_names_the_engine_and_goes_with_it,
    test_a_stale_pidfile_is_replaced,
    test_a_pidfile_that_is_a_link_is_left_alone,
]

if __name__ == "__main__":
    sys.exit(run_plain_tests(TESTS, prefix="vigil-lc-"))
