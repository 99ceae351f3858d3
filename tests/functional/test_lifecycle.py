"""The engine's lifecycle from a terminal (issue 24, item 1): the pidfile
beside the socket, `vigil shutdown` and `vigil engine status`, vigild
finding its config like the CLI and saying which it uses, `--daemon`
showing its warning before it detaches, and the "no engine" hint naming
`--daemon`. Each test starts its own vigild in a private directory."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import VIGIL, VIGILD, Connection, RpcError, alive, default_config, lua_value, run_plain_tests, wait_for


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
        no_sanitizer_reports(self.log_path)


def no_sanitizer_reports(log_path):
    """The ASan build reports in the engine's log, not in a status."""
    with open(log_path, "rb") as f:
        log = f.read().decode(errors="replace")
    reports = [line for line in log.splitlines()
               if "ERROR: AddressSanitizer" in line or "ERROR: LeakSanitizer" in line
               or "runtime error:" in line]
    assert not reports, "vigild's sanitizer reported:\n" + log[-6000:]


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


def test_a_client_that_gets_in_finds_the_pidfile(tmp):
    # `vigil engine status` run the moment the socket answers must find the
    # pidfile: a client spinning on connect, as a script starting vigild in
    # the background would, never gets in before it is written. (It was
    # written after listen: this found it missing in 289 of 300 starts.)
    for i in range(20):
        run = os.path.join(tmp, "start%d" % i)
        os.makedirs(run)
        sock = os.path.join(run, "run", "vigil.sock")
        env = clean_env(run)
        with open(os.path.join(run, "vigild.log"), "ab") as log:
            proc = subprocess.Popen([VIGILD, "--listen", sock, "--no-config"],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=log, env=env)
        try:
            deadline = time.monotonic() + 30
            while True:
                s = socket.socket(socket.AF_UNIX)
                try:
                    s.connect(sock)
                    break
                except OSError:
                    assert proc.poll() is None and time.monotonic() < deadline, \
                        "vigild never listened on %s" % sock
                finally:
                    s.close()
            pidfile = os.path.join(run, "run", "vigil.pid")
            assert os.path.exists(pidfile), \
                "start %d: the socket answered before the pidfile existed" % i
            with open(pidfile) as f:
                assert f.read() == "%d\n" % proc.pid
        finally:
            proc.terminate()
            assert proc.wait(30) == 0


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


# --- vigil engine status and vigil shutdown ---------------------------------

def test_engine_status_says_what_runs_and_3_when_nothing_does(tmp):
    v = Vigild(tmp)
    try:
        r = vigil(v, "engine", "status")
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        assert "vigild is running on %s" % v.sock in r.stdout, r.stdout
        assert "pid        %d\n" % v.proc.pid in r.stdout, r.stdout
        assert "config     %s\n" % os.path.join(tmp, "config.lua") in r.stdout, r.stdout
        assert "pidfile    %s\n" % v.pidfile in r.stdout, r.stdout
        assert re.search(r"\n  uptime     \d+(ms|s)\n  sessions   \d+\n  monitors   0 running\n",
                         r.stdout), r.stdout
        assert vigil(v, "start", "--", "sleep", "300").returncode == 0
        info = json.loads(vigil(v, "--json", "engine", "status").stdout)
        assert info["running"] is True and info["pid"] == v.proc.pid, info
        assert info["sessions"] >= 1 and info["monitors_running"] == 1, info
        assert info["config"]["path"] == os.path.join(tmp, "config.lua"), info
        assert info["uptime_ms"] >= 0 and info["version"], info
        v.proc.send_signal(signal.SIGTERM)
        assert v.proc.wait(30) == 0
        r = vigil(v, "engine", "status")
        assert r.returncode == 3, (r.returncode, r.stderr)
        assert "no engine is listening on %s" % v.sock in r.stderr, r.stderr
    finally:
        v.close()


def test_shutdown_ends_the_engine_and_its_monitors(tmp):
    v = Vigild(tmp)
    try:
        r = vigil(v, "start", "--", "sleep", "300")
        assert r.returncode == 0, r.stderr
        mid = r.stdout.strip()
        child = json.loads(vigil(v, "--json", "status", mid).stdout)["pid"]
        assert alive(child)
        r = vigil(v, "shutdown", "--timeout", "30s")
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        assert "vigild (pid %d) on %s has ended" % (v.proc.pid, v.sock) in r.stdout, r.stdout
        # Ended when the command returns, not some time after.
        assert v.proc.poll() == 0, v.proc.poll()
        assert not alive(child)
        assert not os.path.exists(v.pidfile) and not os.path.exists(v.sock)
        r = vigil(v, "shutdown")
        assert r.returncode == 3, (r.returncode, r.stderr)
        assert "there is nothing to shut down" in r.stderr, r.stderr
    finally:
        v.close()


