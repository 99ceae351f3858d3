"""What the client's tests share: the build's vigild, configs, a daemon.

The tests run the real engine of the build (``$VIGIL_BUILD_DIR/vigild``,
default ``build/`` at the top of the checkout), each with a config written
for it: the programs the tests start are allowlisted, and the children
inherit ``VIGIL_TEST_RUN`` (so ctest's ``no_orphans`` finds any left
behind). The package is imported from this checkout (clients/python), not
from wherever pip may have installed another copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)                          # clients/python
ROOT = os.path.dirname(os.path.dirname(PACKAGE_ROOT))         # the checkout
sys.path.insert(0, PACKAGE_ROOT)

import vigil_client  # noqa: E402  (after the path is set)

BUILD = os.environ.get("VIGIL_BUILD_DIR", os.path.join(ROOT, "build"))
VIGILD = os.path.join(BUILD, "vigild")
PYTHON = sys.executable

# How long a test waits for something the engine will do (a notification,
# an answer): generous, for a loaded 2-core CI machine.
EVENT_TIMEOUT_S = 30.0


def lua(value: Any) -> str:
    """A Python value as Lua source (for a config file)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(lua(v) for v in value) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join("%s = %s" % (k, lua(v)) for k, v in value.items()) + "}"
    raise TypeError(value)


def config(**monitor: Any) -> Dict[str, Any]:
    """A config allowing sh and this Python, with a short kill grace; the
    keyword arguments are more monitor.* settings."""
    m: Dict[str, Any] = {
        "allowed_commands": ["sh", "/bin/sh", "echo", PYTHON],
        "kill_grace_ms": 500,
        "env_inherit": ["PATH", "HOME", "LANG", "LC_*", "TMPDIR", "VIGIL_TEST_RUN",
                        "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"],
    }
    m.update(monitor)
    return {"monitor": m}


class Workdir:
    """A private temporary directory with a config file in it."""

    def __init__(self, cfg: Optional[Dict[str, Any]] = None):
        self.path = tempfile.mkdtemp(prefix="vigil-py-")
        self.config = os.path.join(self.path, "config.lua")
        with open(self.config, "w") as f:
            f.write("return %s\n" % lua(cfg if cfg is not None else config()))
        self.log_path = os.path.join(self.path, "vigild.log")

    def log(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def check_sanitizers(self) -> None:
        """Fails when an engine of this directory reported an AddressSanitizer
        or UBSan error in its log (the ASan build reports there, not in an
        exit status the test sees)."""
        reports = [line for line in self.log().splitlines()
                   if "ERROR: AddressSanitizer" in line or "ERROR: LeakSanitizer" in line
                   or "runtime error:" in line]
        assert not reports, "vigild's sanitizer reported:\n%s" % self.log()[-6000:]


def workdir(test: Any, cfg: Optional[Dict[str, Any]] = None) -> Workdir:
    """A Workdir for a unittest test: removed after it, and its engines'
    logs checked for sanitizer reports once they have stopped (cleanups
    run last-registered first, so register engines after this)."""
    work = Workdir(cfg)
    test.addCleanup(work.remove)
    test.addCleanup(work.check_sanitizers)
    return work


class Daemon:
    """``vigild --listen`` on a socket in a private directory; stopped with
    SIGTERM (the engine then stops every monitor) by ``stop``."""

    def __init__(self, work: Workdir):
        self.work = work
        self.socket = os.path.join(work.path, "run", "vigil.sock")
        self.log = open(work.log_path, "ab")
        self.proc = subprocess.Popen([VIGILD, "--listen", self.socket, "--config", work.config,
                                      "--no-state"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.log)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            status = self.proc.wait(EVENT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
        self.log.close()
        return status


def spawn(work: Workdir, **kwargs: Any) -> "vigil_client.Engine":
    """An embedded engine of this build, logging into the work directory."""
    log = open(work.log_path, "ab")
    try:
        return vigil_client.Engine.spawn(vigild=VIGILD, config=work.config, stderr=log, **kwargs)
    finally:
        log.close()     # the child has its own copy


def take_until_ending(session: Any, monitor_id: str, timeout: float = EVENT_TIMEOUT_S) -> list:
    """The session's notifications up to and including that monitor's
    ending (other monitors' too, in order)."""
    got = []
    while True:
        n = session.wait(timeout)
        assert n is not None, "no notification within %.0f s; had %r" % (
            timeout, [(x.seq, x.type) for x in got])
        got.append(n)
        if n.is_ending and n.monitor_id == monitor_id:
            return got


def read_until_ending(sub: Any, timeout: float = EVENT_TIMEOUT_S) -> list:
    """What a FleetSubscriber reads, each acked, up to and including the
    first ending; fails when none comes within timeout."""
    seen: list = []
    deadline = time.monotonic() + timeout
    while not any(n.is_ending for n in seen):
        assert time.monotonic() < deadline, "no ending within %.0f s; read %r" % (timeout, seen)
        n = sub.next(1.0)
        if n is not None:
            seen.append(n)
            n.ack()
    return seen
