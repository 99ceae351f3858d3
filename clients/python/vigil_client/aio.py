"""The asyncio client: the same shape as the sync one (client.py), awaited.

``await AsyncClient.connect(path)`` reaches an engine on its Unix socket;
``await AsyncEngine.spawn(...)`` starts ``vigild --stdio`` as a child;
``await AsyncClient.connect_nats(url, engine)`` reaches one through a NATS
server (rpc_nats.py). The NATS client of this package is synchronous, so
over NATS a thread of the client's own reads the answers and hands each to
the loop (``call_soon_threadsafe``), and requests are published from the
loop's default executor, one at a time and in order.
Every protocol method is a coroutine method with the same keyword arguments
as the sync client's (methods.py); ``await client.wait(timeout)`` and
``await session.wait(timeout)`` take the next notification. One task reads
the connection: it resolves each call's future by msgid and keeps pushed
notifications in the bounded inbox (inbox.py) until they are taken.
Everything runs on the loop that made the client; it is not thread-safe.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections import deque
from typing import Any, Awaitable, Deque, Dict, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from .client import (CONNECT_RETRY_S, DEFAULT_CALL_TIMEOUT_S, DEFAULT_CLOSE_TIMEOUT_S,
                     ENGINE_ERRORS_KEPT, NATS_RECONNECT_RETRY_S, Client)
from .cursor import SessionCursor
from .endpoint import check_server_uid, check_socket_path, default_socket_path, find_vigild
from .errors import ConnectionClosed, EngineUnavailable, NotFound, VigilError
from .inbox import DEFAULT_MAX_BACKLOG, Inbox
from .methods import Methods
from .nats_wire import DEFAULT_CONNECT_TIMEOUT_S
from .notification import Notification
from .rpc_nats import DEFAULT_INBOX_PREFIX, NatsRpc, lost_virtual_session, no_notifications
from .wire import MSGID_MAX, READ_CHUNK_BYTES, Push, Response, classify, feed, new_unpacker, \
    pack_notification, pack_request, result_map

AsyncClientT = TypeVar("AsyncClientT", bound="AsyncClient")


async def _open_socket(path: str, wait_s: float) -> Tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Streams connected to the engine at path, its server's uid checked
    before anything is sent. Tries again for wait_s seconds while nothing
    listens there yet."""
    check_socket_path(path)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        try:
            reader, writer = await asyncio.open_unix_connection(path)
            break
        except (FileNotFoundError, ConnectionRefusedError) as err:
            if loop.time() >= deadline:
                raise ConnectionClosed("cannot connect to the engine at %s: %s (is vigild "
                                       "running? it listens there by default)"
                                       % (path, err.strerror)) from None
        await asyncio.sleep(CONNECT_RETRY_S)    # the engine is starting
    try:
        check_server_uid(writer.get_extra_info("socket"), path)
    except BaseException:
        writer.close()
        raise
    return reader, writer