def test_shutdown_that_times_out_says_so_and_again_skips_the_grace(tmp):
    cfg = write_config(tmp, monitor={"kill_grace_ms": 120000})
    v = Vigild(tmp, args=["--config", cfg])
    try:
        # The trap is set once the line is out.
        r = vigil(v, "start", "--wait-for", "ready", "--shell", "--",
                  "trap '' TERM; echo ready; sleep 300")
        assert r.returncode == 0, r.stderr
        r = vigil(v, "shutdown", "--timeout", "500ms")
        assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
        assert "did not end within 500ms" in r.stderr, r.stderr
        assert "kill -TERM %d skips their grace" % v.proc.pid in r.stderr, r.stderr
        assert v.proc.poll() is None
        os.kill(v.proc.pid, signal.SIGTERM)
        assert v.proc.wait(30) == 0
    finally:
        v.close()


def test_shutdown_never_signals_what_a_stale_pidfile_names(tmp):
    run = os.path.join(tmp, "run")
    os.makedirs(run, mode=0o700)
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        with open(os.path.join(run, "vigil.pid"), "w") as f:
            f.write("%d\n" % bystander.pid)
        r = subprocess.run([VIGIL, "--socket", os.path.join(run, "vigil.sock"), "shutdown"],
                           capture_output=True, text=True, timeout=60, env=clean_env(tmp))
        assert r.returncode == 3, (r.returncode, r.stderr)
        assert "names pid %d, which serves no socket here" % bystander.pid in r.stderr, r.stderr
        assert bystander.poll() is None, "the process the pidfile named was signalled"
    finally:
        bystander.kill()
        bystander.wait()


def test_shutdown_ends_an_engine_a_service_manager_started(tmp):
    # This test plays systemd (test_activation.py): it made and listens on
    # the socket and passed it to vigild. vigild listens on it again when
    # it takes it, so the kernel names vigild as the socket's peer, and the
    # pid it names agrees with the engine's own.
    from test_activation import Activated
    v = Activated(tmp)
    try:
        v.connect()
        r = subprocess.run([VIGIL, "--socket", v.sock_path, "shutdown"], capture_output=True,
                           text=True, timeout=60, env=clean_env(tmp))
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        assert "vigild (pid %d) on %s has ended" % (v.proc.pid, v.sock_path) in r.stdout, r.stdout
        assert v.proc.poll() == 0
        # The socket file is the manager's: left in place.
        assert os.path.exists(v.sock_path)
    finally:
        assert v.stop() == 0


# --- vigild's own config lookup ---------------------------------------------

def test_vigild_without_config_finds_the_users_and_says_so(tmp):
    env = clean_env(tmp)
    user = os.path.join(env["HOME"], ".config", "vigil", "vigil.lua")
    os.makedirs(os.path.dirname(user))
    os.rename(write_config(tmp), user)
    v = Vigild(tmp, args=[], env=env)
    try:
        wait_for(lambda: "vigild: config %s (the user's config; --config FILE names another)"
                 % user in v.log(), "the line naming the config")
        info = json.loads(vigil(v, "--json", "engine", "status").stdout)
        assert info["config"]["path"] == user, info
        # Its allowlist is in force: echo is allowed.
        r = vigil(v, "run", "--", "echo", "from the user's config")
        assert r.returncode == 0 and "from the user's config" in r.stdout, (r.stdout, r.stderr)
    finally:
        v.close()


