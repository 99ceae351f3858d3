"""A real nats-server for a test: started on a free loopback port with
JetStream in a private store directory, ready once it accepts, always
stopped.

The fleet's tests (these, and tests/fleet's engine suite) run the Debian
``nats-server`` that scripts/install-deps.sh installs; when it is missing
the test fails saying so rather than skipping. Only the standard library is
used here, so any suite can import this file (put its directory on
sys.path). Readiness is waited for, never slept for: the port is polled
until the server answers with its INFO line, within a generous deadline,
and a server that exits first is reported with its log.

    server = NatsServer.for_test(self)          # stopped after the test
    server = NatsServer.for_test(self, config=ACCOUNTS_CONF)
    server.url, server.url_for("alice", "pw"), server.restart()
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Any, Optional

# How long a server may take to accept once started, and to stop once
# asked (a loaded 2-core machine); how often the port is polled meanwhile.
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
POLL_S = 0.02

# How many times a start is tried again with another port when the free
# port found was taken by someone else before the server bound it.
PORT_RETRIES = 5


def find_nats_server() -> str:
    """The nats-server program; AssertionError saying how to install it
    when there is none (a missing server fails a test, never skips it)."""
    found = os.environ.get("VIGIL_NATS_SERVER") or shutil.which("nats-server") \
        or next((p for p in ("/usr/sbin/nats-server", "/usr/bin/nats-server")
                 if os.access(p, os.X_OK)), None)
    if not found:
        raise AssertionError("nats-server is not installed: scripts/install-deps.sh installs "
                             "it (apt-get install nats-server), or set VIGIL_NATS_SERVER")
    return found


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NatsServer:
    """One ``nats-server -js -sd DIR -a 127.0.0.1 -p PORT`` (with ``-c
    CONFIG`` when a config text is given). ``start`` waits until it
    accepts; ``stop`` ends it (SIGTERM, then SIGKILL); ``restart`` stops it
    and starts it again on the same port and store, as an operator's
    restart does."""

    def __init__(self, config: Optional[str] = None, jetstream: bool = True):
        self.program = find_nats_server()
        self.dir = tempfile.mkdtemp(prefix="vigil-nats-")
        self.store = os.path.join(self.dir, "store")
        self.log_path = os.path.join(self.dir, "nats-server.log")
        self.config_path: Optional[str] = None
        if config is not None:
            self.config_path = os.path.join(self.dir, "nats.conf")
            with open(self.config_path, "w") as f:
                f.write(config)
        self.jetstream = jetstream
        self.port = 0
        self.proc: Optional["subprocess.Popen[bytes]"] = None

    @classmethod
    def for_test(cls, test: Any, config: Optional[str] = None,
                 jetstream: bool = True) -> "NatsServer":
        """A started server that is stopped (and its directory removed)
        when the unittest test ends, whatever its outcome."""
        server = cls(config, jetstream)
        test.addCleanup(server.remove)
        server.start()
        return server

    @property
    def url(self) -> str:
        return "nats://127.0.0.1:%d" % self.port

    def url_for(self, user: str, password: str) -> str:
        return "nats://%s:%s@127.0.0.1:%d" % (user, password, self.port)

    def log(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def start(self) -> None:
        """Starts the server (on a new free port the first time, on the
        same one after a stop) and waits until it answers."""
        for attempt in range(PORT_RETRIES):
            fixed = self.port != 0
            if not fixed:
                self.port = free_port()
            if self._start_once():
                return
            if "address already in use" not in self.log() or (fixed and attempt > 2):
                break
            if not fixed:
                self.port = 0
            time.sleep(0.2 * (attempt + 1))       # a restart waits for the port to free up
        raise AssertionError("nats-server did not start on port %d:\n%s"
                             % (self.port, self.log()[-4000:]))

    def _start_once(self) -> bool:
        args = [self.program, "-a", "127.0.0.1", "-p", str(self.port)]
        if self.jetstream:
            args += ["-js", "-sd", self.store]
        if self.config_path:
            args += ["-c", self.config_path]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                return False
            if self._answers():
                return True
            time.sleep(POLL_S)
        self.stop()
        raise AssertionError("nats-server did not accept on port %d within %.0f s:\n%s"
                             % (self.port, START_TIMEOUT_S, self.log()[-4000:]))

    def _answers(self) -> bool:
        """Whether the port accepts and sends an INFO line."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2.0) as s:
                return s.recv(5) == b"INFO "
        except OSError:
            return False

    def stop(self) -> None:
        """Stops the server; idempotent."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def restart(self) -> None:
        """Stops the server and starts it again on the same port, with the
        same store directory (what JetStream kept survives)."""
        self.stop()
        self.start()

    def remove(self) -> None:
        """Stops the server and removes its directory."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "NatsServer":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()
