"""The synchronous client: a connection to vigild, and its sessions.

``Client.connect(path)`` reaches an engine that listens on a Unix socket;
``Engine.spawn(...)`` starts ``vigild --stdio`` as a child and talks over its
pipes (closing the connection ends the engine and everything it started);
``Client.connect_nats(url, engine)`` reaches an engine on another machine
through a NATS server, by request-reply (rpc_nats.py, docs/fleet.md
section 6), where notifications do not come: a fleet reads them from
JetStream with ``FleetSubscriber``.
Each way one background thread reads the connection: it matches answers
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
from typing import (IO, TYPE_CHECKING, Any, Callable, Deque, Dict, Mapping, Optional, Sequence,
                    Set, Tuple, TypeVar, Union)

from .cursor import SessionCursor
from .endpoint import check_server_uid, check_socket_path, default_socket_path, find_vigild
from .errors import ConnectionClosed, EngineUnavailable, NotFound, VigilError
from .inbox import DEFAULT_MAX_BACKLOG, Inbox
from .methods import Methods
from .nats_wire import (CONNECT_IDENTITY_OPTIONS, CONNECT_TLS_OPTIONS, DEFAULT_CONNECT_TIMEOUT_S,
                        NatsAuthError, NatsConnectionError)
from .notification import Notification
from .rpc_nats import DEFAULT_INBOX_PREFIX, NatsRpc, lost_virtual_session, no_notifications
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

# How often reconnect(wait_s=...) of a NATS client tries the server again.
NATS_RECONNECT_RETRY_S = 0.2

if TYPE_CHECKING:
    from .fleet import FleetSubscriber

ClientT = TypeVar("ClientT", bound="Client")


class _StreamTransport:
    """What a socket and an engine's pipes share: a byte stream of frames,
    read by ``pump`` on the client's reader thread."""

    def recv(self) -> bytes:
        raise NotImplementedError

    def shutdown(self) -> None:
        raise NotImplementedError

    def pump(self, dispatch: Callable[[Any], Optional[str]],
             fail: Callable[[int, BaseException], None]) -> str:
        """Reads and hands on each whole message until the stream ends (or
        dispatch gives a reason to close it); returns why it ended. A
        stream has no per-call failure: ``fail`` is for transports that
        have one (NatsRpc)."""
        unpacker = new_unpacker()
        try:
            while True:
                data = self.recv()
                if not data:
                    return "the engine closed the connection"
                overflow = feed(unpacker, data, dispatch)
                if overflow:
                    self.shutdown()
                    return overflow
        except Exception as err:        # OSError, or bytes that are not msgpack
            return "the connection to the engine failed: %s" % err


class _SocketTransport(_StreamTransport):
    """A connected Unix socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def recv(self) -> bytes:
        return self.sock.recv(READ_CHUNK_BYTES)

    def send(self, data: bytes, msgid: Optional[int] = None) -> None:
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


class _PipeTransport(_StreamTransport):
    """An embedded engine's stdout (read) and stdin (write)."""

    def __init__(self, stdout: IO[bytes], stdin: IO[bytes]):
        self.stdout, self.stdin = stdout, stdin
        self.rfd, self.wfd = stdout.fileno(), stdin.fileno()

    def recv(self) -> bytes:
        return os.read(self.rfd, READ_CHUNK_BYTES)

    def send(self, data: bytes, msgid: Optional[int] = None) -> None:
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


