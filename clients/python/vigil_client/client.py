"""The synchronous client: a connection to vigild, and its sessions.

``Client.connect(path)`` reaches an engine that listens on a Unix socket;
``Engine.spawn(...)`` starts ``vigild --stdio`` as a child and talks over its
pipes (closing the connection ends the engine and everything it started).
Either way one background thread reads the connection: it matches answers
to calls by msgid (a slow call such as ``monitor_wait`` does not hold up
the others, so calls may come from several threads) and keeps the
notifications the engine pushes in a bounded inbox until the application
takes them with ``wait``. ``Client.session(name)`` opens a named session and
returns a :class:`Session`, which keeps the resume cursor (cursor.py) and
offers every method acting on that session.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections import deque
from typing import IO, Any, Deque, Dict, Mapping, Optional, Sequence, Set, Tuple, TypeVar, Union

from .cursor import SessionCursor
from .endpoint import check_server_uid, check_socket_path, default_socket_path, find_vigild
from .errors import ConnectionClosed, VigilError
from .inbox import DEFAULT_MAX_BACKLOG, Inbox
from .methods import Methods
from .notification import Notification
from .wire import MSGID_MAX, READ_CHUNK_BYTES, Push, Response, classify, feed, new_unpacker, \
    pack_notification, pack_request, result_map

# How long a call waits for its answer by default, beyond what the method
# itself may take (monitor_wait's timeout_ms, a foreground process_run).
DEFAULT_CALL_TIMEOUT_S = 60.0

# How many vigil.error notifications (failures of calls sent with notify())
# a client keeps in engine_errors; older ones are forgotten.
ENGINE_ERRORS_KEPT = 64

# How long closing an embedded engine waits for it to stop its monitors
# (SIGTERM, the kill grace, SIGKILL) and exit before killing it.
DEFAULT_CLOSE_TIMEOUT_S = 30.0

# How often connect(wait_s=...) tries again while the socket does not
# accept yet (an engine that is still starting).
CONNECT_RETRY_S = 0.05

ClientT = TypeVar("ClientT", bound="Client")


class _SocketTransport:
    """A connected Unix socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def recv(self) -> bytes:
        return self.sock.recv(READ_CHUNK_BYTES)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def shutdown(self) -> None:
        # shutdown, not only close: the reader blocked in recv holds the
        # socket, so a close alone would neither wake it nor send a FIN.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()


class _PipeTransport:
    """An embedded engine's stdout (read) and stdin (write)."""

    def __init__(self, stdout: IO[bytes], stdin: IO[bytes]):
        self.stdout, self.stdin = stdout, stdin
        self.rfd, self.wfd = stdout.fileno(), stdin.fileno()

    def recv(self) -> bytes:
        return os.read(self.rfd, READ_CHUNK_BYTES)

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.wfd, view):]

    def shutdown(self) -> None:
        # Closing the engine's stdin is how it is told to stop: it stops its
        # monitors, exits, and its stdout reaches EOF, which ends the reader.
        try:
            self.stdin.close()
        except OSError:
            pass

    def close(self) -> None:
        self.shutdown()
        self.stdout.close()


_Transport = Union[_SocketTransport, _PipeTransport]


def _connect_socket(path: str, wait_s: float) -> socket.socket:
    """A socket connected to the engine at path, its server's uid checked.
    Tries again for wait_s seconds while nothing listens there yet."""
    check_socket_path(path)
    deadline = time.monotonic() + wait_s
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            check_server_uid(sock, path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError) as err:
            sock.close()
            if time.monotonic() >= deadline:
                raise ConnectionClosed("cannot connect to the engine at %s: %s (is vigild "
                                       "running? it listens there by default)"
                                       % (path, err.strerror)) from None
        except BaseException:
            sock.close()
            raise
        time.sleep(CONNECT_RETRY_S)     # the engine is starting: its socket is not there yet