class AsyncClient(Methods[Awaitable[Dict[str, Any]]]):
    """A msgpack-rpc connection to vigild for asyncio. Use ``async with``,
    or ``await close()``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
                 max_backlog: int = DEFAULT_MAX_BACKLOG):
        self._setup(call_timeout, max_backlog)
        self._start(reader, writer)

    def _setup(self, call_timeout: float, max_backlog: int) -> None:
        self.call_timeout = call_timeout
        self._inbox = Inbox(max_backlog)
        self._futures: Dict[int, "asyncio.Future[Tuple[Any, Any]]"] = {}
        self._msgid = 0
        self._closed: Optional[str] = None
        self._changed = asyncio.Event()         # set (and replaced) when anything arrives
        self._write_lock = asyncio.Lock()
        self._sessions: Dict[str, "AsyncSession"] = {}
        self._path: Optional[str] = None
        self._nats: Optional[NatsRpc] = None     # the transport of connect_nats
        self._generation = 0                     # which NATS reader thread is the current one
        self.engine_errors: Deque[VigilError] = deque(maxlen=ENGINE_ERRORS_KEPT)
        """Failures of calls sent with :meth:`notify` (``vigil.error``)."""

    # --- the connection ------------------------------------------------------

    @classmethod
    async def connect(cls, path: Optional[str] = None, *, wait_s: float = 0.0,
                      call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
                      max_backlog: int = DEFAULT_MAX_BACKLOG) -> "AsyncClient":
        """Connects to the engine listening at path (default: the engine's
        default socket); see :meth:`Client.connect`."""
        path = path or default_socket_path()
        reader, writer = await _open_socket(path, wait_s)
        client = cls(reader, writer, call_timeout=call_timeout, max_backlog=max_backlog)
        client._path = path
        return client

    @classmethod
    async def connect_nats(cls, url: str, engine: str, *, session: Optional[str] = None,
                           client_id: Optional[str] = None,
                           inbox_prefix: str = DEFAULT_INBOX_PREFIX, user: Optional[str] = None,
                           password: Optional[str] = None, token: Optional[str] = None,
                           creds: Any = None, nkey_seed: Any = None, tls_ca: Any = None,
                           tls_cert: Any = None, tls_key: Any = None, name: Optional[str] = None,
                           connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
                           call_timeout: float = DEFAULT_CALL_TIMEOUT_S) -> "AsyncClient":
        """Reaches an engine through a NATS server; the arguments, errors
        and limits are :meth:`Client.connect_nats`'s. Notifications do not
        come (``wait`` raises): read them with ``FleetSubscriber``."""
        loop = asyncio.get_running_loop()
        transport = await loop.run_in_executor(None, functools.partial(
            NatsRpc, url, engine, session=session, client_id=client_id,
            inbox_prefix=inbox_prefix, user=user, password=password, token=token, creds=creds,
            nkey_seed=nkey_seed, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key, name=name,
            connect_timeout=connect_timeout))
        client = cls.__new__(cls)
        client._setup(call_timeout, DEFAULT_MAX_BACKLOG)
        client._nats = transport
        client._start_nats(transport)
        return client

    @property
    def nats(self) -> Optional[NatsRpc]:
        """The NATS transport of a client made by :meth:`connect_nats`
        (see :attr:`Client.nats`); None otherwise."""
        return self._nats

    def _start_nats(self, transport: NatsRpc) -> None:
        """Starts the thread that reads the answers and hands each to this
        loop; ``self._task`` is done once that thread has ended."""
        loop = asyncio.get_running_loop()
        self._closed = None
        self._generation += 1
        generation = self._generation
        done: "asyncio.Future[None]" = loop.create_future()
        self._task = done

        def to_loop(fn: Any, *args: Any) -> None:
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:        # the loop is closed: nobody waits any more
                pass

        def dispatch(msg: Any) -> None:
            to_loop(self._dispatch, msg)

        def fail(msgid: int, error: BaseException) -> None:
            to_loop(self._fail_call, msgid, error)

        def ended(reason: str) -> None:
            if self._generation == generation:
                self._set_closed(reason)
            if not done.done():
                done.set_result(None)

        def run() -> None:
            to_loop(ended, transport.pump(dispatch, fail))

        threading.Thread(target=run, name="vigil-aio-nats-reader", daemon=True).start()

    def _fail_call(self, msgid: int, error: BaseException) -> None:
        """The call msgid fails with error (no answer will come for it)."""
        fut = self._futures.get(msgid)
        if fut is not None and not fut.done():
            fut.set_exception(error)

    def _start(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._closed = None
        self._task = asyncio.get_running_loop().create_task(self._read_loop(reader, writer))

    async def _read_loop(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        unpacker = new_unpacker()
        reason = "the engine closed the connection"
        try:
            while True:
                data = await reader.read(READ_CHUNK_BYTES)
                if not data:
                    break
                overflow = feed(unpacker, data, self._dispatch)
                if overflow:
                    reason = overflow
                    writer.close()
                    break
        except Exception as err:        # OSError, or bytes that are not msgpack
            reason = "the connection to the engine failed: %s" % err
        if self._writer is writer:
            self._set_closed(reason)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _set_closed(self, reason: str) -> None:
        if self._closed is None:
            self._closed = reason
        for fut in self._futures.values():
            if not fut.done():
                fut.set_exception(ConnectionClosed(self._closed))
        self._wake()

    def _dispatch(self, msg: Any) -> Optional[str]:
        """Files one message; returns why to close the connection, if so."""
        kind = classify(msg)
        if isinstance(kind, Response):
            fut = self._futures.get(kind.msgid)
            if fut is not None and not fut.done():
                fut.set_result((kind.error, kind.result))
        elif isinstance(kind, Push) and kind.method == "vigil.notification":
            params = kind.params
            if isinstance(params, list) and params and isinstance(params[0], Mapping):
                if not self._inbox.put(Notification.from_map(params[0])):
                    reason = ("closed: %d notifications were waiting to be taken (max_backlog "
                              "%d); take them with wait(), then reconnect() to resume"
                              % (len(self._inbox), self._inbox.max_backlog))
                    self._set_closed(reason)
                    return reason
                self._wake()
        elif isinstance(kind, Push) and kind.method == "vigil.error":
            self.engine_errors.append(VigilError.from_wire(kind.params))
        return None

    async def _send(self, data: bytes, msgid: Optional[int] = None) -> None:
        async with self._write_lock:
            if self._closed is not None:
                raise ConnectionClosed(self._closed)
            if self._nats is not None:
                # A blocking send (a broker that stopped reading) must not
                # stop the loop; the lock keeps the requests in order.
                try:
                    await asyncio.get_running_loop().run_in_executor(
                        None, self._nats.send, data, msgid)
                except OSError as err:
                    raise ConnectionClosed("cannot send to the NATS server: %s" % err) from None
                return
            try:
                self._writer.write(data)
                await self._writer.drain()
            except (OSError, RuntimeError) as err:
                raise ConnectionClosed("cannot send to the engine: %s" % err) from None

    async def _close_connection(self, timeout: float) -> None:
        self._set_closed("closed by this client")
        if self._nats is not None:
            self._nats.shutdown()           # wakes the reader thread
        else:
            self._writer.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            self._task.cancel()
        if self._nats is not None:
            self._nats.close()

    async def close(self) -> None:
        """Closes the connection (see :meth:`Client.close`)."""
        await self._close_connection(DEFAULT_CLOSE_TIMEOUT_S)

    @property
    def closed(self) -> Optional[str]:
        """Why the connection is closed, or None while it is open."""
        return self._closed

    async def __aenter__(self: AsyncClientT) -> AsyncClientT:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def reconnect(self, *, wait_s: float = 10.0) -> None:
        """Connects again and resumes every session opened with
        :meth:`session` after its cursor (see :meth:`Client.reconnect`)."""
        nats = self._nats
        if nats is not None:
            await self.close()
            await asyncio.get_running_loop().run_in_executor(
                None, Client._reconnect_nats, nats, wait_s)
            self._futures.clear()
            self._start_nats(nats)
            await self._wait_engine(wait_s)
        elif self._path is not None:
            await self.close()
            reader, writer = await _open_socket(self._path, wait_s)
            self._futures.clear()
            for name in self._sessions:
                self._inbox.discard(name)           # sent again after the cursor
            self._start(reader, writer)
        else:
            raise RuntimeError("reconnect: only a client made by AsyncClient.connect or "
                               "connect_nats can reconnect (an embedded engine ends with its "
                               "connection)")
        for s in list(self._sessions.values()):
            await s.open()

    async def _wait_engine(self, wait_s: float) -> None:
        """Pings until the engine answers, for wait_s seconds at most (see
        Client._wait_engine)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            try:
                await self.ping()
                return
            except EngineUnavailable:
                if loop.time() >= deadline:
                    raise
            await asyncio.sleep(NATS_RECONNECT_RETRY_S)

    # --- calls ---------------------------------------------------------------

    async def _call(self, method: str, args: Dict[str, Any],
                    reply_within_s: float = 0.0) -> Dict[str, Any]:
        if self._closed is not None:
            raise ConnectionClosed(self._closed)
        self._msgid = self._msgid % MSGID_MAX + 1
        msgid = self._msgid
        fut: "asyncio.Future[Tuple[Any, Any]]" = asyncio.get_running_loop().create_future()
        self._futures[msgid] = fut
        timeout = self.call_timeout + reply_within_s
        try:
            await self._send(pack_request(msgid, method, args), msgid)
            error, result = await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise TimeoutError("%s: no answer from the engine within %.1f s"
                               % (method, timeout)) from None
        except VigilError as err:           # failed before an answer (rpc_nats.py)
            err.method = err.method or method
            raise
        finally:
            self._futures.pop(msgid, None)      # a late answer is then dropped
        if error is not None:
            raise VigilError.from_wire(error, method)
        return result_map(result)

    async def notify(self, method: str, **args: Any) -> None:
        """Sends a call that wants no answer; failures land in
        :attr:`engine_errors`."""
        await self._send(pack_notification(method, args))

    # --- notifications -------------------------------------------------------

    async def wait(self, timeout: Optional[float] = None) -> Optional[Notification]:
        """The next notification of any session of this connection; None
        after timeout seconds (None: wait until one comes)."""
        return await self._take(None, timeout)

    async def _take(self, session: Optional[str], timeout: Optional[float]) -> Optional[Notification]:
        if self._nats is not None:
            raise no_notifications(self._nats)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            n = self._inbox.take(session)
            if n is not None:
                break
            if self._closed is not None:
                raise ConnectionClosed(self._closed)
            changed = self._changed
            if deadline is None:
                await changed.wait()
                continue
            left = deadline - loop.time()
            if left <= 0:
                return None
            try:
                await asyncio.wait_for(changed.wait(), left)
            except asyncio.TimeoutError:
                pass
        cursor = self._sessions.get(n.session)
        if cursor is not None:
            cursor._handed(n)
        return n

    # --- sessions ------------------------------------------------------------

    async def session(self, name: Optional[str] = None, *, last_seq: Optional[int] = None,
                      linger_ms: Optional[int] = None, auto_ack: bool = True) -> "AsyncSession":
        """Opens a named session and returns it (see :meth:`Client.session`)."""
        if name is None and self._nats is not None:
            name = self._nats.session
        s = AsyncSession(self, name, last_seq=last_seq, linger_ms=linger_ms, auto_ack=auto_ack)
        await s.open()
        return s

    def _register(self, s: "AsyncSession") -> None:
        assert s.name is not None
        self._sessions.pop(s.name, None)
        self._sessions[s.name] = s