_Transport = Union[_SocketTransport, _PipeTransport, NatsRpc]


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
        # (error, result) of an answer, or the exception a call failed with
        # before any answer could come (a transport's fail, rpc_nats.py).
        self._responses: Dict[int, Union[Tuple[Any, Any], BaseException]] = {}
        self._waiting: Set[int] = set()         # msgids whose answer someone awaits
        self._msgid = 0
        self._closed: Optional[str] = None      # why the connection is closed
        self._sessions: Dict[str, "Session"] = {}   # opened with session(), in open order
        self._path: Optional[str] = None
        self._nats: Optional[NatsRpc] = None     # the transport of connect_nats
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

    @classmethod
    def connect_nats(cls, url: str, engine: str, *, session: Optional[str] = None,
                     client_id: Optional[str] = None,
                     inbox_prefix: str = DEFAULT_INBOX_PREFIX, user: Optional[str] = None,
                     password: Optional[str] = None, token: Optional[str] = None,
                     creds: Any = None, nkey_seed: Any = None, tls_ca: Any = None,
                     tls_cert: Any = None, tls_key: Any = None, name: Optional[str] = None,
                     connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
                     call_timeout: float = DEFAULT_CALL_TIMEOUT_S) -> "Client":
        """Reaches the engine ``vigild --nats-engine ENGINE`` through the
        NATS server at url (``nats://[user:password@ | token@]host[:port]``
        or ``tls://...``; or give ``user``/``password``, ``token``,
        ``creds`` (a creds file's path) or ``nkey_seed`` (a user seed
        file's path), and ``tls_ca``, ``tls_cert``, ``tls_key`` for TLS:
        :meth:`NatsConnection.connect`), by request-reply on
        ``vigil.<engine>.rpc``, or with ``session`` on that session's own
        subject, which serves that session alone (docs/fleet.md, section 6).

        Every method works as over the socket, except that notifications
        do not come here: ``wait`` raises, and a fleet reads them from
        JetStream with :class:`FleetSubscriber` (:meth:`fleet_subscriber`
        makes one for the same server and engine). ``client_id`` is the
        ``Vigil-Client`` header (default: one made up for this client),
        which keeps the sessions this client opened open between its
        calls; ``inbox_prefix`` is where answers come (``_INBOX_<user>``
        for a user who may subscribe only there).

        Nothing is sent to the engine yet: a first call to an engine that
        is not there raises :class:`EngineUnavailable` at once. Raises
        NatsConnectionError (unreachable server), NatsAuthError (refused
        credentials; NatsTLSError, a certificate refused), NatsPermissionError
        (a user who may not read its inbox), ValueError (a bad argument, or
        a creds, seed or PEM file that cannot be used, named) or ImportError
        (creds or nkey_seed without the cryptography package)."""
        transport = NatsRpc(url, engine, session=session, client_id=client_id,
                            inbox_prefix=inbox_prefix, user=user, password=password,
                            token=token, creds=creds, nkey_seed=nkey_seed, tls_ca=tls_ca,
                            tls_cert=tls_cert, tls_key=tls_key, name=name,
                            connect_timeout=connect_timeout)
        client = cls(transport, call_timeout=call_timeout)
        client._nats = transport
        return client

    @property
    def nats(self) -> Optional[NatsRpc]:
        """The NATS transport of a client made by :meth:`connect_nats` (its
        ``subject``, ``client_id``, ``inbox``, ``max_payload`` and
        ``counters``); None for a socket or an embedded engine."""
        return self._nats

    def fleet_subscriber(self, durable: str, **kwargs: Any) -> "FleetSubscriber":
        """A :class:`FleetSubscriber` for the notifications of what this
        client reaches: the same NATS server, credentials and TLS options
        (unless given here), the filter
        narrowed to its engine (and session, for a session's subject).
        ``kwargs`` are FleetSubscriber's (``cursor=``, ``ack_wait_s=``...)
        and may widen or change the filter."""
        nats = self._nats
        if nats is None:
            raise RuntimeError("fleet_subscriber: only a client made by Client.connect_nats "
                               "knows a NATS server")
        kwargs.setdefault("engine", nats.engine)
        kwargs.setdefault("session", nats.session or "*")
        # The same user, unless kwargs name another way to be one (two
        # would be refused); the same TLS options, each unless given.
        if not any(kwargs.get(key) is not None for key in CONNECT_IDENTITY_OPTIONS):
            for key in CONNECT_IDENTITY_OPTIONS:
                kwargs.setdefault(key, nats._auth[key])
        for key in CONNECT_TLS_OPTIONS:
            kwargs.setdefault(key, nats._auth[key])
        kwargs.setdefault("inbox_prefix", nats.inbox_prefix)
        from .fleet import FleetSubscriber
        return FleetSubscriber(nats._url, durable, **kwargs)

    def _start(self, transport: _Transport) -> None:
        self._transport = transport
        self._closed = None
        self._reader = threading.Thread(target=self._read_loop, args=(transport,),
                                        name="vigil-client-reader", daemon=True)
        self._reader.start()

    def _read_loop(self, transport: _Transport) -> None:
        reason = transport.pump(self._dispatch, self._fail_call)
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

    def _fail_call(self, msgid: int, error: BaseException) -> None:
        """The call msgid fails with error (no answer will come for it)."""
        with self._cond:
            if msgid in self._waiting:
                self._responses[msgid] = error
                self._cond.notify_all()

    def _send(self, data: bytes, msgid: Optional[int] = None) -> None:
        with self._send_lock:
            if self._closed is not None:
                raise ConnectionClosed(self._closed)
            try:
                self._transport.send(data, msgid)
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
        application has not taken yet comes again, nothing twice.

        A client of :meth:`connect_nats` connects again to the NATS server
        (same subject, same client id), waits until the engine answers,
        then reopens its sessions; ``wait_s`` bounds each of the two waits
        (ConnectionClosed, then EngineUnavailable, when it passes)."""
        if self._nats is not None:
            self.close()
            self._reconnect_nats(self._nats, wait_s)
            transport: _Transport = self._nats
        elif self._path is not None:
            self.close()
            transport = _SocketTransport(_connect_socket(self._path, wait_s))
        else:
            raise RuntimeError("reconnect: only a client made by Client.connect or "
                               "Client.connect_nats can reconnect (an embedded engine ends "
                               "with its connection)")
        with self._cond:
            self._responses.clear()
            self._waiting.clear()
            for name in self._sessions:
                self._inbox.discard(name)       # sent again after the cursor
        self._start(transport)
        if self._nats is not None:
            self._wait_engine(wait_s)
        for s in list(self._sessions.values()):
            s.open()

    def _wait_engine(self, wait_s: float) -> None:
        """Pings until the engine answers (an engine that lost the broker
        too subscribes again once it is back), for wait_s seconds at most;
        then raises the last EngineUnavailable."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.ping()
                return
            except EngineUnavailable:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(NATS_RECONNECT_RETRY_S)

    @staticmethod
    def _reconnect_nats(nats: NatsRpc, wait_s: float) -> None:
        """Connects the NATS transport again, trying for wait_s seconds
        while the server does not accept (restarting); refused credentials
        are not tried again."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                nats.reconnect()
                return
            except NatsAuthError:
                raise
            except NatsConnectionError as err:
                if time.monotonic() >= deadline:
                    raise ConnectionClosed("cannot reconnect to the NATS server %s: %s"
                                           % (nats.url, err)) from None
            time.sleep(NATS_RECONNECT_RETRY_S)

    # --- calls ---------------------------------------------------------------

    def _call(self, method: str, args: Dict[str, Any], reply_within_s: float = 0.0) -> Dict[str, Any]:
        with self._cond:
            if self._closed is not None:
                raise ConnectionClosed(self._closed)
            self._msgid = self._msgid % MSGID_MAX + 1
            msgid = self._msgid
            self._waiting.add(msgid)
        try:
            try:
                self._send(pack_request(msgid, method, args), msgid)
            except VigilError as err:           # refused before sending (a size bound)
                err.method = err.method or method
                raise
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
                entry = self._responses.pop(msgid)
        finally:
            with self._cond:
                self._waiting.discard(msgid)    # a late answer is then dropped
        if isinstance(entry, BaseException):
            if isinstance(entry, VigilError):
                entry.method = entry.method or method
            raise entry
        error, result = entry
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
        if self._nats is not None:
            raise no_notifications(self._nats)
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
        makes one up (``ses_...``), except on a session's own NATS
        subject (``connect_nats(session=)``), where it is that session."""
        if name is None and self._nats is not None:
            name = self._nats.session
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
        try:
            result = self.client._call(method, args, reply_within_s)
        except NotFound as err:
            if self.client._nats is None or not lost_virtual_session(err, self, args):
                raise
            # The engine closed this client's idle virtual connection, and
            # the session with it (nothing was carried out): open it again.
            self.open()
            result = self.client._call(method, args, reply_within_s)
        self._track_close(method, args)
        return result

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
        ``$VIGIL_VIGILD``, else ``vigild``). Without a config every start is
        denied (the engine fails closed). ``stderr`` is where the engine
        logs (default: this process's stderr; ``subprocess.DEVNULL``...):
        embedded, only its warnings and errors unless ``VIGIL_LOG=info`` is
        in its environment;
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