class Client(Methods[Dict[str, Any]]):
    """A msgpack-rpc connection to vigild. Every protocol method is a method
    (methods.py) returning the result map or raising :class:`VigilError`.
    Use as a context manager, or call :meth:`close`."""

    def __init__(self, transport: _Transport, *, call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
                 max_backlog: int = DEFAULT_MAX_BACKLOG):
        self.call_timeout = call_timeout
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._inbox = Inbox(max_backlog)
        self._responses: Dict[int, Tuple[Any, Any]] = {}
        self._waiting: Set[int] = set()         # msgids whose answer someone awaits
        self._msgid = 0
        self._closed: Optional[str] = None      # why the connection is closed
        self._sessions: Dict[str, "Session"] = {}   # opened with session(), in open order
        self._path: Optional[str] = None
        self.engine_errors: Deque[VigilError] = deque(maxlen=ENGINE_ERRORS_KEPT)
        """Failures of calls sent with :meth:`notify` (``vigil.error``)."""
        self._start(transport)

    # --- the connection ------------------------------------------------------

    @classmethod
    def connect(cls, path: Optional[str] = None, *, wait_s: float = 0.0,
                call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
                max_backlog: int = DEFAULT_MAX_BACKLOG) -> "Client":
        """Connects to the engine listening at path (default: the engine's
        default socket, endpoint.py). ``wait_s``: how long to keep trying
        while nothing listens there yet. Raises PermissionError when the
        engine runs as another user (not root)."""
        path = path or default_socket_path()
        client = cls(_SocketTransport(_connect_socket(path, wait_s)), call_timeout=call_timeout,
                     max_backlog=max_backlog)
        client._path = path
        return client

    def _start(self, transport: _Transport) -> None:
        self._transport = transport
        self._closed = None
        self._reader = threading.Thread(target=self._read_loop, args=(transport,),
                                        name="vigil-client-reader", daemon=True)
        self._reader.start()

    def _read_loop(self, transport: _Transport) -> None:
        unpacker = new_unpacker()
        reason = "the engine closed the connection"
        try:
            while True:
                data = transport.recv()
                if not data:
                    break
                overflow = feed(unpacker, data, self._dispatch)
                if overflow:
                    reason = overflow
                    transport.shutdown()
                    break
        except Exception as err:        # OSError, or bytes that are not msgpack
            reason = "the connection to the engine failed: %s" % err
        with self._cond:
            if self._transport is transport and self._closed is None:
                self._closed = reason
            self._cond.notify_all()

    def _dispatch(self, msg: Any) -> Optional[str]:
        """Files one message; returns why to close the connection, if so."""
        kind = classify(msg)
        with self._cond:
            if isinstance(kind, Response):
                if kind.msgid in self._waiting:
                    self._responses[kind.msgid] = (kind.error, kind.result)
            elif isinstance(kind, Push) and kind.method == "vigil.notification":
                params = kind.params
                if isinstance(params, list) and params and isinstance(params[0], Mapping):
                    if not self._inbox.put(Notification.from_map(params[0])):
                        self._closed = ("closed: %d notifications were waiting to be taken "
                                        "(max_backlog %d); take them with wait(), then "
                                        "reconnect() to resume"
                                        % (len(self._inbox), self._inbox.max_backlog))
                        self._cond.notify_all()
                        return self._closed
            elif isinstance(kind, Push) and kind.method == "vigil.error":
                self.engine_errors.append(VigilError.from_wire(kind.params))
            else:
                return None
            self._cond.notify_all()
        return None

    def _send(self, data: bytes) -> None:
        with self._send_lock:
            if self._closed is not None:
                raise ConnectionClosed(self._closed)
            try:
                self._transport.send(data)
            except OSError as err:
                raise ConnectionClosed("cannot send to the engine: %s" % err) from None

    def _shutdown(self, reason: str) -> None:
        with self._cond:
            if self._closed is None:
                self._closed = reason
            self._cond.notify_all()
        self._transport.shutdown()

    def close(self) -> None:
        """Closes the connection. A socket client's anonymous session ends
        with it; its named sessions linger for a resume (docs/protocol.md,
        section 3)."""
        self._shutdown("closed by this client")
        self._reader.join(DEFAULT_CLOSE_TIMEOUT_S)
        self._transport.close()

    @property
    def closed(self) -> Optional[str]:
        """Why the connection is closed, or None while it is open."""
        return self._closed

    def __enter__(self: ClientT) -> ClientT:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def reconnect(self, *, wait_s: float = 10.0) -> None:
        """Connects again to the same socket (after the engine closed the
        connection, or was restarted) and reopens every session opened with
        :meth:`session`, each resuming after its cursor: what the
        application has not taken yet comes again, nothing twice."""
        if self._path is None:
            raise RuntimeError("reconnect: only a client made by Client.connect can reconnect "
                               "(an embedded engine ends with its connection)")
        self.close()
        sock = _connect_socket(self._path, wait_s)
        with self._cond:
            self._responses.clear()
            self._waiting.clear()
            for name in self._sessions:
                self._inbox.discard(name)       # sent again after the cursor
        self._start(_SocketTransport(sock))
        for s in list(self._sessions.values()):
            s.open()

    # --- calls ---------------------------------------------------------------

    def _call(self, method: str, args: Dict[str, Any], reply_within_s: float = 0.0) -> Dict[str, Any]:
        with self._cond:
            if self._closed is not None:
                raise ConnectionClosed(self._closed)
            self._msgid = self._msgid % MSGID_MAX + 1
            msgid = self._msgid
            self._waiting.add(msgid)
        try:
            self._send(pack_request(msgid, method, args))
            timeout = self.call_timeout + reply_within_s
            deadline = time.monotonic() + timeout
            with self._cond:
                while msgid not in self._responses:
                    if self._closed is not None:
                        raise ConnectionClosed(self._closed)
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError("%s: no answer from the engine within %.1f s"
                                           % (method, timeout))
                    self._cond.wait(left)
                error, result = self._responses.pop(msgid)
        finally:
            with self._cond:
                self._waiting.discard(msgid)    # a late answer is then dropped
        if error is not None:
            raise VigilError.from_wire(error, method)
        return result_map(result)

    def notify(self, method: str, **args: Any) -> None:
        """Sends a call that wants no answer (``[2, method, params]``). If it
        fails, the engine's ``vigil.error`` lands in :attr:`engine_errors`."""
        self._send(pack_notification(method, args))

    # --- notifications -------------------------------------------------------

    def wait(self, timeout: Optional[float] = None) -> Optional[Notification]:
        """The next notification of any session of this connection, in
        arrival order; blocks up to timeout seconds (None: until one comes)
        and returns None if none came. Raises ConnectionClosed when the
        connection is gone and nothing is left to take."""
        return self._take(None, timeout)

    def _take(self, session: Optional[str], timeout: Optional[float]) -> Optional[Notification]:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                n = self._inbox.take(session)
                if n is not None:
                    break
                if self._closed is not None:
                    raise ConnectionClosed(self._closed)
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(left)
            cursor = self._sessions.get(n.session)
        if cursor is not None:
            cursor._handed(n)
        return n

    # --- sessions ------------------------------------------------------------

    def session(self, name: Optional[str] = None, *, last_seq: Optional[int] = None,
                linger_ms: Optional[int] = None, auto_ack: bool = True) -> "Session":
        """Opens (creates or joins) a named session and returns it. With
        ``last_seq`` (a cursor the application stored) every kept
        notification after it is sent first. Without a name the engine
        makes one up (``ses_...``)."""
        s = Session(self, name, last_seq=last_seq, linger_ms=linger_ms, auto_ack=auto_ack)
        s.open()
        return s

    def _register(self, s: "Session") -> None:
        with self._cond:
            assert s.name is not None
            self._sessions.pop(s.name, None)    # last opened is the current one: last
            self._sessions[s.name] = s