def test_vigil_config_wins_and_a_missing_one_is_an_error(tmp):
    env = clean_env(tmp)
    user = os.path.join(env["HOME"], ".config", "vigil", "vigil.lua")
    os.makedirs(os.path.dirname(user))
    with open(user, "w") as f:
        f.write("return {}\n")
    env["VIGIL_CONFIG"] = write_config(tmp)
    v = Vigild(tmp, args=[], env=env)
    try:
        wait_for(lambda: "vigild: config %s ($VIGIL_CONFIG;" % env["VIGIL_CONFIG"] in v.log(),
                 "the line naming $VIGIL_CONFIG")
    finally:
        v.close()
    # A file named that is not there is an error naming it, never a quiet
    # fall-through to another config.
    env["VIGIL_CONFIG"] = os.path.join(tmp, "nope.lua")
    r = subprocess.run([VIGILD, "--listen", os.path.join(tmp, "run2", "vigil.sock")],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                       env=env)
    assert r.returncode == 1 and "nope.lua" in r.stderr, (r.returncode, r.stderr)
    r = subprocess.run([VIGILD, "--config", env["VIGIL_CONFIG"], "--no-config"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and "--config and --no-config cannot be combined" in r.stderr, \
        r.stderr


# --- vigild --daemon says on the terminal what it logs ----------------------

def daemon(tmp, *args):
    """Runs vigild --daemon on tmp/run/vigil.sock; returns (result, pid or None)."""
    sock = os.path.join(tmp, "run", "vigil.sock")
    r = subprocess.run([VIGILD, "--daemon", "--listen", sock] + list(args),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                       env=clean_env(tmp))
    m = re.search(r"\(pid (\d+)\)", r.stdout)
    return r, int(m.group(1)) if m else None


def end_daemon(tmp, pid):
    if pid is None:
        return
    r = subprocess.run([VIGIL, "--socket", os.path.join(tmp, "run", "vigil.sock"), "shutdown"],
                       capture_output=True, text=True, timeout=60, env=clean_env(tmp))
    if r.returncode != 0 and alive(pid):
        os.kill(pid, signal.SIGKILL)
    assert r.returncode == 0, r.stderr
    no_sanitizer_reports(os.path.join(tmp, "run", "vigild.log"))


def test_daemon_without_config_names_the_bundled_one_on_the_terminal(tmp):
    r, pid = daemon(tmp)
    try:
        assert r.returncode == 0, (r.stdout, r.stderr)
        bundled = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "config",
                                                "vigil.lua"))
        assert "vigild: config %s (the bundled config; --config FILE names another)" % bundled \
            in r.stderr, r.stderr
        assert "vigild: listening on " in r.stdout, r.stdout
    finally:
        end_daemon(tmp, pid)


def test_daemon_prints_the_warning_it_logs_before_it_detaches(tmp):
    r, pid = daemon(tmp, "--no-config")
    try:
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert "vigild: warning: --no-config: the allowlist is empty, so every start is denied" \
            in r.stderr, r.stderr
        # Only warnings: the info lines stay in the log file.
        assert "policies and Lua modules" not in r.stderr, r.stderr
    finally:
        end_daemon(tmp, pid)


def test_an_embedded_engine_looks_up_no_config(tmp):
    # A client library's Engine.spawn (vigild --stdio) without a config
    # denies every start, whatever the running user's $VIGIL_CONFIG or
    # ~/.config/vigil allow: the host program names its engine's config.
    env = clean_env(tmp)
    env["VIGIL_CONFIG"] = write_config(tmp)          # allows sh
    proc = subprocess.Popen([VIGILD, "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    conn = Connection(proc.stdout, proc.stdin, "stdio-embedded")
    try:
        try:
            conn.call("process_run", argv=["sh", "-c", "true"], timeout=30)
            assert False, "an embedded engine without --config ran a command"
        except RpcError as e:
            assert e.code == 3 and "allowlist is empty" in e.message or \
                "allowed_commands is empty" in e.message, e.message
    finally:
        proc.stdin.close()
        err = proc.stderr.read().decode()
        proc.stdout.close()
        proc.stderr.close()
        proc.wait(timeout=60)
    assert "vigild: config" not in err, err


TESTS = [
    test_the_pidfile_names_the_engine_and_goes_with_it,
    test_a_client_that_gets_in_finds_the_pidfile,
    test_a_stale_pidfile_is_replaced,
    test_a_pidfile_that_is_a_link_is_left_alone,
    test_engine_status_says_what_runs_and_3_when_nothing_does,
    test_shutdown_ends_the_engine_and_its_monitors,
    test_shutdown_that_times_out_says_so_and_again_skips_the_grace,
    test_shutdown_never_signals_what_a_stale_pidfile_names,
    test_shutdown_ends_an_engine_a_service_manager_started,
    test_vigild_without_config_finds_the_users_and_says_so,
    test_vigil_config_wins_and_a_missing_one_is_an_error,
    test_daemon_without_config_names_the_bundled_one_on_the_terminal,
    test_daemon_prints_the_warning_it_logs_before_it_detaches,
    test_an_embedded_engine_looks_up_no_config,
]

if __name__ == "__main__":
    sys.exit(run_plain_tests(TESTS, prefix="vigil-lc-"))