class AsyncSession(SessionCursor, Methods[Awaitable[Dict[str, Any]]]):
    """A named session on an :class:`AsyncClient` (see :class:`Session`)."""

    def __init__(self, client: AsyncClient, name: Optional[str], *,
                 last_seq: Optional[int] = None, linger_ms: Optional[int] = None,
                 auto_ack: bool = True):
        SessionCursor.__init__(self, name, last_seq, auto_ack)
        self.client = client
        self.linger_ms = linger_ms

    def _call(self, method: str, args: Dict[str, Any],
              reply_within_s: float = 0.0) -> Awaitable[Dict[str, Any]]:
        if method != "session_open":
            args.setdefault("session", self.name)
        if self.client._nats is None:
            return self.client._call(method, args, reply_within_s)
        return self._call_nats(method, args, reply_within_s)

    async def _call_nats(self, method: str, args: Dict[str, Any],
                         reply_within_s: float) -> Dict[str, Any]:
        """A call over NATS, the session opened again when the engine had
        closed this client's idle virtual connection (see Session._call)."""
        try:
            result = await self.client._call(method, args, reply_within_s)
        except NotFound as err:
            if not lost_virtual_session(err, self, args):
                raise
            await self.open()
            result = await self.client._call(method, args, reply_within_s)
        self._track_close(method, args)
        return result

    async def open(self) -> Dict[str, Any]:
        """``session_open`` with the cursor (see :meth:`Session.open`)."""
        result = await self.client.session_open(session=self.name, last_seq=self.last_seq,
                                                linger_ms=self.linger_ms)
        self._opened(result)
        self.client._register(self)
        return result

    async def wait(self, timeout: Optional[float] = None) -> Optional[Notification]:
        """The next notification of this session, or None after timeout."""
        return await self.client._take(self.name, timeout)

    async def busy(self) -> Dict[str, Any]:
        """The agent's turn begins: idle notifications wait."""
        return await self.session_state("busy")

    async def idle(self) -> Dict[str, Any]:
        """The agent's turn ends: the held notifications are pushed."""
        return await self.session_state("idle")