class Session(SessionCursor, Methods[Dict[str, Any]]):
    """A named session on a :class:`Client`: every method acts on it, and
    it keeps the resume cursor (cursor.py)."""

    def __init__(self, client: Client, name: Optional[str], *, last_seq: Optional[int] = None,
                 linger_ms: Optional[int] = None, auto_ack: bool = True):
        SessionCursor.__init__(self, name, last_seq, auto_ack)
        self.client = client
        self.linger_ms = linger_ms

    def _call(self, method: str, args: Dict[str, Any], reply_within_s: float = 0.0) -> Dict[str, Any]:
        if method != "session_open":
            args.setdefault("session", self.name)
        return self.client._call(method, args, reply_within_s)

    def open(self) -> Dict[str, Any]:
        """``session_open`` with the cursor: what was pushed after
        ``last_seq`` comes again first. :meth:`Client.session` and
        :meth:`Client.reconnect` call it."""
        result = self.client.session_open(session=self.name, last_seq=self.last_seq,
                                          linger_ms=self.linger_ms)
        self._opened(result)
        self.client._register(self)
        return result

    def wait(self, timeout: Optional[float] = None) -> Optional[Notification]:
        """The next notification of this session (None after timeout
        seconds); with ``auto_ack`` it is handled from here on."""
        return self.client._take(self.name, timeout)

    def busy(self) -> Dict[str, Any]:
        """The agent's turn begins: idle notifications wait."""
        return self.session_state("busy")

    def idle(self) -> Dict[str, Any]:
        """The agent's turn ends: the held notifications are pushed
        (``delivered`` says how many)."""
        return self.session_state("idle")


