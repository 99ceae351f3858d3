"""The NATS request-reply transport: a client's calls to a remote engine.

An engine started with ``--nats URL --nats-engine NAME`` answers the
socket's msgpack-rpc frames by NATS request-reply (docs/fleet.md, section
6) on ``vigil.<engine>.rpc`` (every method) and ``vigil.<engine>.<session
token>.rpc`` (that session alone). This transport carries a client's
calls there: each request frame is published on the subject with a reply
subject ``<inbox>.<msgid>`` under an inbox of this transport's own
(``<inbox_prefix>.<random>``, one wildcard subscription), and a header
``Vigil-Client`` that stays the same for the client's life, so the
engine's virtual connection for it keeps the sessions it opened.

Answers come back one message each and are hostile input: the reply
subject says which call a message answers, and its payload must be one
whole response frame for that msgid (or msgid 0, which the engine uses
for a refusal of a frame it could not read), with an error of the
protocol's shape or a result map. Anything else fails that call with an
``internal`` VigilError saying what was wrong, and is counted; nothing an
answer holds can crash the reader or leave a call waiting past its
timeout. A "no responders" status (nobody subscribes to the subject: no
such engine, or it is not connected) fails the call at once with
:class:`EngineUnavailable`. A publish the server refuses for want of
permission fails the oldest call still waiting (the server refuses
publishes in the order they came).

Notifications are not carried: the engine drops those pushed to a
virtual connection, and a fleet reads them from JetStream with
``FleetSubscriber`` (fleet.py).

Threads: ``send`` may be called from any thread; ``pump`` runs on one
reader thread (the sync client's, or a thread of the asyncio client's)
and hands each answer on through callbacks until the connection ends.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Tuple

# wire first: when msgpack is missing, its ImportError says how to get it.
from .wire import msgpack
from .errors import EngineUnavailable, Internal, LimitExceeded, VigilError
from .fleet import ENGINE_RE, session_token
from .nats_wire import (DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_INBOX_PREFIX, Msg, NatsConnection,
                        NatsConnectionError, NatsError, NatsPermissionError, check_inbox_prefix,
                        check_subject, encode_headers)

CLIENT_HEADER = "Vigil-Client"

# docs/fleet.md, section 6: the requester's id.
CLIENT_ID_RE = re.compile(r"^[A-Za-z0-9_:.-]{1,64}$")


# How many published calls not answered yet are remembered, in publish
# order: an answer is taken only for one of them (any other is a stray), and
# a permission refusal fails the oldest. Each is forgotten once answered;
# what stays is calls still waiting (the engine lets a requester have
# rpc.max_pending, 64 by default, waiting) and calls that timed out, whose
# memory this bounds: a call forgotten here ends at its own timeout.
PUBLISHED_KEPT_MAX = 4096

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# A reply subject's last token: the msgid, decimal.
_MSGID_TOKEN_RE = re.compile(r"^[0-9]{1,10}$")

Dispatch = Callable[[Any], Optional[str]]
Fail = Callable[[int, BaseException], None]


def _random(n: int) -> str:
    return "".join(_ALPHABET[b % 62] for b in os.urandom(n))


def rpc_subject(engine: str, session: Optional[str] = None) -> str:
    """``vigil.<engine>.rpc``, or ``vigil.<engine>.<session token>.rpc``
    with a session; ValueError naming a bad engine or session name."""
    if not isinstance(engine, str) or not ENGINE_RE.match(engine):
        raise ValueError("engine %r is not an engine name ([A-Za-z0-9_-]{1,64}, as given to "
                         "vigild --nats-engine)" % (engine,))
    if session is None:
        return "vigil.%s.rpc" % engine
    return "vigil.%s.%s.rpc" % (engine, session_token(session))


def new_client_id() -> str:
    """A Vigil-Client id no other requester uses: ``vigil-py-<pid>-<random>``."""
    return "vigil-py-%d-%s" % (os.getpid(), _random(12))


class NatsRpc:
    """One NATS connection carrying a client's calls to one engine subject.

    ``subject``, ``engine``, ``session`` (None: the engine's subject),
    ``client_id`` (the Vigil-Client header), ``inbox`` (where answers
    come) and ``counters`` are for the application to read:
    ``requests`` (frames published), ``answers`` (well-formed answers
    handed on), ``no_responders``, ``malformed`` (answers refused, each
    failing its call), ``refused`` (publishes the server refused),
    ``stray`` (messages on the inbox that answer no call of this transport).
    """

    def __init__(self, url: str, engine: str, *, session: Optional[str] = None,
                 client_id: Optional[str] = None, inbox_prefix: str = DEFAULT_INBOX_PREFIX,
                 user: Optional[str] = None, password: Optional[str] = None,
                 token: Optional[str] = None, creds: Any = None, nkey_seed: Any = None,
                 tls_ca: Any = None, tls_cert: Any = None, tls_key: Any = None,
                 name: Optional[str] = None,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S):
        self.subject = rpc_subject(engine, session)
        self.engine = engine
        self.session = session
        if client_id is None:
            client_id = new_client_id()
        if not isinstance(client_id, str) or not CLIENT_ID_RE.match(client_id):
            raise ValueError("client_id %r must be 1..64 of A-Z a-z 0-9 _ - : . (it is sent as "
                             "the Vigil-Client header)" % (client_id,))
        self.client_id = client_id
        self.inbox_prefix = check_inbox_prefix(inbox_prefix)
        self._headers = {CLIENT_HEADER: client_id}
        self._header_bytes = len(encode_headers(self._headers))
        self._url = url
        self._auth: Dict[str, Any] = {
            "user": user, "password": password, "token": token, "creds": creds,
            "nkey_seed": nkey_seed, "tls_ca": tls_ca, "tls_cert": tls_cert, "tls_key": tls_key,
            "name": name}
        self.connect_timeout = connect_timeout
        self.counters: Dict[str, int] = {"requests": 0, "answers": 0, "no_responders": 0,
                                         "malformed": 0, "refused": 0, "stray": 0}
        self.last_malformed: Optional[str] = None
        """Why the last malformed answer was refused."""
        self._lock = threading.Lock()
        self._published: "OrderedDict[int, bool]" = OrderedDict()   # calls in publish order
        self._conn = self._connect()
        self.url = self._conn.url
        """The server, without credentials."""

    def _connect(self) -> NatsConnection:
        """Connects, subscribes to a fresh inbox and makes sure the server
        took the subscription (a user who may not read the inbox would
        otherwise wait for every answer until its timeout)."""
        self.inbox = "%s.%s" % (self.inbox_prefix, _random(22))
        conn = NatsConnection.connect(self._url, timeout=self.connect_timeout,
                                      inbox_prefix=self.inbox, **self._auth)
        try:
            self._sid = conn.subscribe(self.inbox + ".*")
            conn.flush(self.connect_timeout)
        except NatsPermissionError as e:
            conn.close()
            raise NatsPermissionError(
                e.operation, e.subject,
                "%s; answers come to %s.*: give inbox_prefix= a prefix this user may "
                "subscribe under (docs/fleet.md: _INBOX_<user>)" % (e.server_text, self.inbox)) \
                from None
        except BaseException:
            conn.close()
            raise
        return conn

    @property
    def max_payload(self) -> int:
        """The largest message the server takes (its INFO's max_payload)."""
        return self._conn.max_payload

    def reconnect(self) -> None:
        """A new connection to the same server, same subject and client id
        (so the engine's virtual connection, if still open, is the same);
        the old one must be closed. Raises what connecting raises."""
        with self._lock:
            self._published.clear()
        self._conn = self._connect()

    # -- sending ----------------------------------------------------------

    def send(self, data: bytes, msgid: Optional[int] = None) -> None:
        """Publishes one frame: a request (msgid: its answer comes to
        ``<inbox>.<msgid>``) or, without msgid, a notification frame, which
        the engine carries out without answering. LimitExceeded when the
        message is over the server's max_payload; NatsConnectionError when
        the connection is gone."""
        size = self._header_bytes + len(data)
        if size > self._conn.max_payload:
            raise LimitExceeded(4, "limit_exceeded: the request is %d bytes with its headers, "
                                   "over the NATS server's max_payload (%d bytes, %s)"
                                % (size, self._conn.max_payload, self.url))
        reply = None if msgid is None else "%s.%d" % (self.inbox, msgid)
        with self._lock:
            if msgid is not None:
                self._published[msgid] = True
                while len(self._published) > PUBLISHED_KEPT_MAX:
                    self._published.popitem(last=False)
            self.counters["requests"] += 1
        self._conn.publish(self.subject, data, reply, self._headers)

    # -- receiving --------------------------------------------------------

    def pump(self, dispatch: Dispatch, fail: Fail) -> str:
        """Reads answers until the connection ends, and returns why. Each
        well-formed answer goes to ``dispatch`` as a response frame
        ``[1, msgid, error, result]``; each call that cannot be answered
        (no responders, a malformed answer, a refused publish) goes to
        ``fail(msgid, exception)``."""
        while True:
            try:
                msg = self._conn.next_msg(self._sid, None)
            except NatsPermissionError as e:
                if e.operation == "publish" and e.subject == self.subject:
                    self._refused(e, fail)
                    continue
                return "the NATS server refused this client: %s" % e
            except NatsConnectionError as e:
                return "the connection to the NATS server failed: %s" % e
            except NatsError as e:             # pragma: no cover - next_msg raises the above
                return "the NATS connection failed: %s" % e
            if msg is not None:
                self._answer(msg, dispatch, fail)

    def _refused(self, e: NatsPermissionError, fail: Fail) -> None:
        with self._lock:
            self.counters["refused"] += 1
            msgid = self._published.popitem(last=False)[0] if self._published else None
        if msgid is not None:
            fail(msgid, NatsPermissionError(
                e.operation, e.subject, "%s (this NATS user may not send requests to %s)"
                % (e.server_text, self.subject)))

    def _answer(self, msg: Msg, dispatch: Dispatch, fail: Fail) -> None:
        prefix, _, token = msg.subject.rpartition(".")
        msgid = int(token) if _MSGID_TOKEN_RE.match(token) else -1
        with self._lock:
            # Only a call published and not answered yet takes an answer:
            # a second answer, or one to a msgid never sent, is a stray.
            if prefix != self.inbox or self._published.pop(msgid, False) is False:
                self.counters["stray"] += 1
                return
        if msg.status == 503:
            with self._lock:
                self.counters["no_responders"] += 1
            fail(msgid, EngineUnavailable(
                "unavailable: no engine answers on %s (nobody subscribes there: is a vigild "
                "--nats-engine %s connected to %s, and may this user publish there?)"
                % (self.subject, self.engine, self.url)))
            return
        frame, why = self._check(msg, msgid)
        if frame is None:
            with self._lock:
                self.counters["malformed"] += 1
            self.last_malformed = why
            fail(msgid, Internal(0, "internal: a malformed answer on %s to a request on %s: %s"
                                 % (msg.subject, self.subject, why)))
            return
        with self._lock:
            self.counters["answers"] += 1
        dispatch(frame)

    @staticmethod
    def _check(msg: Msg, msgid: int) -> Tuple[Optional[List[Any]], str]:
        """The response frame msg carries for msgid, or None and why not."""
        if msg.status is not None:
            return None, "a NATS status message %d %s, not an answer" % (msg.status,
                                                                          msg.description)
        try:
            frame = msgpack.unpackb(msg.data, raw=False, strict_map_key=False)
        except Exception as e:          # msgpack raises several kinds; all mean "not one frame"
            return None, "the payload (%d bytes) is not one msgpack value: %s" % (
                len(msg.data), type(e).__name__)
        if not isinstance(frame, (list, tuple)) or len(frame) != 4 or frame[0] != 1 \
                or isinstance(frame[0], bool):
            return None, "the payload is not a response frame [1, msgid, error, result]"
        got, error, result = frame[1], frame[2], frame[3]
        if not isinstance(got, int) or isinstance(got, bool):
            return None, "the msgid %r is not an integer" % (got,)
        if error is not None:
            if not (isinstance(error, (list, tuple)) and len(error) >= 2
                    and isinstance(error[0], int) and not isinstance(error[0], bool)
                    and isinstance(error[1], str)):
                return None, "the error %r is not [code, message]" % (error,)
        elif not isinstance(result, dict):
            return None, "the result is a %s, not a map" % type(result).__name__
        # msgid 0: the engine's refusal of a frame it could not read (its
        # msgid unknown to it); the reply subject says which call it was.
        if got != msgid and not (got == 0 and error is not None):
            return None, "it answers msgid %d, not %d" % (got, msgid)
        return [1, msgid, error, result], ""

    # -- ending -----------------------------------------------------------

    def shutdown(self) -> None:
        """Ends the connection from any thread; ``pump`` then returns."""
        self._conn.shutdown()

    def close(self) -> None:
        """Releases the connection (after ``pump`` returned)."""
        self._conn.close()

    def __repr__(self) -> str:
        return "NatsRpc(%s, subject=%s, client_id=%s)" % (self.url, self.subject, self.client_id)


def lost_virtual_session(err: VigilError, session: Any, args: Dict[str, Any]) -> bool:
    """Whether err says the session is not open on this requester's virtual
    connection although the session object opened it, and did not close it:
    the engine closed the virtual connection after ``nats.client_idle_ms``
    without requests (docs/fleet.md, "Connections"), its sessions with it,
    and nothing was carried out. The session is then opened again and the
    call sent once more. (A session's own subject opens its session by
    itself; this is for sessions opened on the engine's subject.)"""
    name = session.name
    return (name is not None and not session.closed_here and args.get("session") == name
            and err.message == 'not_found: session: no session "%s" is open on this connection'
            % name)


def no_notifications(nats: "NatsRpc") -> RuntimeError:
    """What ``wait`` raises on a client over NATS, saying where
    notifications are read instead."""
    return RuntimeError(
        "wait: a client over NATS (%s) gets no notifications: the engine drops those pushed to "
        "a requester's virtual connection. Read them from JetStream with FleetSubscriber "
        "(client.fleet_subscriber(durable), docs/fleet.md section 3)" % nats.subject)