class AsyncEngine(AsyncClient):
    """An embedded engine for asyncio (see :class:`Engine`)."""

    process: "asyncio.subprocess.Process"

    @classmethod
    async def spawn(cls, vigild: Optional[str] = None,
                    config: Optional[Union[str, "os.PathLike[str]"]] = None,
                    args: Sequence[str] = (), *, env: Optional[Mapping[str, str]] = None,
                    cwd: Optional[str] = None, stderr: Any = None,
                    call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
                    max_backlog: int = DEFAULT_MAX_BACKLOG) -> "AsyncEngine":
        """Starts ``vigild --stdio`` (see :meth:`Engine.spawn`)."""
        argv = [find_vigild(vigild), "--stdio"]
        if config is not None:
            argv += ["--config", os.fspath(config)]
        argv += list(args)
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
            env=dict(env) if env is not None else None, cwd=cwd)
        assert proc.stdout is not None and proc.stdin is not None
        engine = cls(proc.stdout, proc.stdin, call_timeout=call_timeout, max_backlog=max_backlog)
        engine.process = proc
        try:
            await engine.ping()
        except ConnectionClosed:
            status = await engine.close()
            raise ConnectionClosed("vigild exited with status %s before answering (%s); its "
                                   "log on stderr says why" % (status, " ".join(argv))) from None
        return engine

    @property
    def pid(self) -> int:
        """The engine's process id."""
        return self.process.pid

    async def close(self, timeout: float = DEFAULT_CLOSE_TIMEOUT_S) -> Optional[int]:  # type: ignore[override]
        """Closes the engine's stdin, waits for it to stop its monitors and
        exit (killing it after timeout seconds); returns its exit status."""
        self._set_closed("closed by this client")
        self._writer.close()
        try:
            await asyncio.wait_for(self.process.wait(), timeout)
        except asyncio.TimeoutError:
            self.process.kill()
            await self.process.wait()
        await self._close_connection(timeout)
        return self.process.returncode