class Engine(Client):
    """An embedded engine: ``vigild --stdio`` as this process's child, and
    the one connection to it. Closing it (or this process ending) closes
    the engine's stdin, and the engine stops every monitor and exits."""

    process: "subprocess.Popen[bytes]"

    @classmethod
    def spawn(cls, vigild: Optional[str] = None, config: Optional[Union[str, "os.PathLike[str]"]] = None,
              args: Sequence[str] = (), *, env: Optional[Mapping[str, str]] = None,
              cwd: Optional[str] = None, stderr: Any = None,
              call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
              max_backlog: int = DEFAULT_MAX_BACKLOG) -> "Engine":
        """Starts ``vigild --stdio [--config CONFIG] ARGS...`` and checks it
        answers. ``vigild``: its path, or a name looked up on PATH (default
        ``$VIGIL_VIGILD``, else ``vigild``). Without a config vigild looks
        one up as the CLI does ($VIGIL_CONFIG, ~/.config/vigil/vigil.lua, the
        bundled one); ``args=["--no-config"]`` denies every start (fail
        closed). ``stderr`` is where the engine
        logs (default: this process's stderr; ``subprocess.DEVNULL``...);
        ``env`` and ``cwd`` are the engine's."""
        argv = [find_vigild(vigild), "--stdio"]
        if config is not None:
            argv += ["--config", os.fspath(config)]
        argv += list(args)
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                env=dict(env) if env is not None else None, cwd=cwd)
        assert proc.stdout is not None and proc.stdin is not None
        engine = cls(_PipeTransport(proc.stdout, proc.stdin), call_timeout=call_timeout,
                     max_backlog=max_backlog)
        engine.process = proc
        try:
            engine.ping()
        except ConnectionClosed:
            status = engine.close()
            raise ConnectionClosed("vigild exited with status %s before answering (%s); its "
                                   "log on stderr says why" % (status, " ".join(argv))) from None
        return engine

    @property
    def pid(self) -> int:
        """The engine's process id."""
        return self.process.pid

    def close(self, timeout: float = DEFAULT_CLOSE_TIMEOUT_S) -> Optional[int]:  # type: ignore[override]
        """Closes the engine's stdin and waits (up to timeout seconds) for
        it to stop its monitors and exit; kills it after that. Returns its
        exit status (0 after a normal shutdown)."""
        self._shutdown("closed by this client")
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout)
        self._transport.close()
        return self.process.returncode
