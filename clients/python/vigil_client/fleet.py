"""FleetSubscriber: a gateway's reader of a fleet's notifications.

Engines publish every notification of their named sessions into the
JetStream stream ``VIGIL``, one message each on
``vigil.<engine>.<session token>.n`` (docs/fleet.md). A gateway reads them
through a durable pull consumer and acks each once its host has injected
it; this class is that reader. JetStream delivers at least once (a message
whose ack was lost comes again), so the subscriber also keeps, per engine
and session, the ``(epoch, seq)`` its host last injected (the host's own
records give the starting ``cursor``; each ``ack()`` moves it) and acks
without handing over anything at or below it under the same epoch: what
reaches the host does so exactly once. A different epoch is an engine that
started a new numbering, and is taken; the epochs an engine left behind are
remembered, so a late copy of one of theirs is a duplicate.

In order: JetStream delivers a message whose ack never came (its reader
died) again after ack_wait, behind what it delivered since. So only the
seq right after the cursor is handed over (or a ``dropped`` notification
standing for it); one further ahead is held back, nak'ed with a delay so
that it comes again once the ones before it did, and is taken with the gap
counted (``gaps``) only after ``2 * ack_wait + 30 s`` of waiting. A
session the host has no record of starts wherever its first message is.

Nothing read from the broker is trusted: a message is handed over only
when its subject, its ``Vigil-*`` headers and its msgpack payload agree and
the payload is a well-formed notification map under the size bound; any
other is counted (``malformed``), terminated (JetStream then never delivers
it again) and never handed over.

The connection is lost when the server restarts: ``next()`` connects again
by itself, with a backoff, for up to ``reconnect_wait_s``; it raises
:class:`FleetUnavailable` once that has passed without a connection, and the
next call to ``next()`` starts trying again. The consumer is durable, so
nothing is lost across that: what was handed over and acked stays acked,
what was not comes again.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from typing import Any, Deque, Dict, Iterator, Mapping, Optional, Tuple

try:
    import msgpack  # type: ignore[import]
except ImportError as _missing:  # pragma: no cover - wire.py says how to install it
    raise ImportError("vigil_client.fleet needs msgpack") from _missing

from .jetstream import (ERR_CONSUMER_NOT_FOUND, ERR_STREAM_NOT_FOUND, JetStream, JetStreamError,
                        check_token, seconds_to_ns)
from .nats_wire import (DEFAULT_INBOX_PREFIX, Msg, NatsAuthError, NatsConnection,
                        NatsConnectionError, NatsPermissionError, NatsTimeout, NoResponders,
                        check_inbox_prefix, check_subject, new_inbox_prefix, parse_url)
from .notification import Notification

DEFAULT_STREAM = "VIGIL"
STREAM_SUBJECTS = "vigil.*.*.n"

# The contract's duplicate window (docs/fleet.md: nats.duplicate_window_ms),
# used when the subscriber is asked to create a missing stream.
DEFAULT_DUPLICATE_WINDOW_S = 120.0

# How long JetStream waits for an ack before it delivers a message again,
# for a consumer this subscriber creates.
DEFAULT_ACK_WAIT_S = 30.0

# How many messages one pull asks for. Each waits for its ack from the
# moment it is delivered, so a small batch keeps ack_wait meaningful for a
# host that injects one notification at a time.
DEFAULT_BATCH = 16

# The largest payload taken as a notification. The engine's notifications
# are a few KiB (an envelope and its lines); NATS's default max_payload is
# 1 MiB, so this bound only refuses what no engine sends.
DEFAULT_MAX_NOTIFICATION_BYTES = 1 << 20

# How long one pull waits at the server for messages before it answers 408
# and a new pull is sent, and how long past that the subscriber waits for the
# 408 before it checks the connection with a PING.
PULL_EXPIRES_S = 5.0
PULL_GRACE_S = 5.0

# How long next(0) reads what a waiting pull already brought.
NO_WAIT_READ_S = 0.05

# How long next() keeps reconnecting after the connection was lost before
# it raises FleetUnavailable, and the backoff between attempts.
DEFAULT_RECONNECT_WAIT_S = 30.0
RECONNECT_BACKOFF_MIN_S = 0.1
RECONNECT_BACKOFF_MAX_S = 2.0

# In order (docs/fleet.md): a message ahead of the cursor is nak'ed with a
# delay of a quarter of ack_wait (within these bounds) to come again later,
# for at most 2 * ack_wait + HOLD_EXTRA_S; at most HELD_MAX are remembered.
NAK_DELAY_MIN_S = 0.1
NAK_DELAY_MAX_S = 5.0
HOLD_EXTRA_S = 30.0
HELD_MAX = 10000
# The epochs an engine and session left behind that are remembered.
PAST_EPOCHS_MAX = 8

# How long close() waits for the server to confirm it has the last acks.
CLOSE_FLUSH_S = 2.0

# The names of docs/fleet.md: engine and session names, and the epoch.
ENGINE_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SESSION_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
EPOCH_RE = re.compile(r"^[0-9a-fA-F]{16}$")
DURABLE_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SEQ_RE = re.compile(r"^[0-9]{1,16}$")

# A notification's seq is at most 2^53 - 1 (docs/protocol.md).
SEQ_MAX = (1 << 53) - 1

# The keys of a notification map and the types each may have when present
# and not nil (docs/protocol.md, section 6). The first five are required.
_REQUIRED = ("session", "seq", "epoch", "type", "text")
_TYPES: Dict[str, Tuple[type, ...]] = {
    "session": (str,), "seq": (int,), "epoch": (str,), "type": (str,), "text": (str,),
    "mode": (str,), "monitor_id": (str,), "label": (str,), "state": (str,), "reason": (str,),
    "exceeded": (str,), "at": (str,), "signal": (str, int),
    "batch": (int,), "incidents_withheld": (int,), "incidents_coalesced": (int,),
    "incidents_dropped": (int,), "suppressed": (int,), "exit_code": (int,),
    "duration_ms": (int,), "dropped": (int,), "from_seq": (int,), "to_seq": (int,),
    "lines": (list,), "incidents": (list,),
}

Cursor = Dict[Tuple[str, str], Tuple[str, int]]


def session_token(session: str) -> str:
    """A session name as one subject token: every '.' written '%2E'
    (docs/fleet.md); ValueError for a name that is not a session name."""
    if not isinstance(session, str) or not SESSION_RE.match(session):
        raise ValueError("session %r is not a session name ([A-Za-z0-9._:-]{1,64})" % (session,))
    return session.replace(".", "%2E")


def session_from_token(token: str) -> Optional[str]:
    """The session name a subject token stands for; None when the token is
    not one (a '%' other than '%2E', a character no name has)."""
    name = token.replace("%2E", ".")
    return name if "%" not in name and SESSION_RE.match(name) else None


def notification_subject(engine: str, session: str) -> str:
    """``vigil.<engine>.<session token>.n``; engine or session may be
    ``"*"`` (any), which makes it a filter."""
    if engine != "*" and (not isinstance(engine, str) or not ENGINE_RE.match(engine)):
        raise ValueError("engine %r is not an engine name ([A-Za-z0-9_-]{1,64}) nor '*'"
                         % (engine,))
    token = "*" if session == "*" else session_token(session)
    return "vigil.%s.%s.n" % (engine, token)


class FleetError(Exception):
    """The fleet cannot be read as asked: the stream or consumer is missing
    or not what this subscriber needs."""


class FleetUnavailable(FleetError, ConnectionError):
    """No connection to the server for ``reconnect_wait_s``; ``url`` says
    which server. Calling ``next()`` again tries again."""

    def __init__(self, message: str, url: str):
        super().__init__(message)
        self.url = url


class FleetPermissionError(FleetError, PermissionError):
    """The server refused this user something the subscriber needs:
    ``subject`` is the subject refused, ``filter_subject`` what was to be
    read. Not retried: the server's configuration has to change."""

    def __init__(self, message: str, subject: str, filter_subject: str):
        super().__init__(message)
        self.subject = subject
        self.filter_subject = filter_subject


class FleetNotification(Notification):
    """A :class:`Notification` read from the fleet's stream. Beside the
    notification's fields it has ``engine`` (the engine that published it),
    ``stream_seq`` (its place in the stream) and ``delivered_count`` (1 the
    first time JetStream delivered it), and:

    - ``ack()``: the host has injected it. The subscriber's cursor moves to
      it and JetStream is told, so it is never handed over again;
    - ``term()``: the host refuses it for good (it is not delivered again,
      and the cursor does not move);
    - ``in_progress()``: the host needs longer than the consumer's
      ack_wait; JetStream's timer starts again.

    Not acking within ack_wait means JetStream delivers it again, and it is
    handed over again (at least once) unless the cursor has passed it.
    """

    engine: str
    stream_seq: int
    delivered_count: int
    _subscriber: "FleetSubscriber"
    _reply: str
    _settled: bool

    def ack(self) -> None:
        """Marks it injected: the cursor moves and JetStream gets +ACK."""
        self._subscriber._settle(self, b"+ACK")

    def term(self) -> None:
        """Refuses it for good: JetStream gets +TERM; the cursor stays."""
        self._subscriber._settle(self, b"+TERM")

    def in_progress(self) -> None:
        """Asks JetStream for another ack_wait before delivering it again."""
        self._subscriber._send_ack(self._reply, b"+WPI")

    @property
    def settled(self) -> bool:
        """Whether ack() or term() was called."""
        return self._settled


def _ack_tokens(reply: Optional[str], stream: str, durable: str) -> Optional[Tuple[int, int]]:
    """(delivered count, stream seq) from a JetStream ack subject of this
    stream and consumer; None for any other reply subject (an ack is never
    published anywhere else)."""
    if not reply or not reply.startswith("$JS.ACK."):
        return None
    try:
        check_subject(reply, "ack subject")
    except ValueError:
        return None
    tokens = reply.split(".")
    # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>, or
    # with <domain>.<account hash> after ACK and a random token at the end.
    if len(tokens) == 9:
        names, numbers = tokens[2:4], tokens[4:6]
    elif len(tokens) >= 12:
        names, numbers = tokens[4:6], tokens[6:8]
    else:
        return None
    if names != [stream, durable] or not all(t.isdigit() for t in numbers):
        return None
    return int(numbers[0]), int(numbers[1])


class FleetSubscriber:
    """Reads the notifications of one durable pull consumer on the fleet's
    stream, and hands each to the host exactly once.

    ``url``: ``nats://[user:password@ | token@]host:port``, or ``tls://``
    for TLS (or give ``user``/``password``, ``token``, ``creds`` (a creds
    file's path) or ``nkey_seed`` (a user seed file's path); ``tls_ca``,
    ``tls_cert`` and ``tls_key`` ask for TLS with those PEM files:
    :meth:`NatsConnection.connect`). ``durable``: the consumer's name; a
    second subscriber with the same name resumes where the first's acks
    left off. ``engine`` and ``session`` narrow what is read (``"*"``: all).
    ``cursor``: what the host injected already, ``{(engine, session):
    (epoch, seq)}``. ``ack_wait_s`` applies to a consumer this subscriber
    creates; an existing one keeps its own. ``create_stream``: make the
    stream (docs/fleet.md's subjects and duplicate window) when it is
    missing, instead of raising FleetError.

    Construction connects and binds (or creates) the consumer, and raises
    what stands in the way: NatsConnectionError, NatsAuthError (NatsTLSError
    among them), FleetPermissionError, FleetError, ValueError for a bad
    argument or a creds, seed or PEM file that cannot be used, ImportError
    for creds or nkey_seed without the cryptography package. The files are
    read again at each reconnect (a creds file renewed in place is used).
    """

    def __init__(self, url: str, durable: str, *, engine: str = "*", session: str = "*",
                 stream: str = DEFAULT_STREAM, cursor: Optional[Mapping[Tuple[str, str],
                                                                        Tuple[str, int]]] = None,
                 user: Optional[str] = None, password: Optional[str] = None,
                 token: Optional[str] = None, creds: Any = None, nkey_seed: Any = None,
                 tls_ca: Any = None, tls_cert: Any = None, tls_key: Any = None,
                 name: Optional[str] = None,
                 ack_wait_s: float = DEFAULT_ACK_WAIT_S, batch: int = DEFAULT_BATCH,
                 max_notification_bytes: int = DEFAULT_MAX_NOTIFICATION_BYTES,
                 reconnect_wait_s: float = DEFAULT_RECONNECT_WAIT_S,
                 create_stream: bool = False, timeout: float = 10.0,
                 inbox_prefix: str = DEFAULT_INBOX_PREFIX):
        if not isinstance(durable, str) or not DURABLE_RE.match(durable):
            raise ValueError("durable %r must be a consumer name ([A-Za-z0-9_-]{1,64})"
                             % (durable,))
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 10000:
            raise ValueError("batch must be 1..10000, got %r" % (batch,))
        if isinstance(max_notification_bytes, bool) or not isinstance(max_notification_bytes, int) \
                or max_notification_bytes < 1024:
            raise ValueError("max_notification_bytes must be an integer >= 1024, got %r"
                             % (max_notification_bytes,))
        seconds_to_ns(ack_wait_s, "ack_wait_s")
        seconds_to_ns(timeout, "timeout")
        if isinstance(reconnect_wait_s, bool) or not isinstance(reconnect_wait_s, (int, float)) \
                or reconnect_wait_s < 0:
            raise ValueError("reconnect_wait_s must be a number of seconds >= 0, got %r"
                             % (reconnect_wait_s,))
        # The pulled messages come to this prefix: a user who may subscribe
        # to another's could read the sessions it pulls (docs/fleet.md 5).
        self.inbox_prefix = check_inbox_prefix(inbox_prefix)
        self.url = parse_url(url).display()
        self._url = url
        self._auth: Dict[str, Any] = {
            "user": user, "password": password, "token": token, "creds": creds,
            "nkey_seed": nkey_seed, "tls_ca": tls_ca, "tls_cert": tls_cert, "tls_key": tls_key,
            "name": name}
        self.durable = durable
        self.stream = check_token(stream, "stream")
        self.filter_subject = notification_subject(engine, session)
        self.ack_wait_s = ack_wait_s
        self.batch = batch
        self.max_notification_bytes = max_notification_bytes
        self.reconnect_wait_s = float(reconnect_wait_s)
        self.create_stream = create_stream
        self.timeout = timeout
        self._cursor: Cursor = {}
        for key, mark in (cursor or {}).items():
            self._cursor[self._check_cursor_entry(key, mark)] = (mark[0], mark[1])
        self.counters: Dict[str, int] = {
            "delivered": 0,     # handed to the host
            "acked": 0,         # acked by the host
            "termed": 0,        # refused by the host (term)
            "duplicates": 0,    # at or below the cursor: acked, not handed over
            "malformed": 0,     # refused: not a well-formed, agreeing notification
            "oversized": 0,     # of those, over max_notification_bytes
            "reconnects": 0,    # connections made again after one was lost
            "ack_failures": 0,  # acks the lost connection took (redelivered, then skipped)
            "held_back": 0,     # ahead of the cursor: nak'ed to come again in order
            "gaps": 0,          # held back past hold_s, then taken: seqs before it are gone
        }
        # Ahead of the cursor: the stream seq of each, and when it was first
        # held back (bounded by HELD_MAX); the epochs each engine and session
        # left behind (PAST_EPOCHS_MAX each).
        self._held: Dict[int, float] = {}
        self._handed: Cursor = {}   # the last handed over per (engine, session)
        self._past_epochs: Dict[Tuple[str, str], Deque[str]] = {}
        # How long a message ahead of the cursor is held back at most: what
        # it waits for comes again after the consumer's ack_wait.
        self.hold_s = 2 * ack_wait_s + HOLD_EXTRA_S
        self.last_malformed: Optional[str] = None
        """Why the last refused message was refused (for a log)."""
        self._ready: Deque[FleetNotification] = deque()
        self._conn: Optional[NatsConnection] = None
        self._pull_sid: Optional[int] = None
        self._pull_prefix = ""
        self._pull_count = 0
        self._pull: Optional[str] = None        # the reply subject of the pull under way
        self._pull_left = 0                     # messages the pull may still bring
        self._pull_ends = 0.0                   # when its 408 is due, monotonic
        self._lost_at: Optional[float] = None
        self._closed = False
        self._connect()

    # -- the cursor -------------------------------------------------------

    @staticmethod
    def _check_cursor_entry(key: Any, mark: Any) -> Tuple[str, str]:
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str)
                and ENGINE_RE.match(key[0]) and isinstance(key[1], str)
                and SESSION_RE.match(key[1])):
            raise ValueError("cursor key %r must be (engine name, session name)" % (key,))
        if not (isinstance(mark, (tuple, list)) and len(mark) == 2 and isinstance(mark[0], str)
                and EPOCH_RE.match(mark[0]) and isinstance(mark[1], int)
                and not isinstance(mark[1], bool) and 0 <= mark[1] <= SEQ_MAX):
            raise ValueError("cursor[%r] = %r must be (epoch of 16 hex digits, seq 0..%d)"
                             % (key, mark, SEQ_MAX))
        return key

    @property
    def cursor(self) -> Cursor:
        """What the host has injected, per (engine, session): (epoch, seq).
        A copy: store it with the host's records, and pass it back as
        ``cursor=`` after a restart."""
        return dict(self._cursor)

    def _place(self, n: FleetNotification) -> str:
        """Where n stands against the host's cursor (docs/fleet.md, "In
        order"): "duplicate" (injected already: at or below the cursor, or
        of an epoch its engine left behind), "next" (the seq after the
        cursor, or a `dropped` notification standing for it, or the start
        of a new epoch), or "ahead" (seqs before it have not been injected:
        JetStream delivers them again after ack_wait)."""
        key = (n.engine, n.session)
        if n.epoch in self._past_epochs.get(key, ()):
            return "duplicate"
        mark = self._cursor.get(key)
        if mark is not None and mark[0] == n.epoch and n.seq <= mark[1]:
            return "duplicate"
        # The last one handed over (acked or not) is where the next follows;
        # one handed over and not acked in time comes again, and goes again.
        handed = self._handed.get(key)
        if handed is None or (mark is not None and mark[0] == handed[0] and mark[1] > handed[1]):
            handed = mark
        if handed is None:
            return "next"  # no record: the host starts wherever the stream does
        if handed[0] == n.epoch:
            if n.seq <= handed[1]:
                return "next"
            want = handed[1] + 1
        else:
            want = 1  # a new epoch: a numbering that starts at 1
        if n.seq == want:
            return "next"
        from_seq = getattr(n, "from_seq", None)
        if n.type == "dropped" and isinstance(from_seq, int) and from_seq <= want <= n.seq:
            return "next"
        return "ahead"

    def _hold_back(self, n: FleetNotification) -> bool:
        """n is ahead of the cursor: True when it is held back (nak'ed
        with a delay, so JetStream delivers it again later); False when it
        has been held for the hold bound already and is to be taken with
        the gap counted (what it waits for is not coming)."""
        now = time.monotonic()
        first = self._held.setdefault(n.stream_seq, now)
        if now - first >= self.hold_s:
            self._held.pop(n.stream_seq, None)
            return False
        if len(self._held) > HELD_MAX:
            # Bounded: the oldest entry goes (it is taken on its next delivery).
            self._held.pop(next(iter(self._held)))
        delay = min(max(self.ack_wait_s / 4.0, NAK_DELAY_MIN_S), NAK_DELAY_MAX_S)
        self._send_ack(n._reply, b"-NAK " + json.dumps({"delay": int(delay * 1e9)}).encode())
        return True

    # -- connecting -------------------------------------------------------

    def _connect(self) -> None:
        """Connects and binds the consumer; raises what stands in the way."""
        conn = NatsConnection.connect(self._url, timeout=self.timeout,
                                      inbox_prefix=new_inbox_prefix(self.inbox_prefix),
                                      **self._auth)
        try:
            self._bind(JetStream(conn, self.timeout))
            self._pull_prefix = conn.new_inbox()
            self._pull_sid = conn.subscribe(self._pull_prefix + ".*")
            conn.flush(self.timeout)
        except NatsPermissionError as e:
            conn.close()
            raise FleetPermissionError(
                "the NATS user of %s may not %s to %s, which reading %s through consumer %s "
                "needs (server: %s)" % (self.url, e.operation, e.subject, self.filter_subject,
                                        self.durable, e.server_text),
                e.subject, self.filter_subject) from None
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._pull = None

    def _bind(self, js: JetStream) -> None:
        """Binds the durable consumer when it exists and reads what this
        subscriber asks; creates it when it does not."""
        try:
            info = js.consumer_info(self.stream, self.durable)
        except JetStreamError as e:
            if e.err_code == ERR_STREAM_NOT_FOUND:
                self._stream_missing(js)
            elif e.err_code != ERR_CONSUMER_NOT_FOUND:
                raise FleetError("cannot read consumer %s of stream %s on %s: %s"
                                 % (self.durable, self.stream, self.url, e.description)) from None
            info = None
        except NoResponders:
            raise FleetError("%s answers no JetStream request: is it started with JetStream "
                             "(-js), and is JetStream enabled for this account?"
                             % self.url) from None
        if info is not None:
            config = info.get("config") if isinstance(info.get("config"), dict) else {}
            problems = []
            if config.get("filter_subject", "") != self.filter_subject:
                problems.append("it reads %r, not %r" % (config.get("filter_subject", ""),
                                                         self.filter_subject))
            if config.get("ack_policy") != "explicit":
                problems.append("its ack policy is %r, not explicit" % config.get("ack_policy"))
            if config.get("deliver_subject"):
                problems.append("it is a push consumer")
            if problems:
                raise FleetError("consumer %s of stream %s on %s cannot be bound: %s (use "
                                 "another durable name, or delete that consumer)"
                                 % (self.durable, self.stream, self.url, "; ".join(problems)))
            return
        js.consumer_create(self.stream, {
            "durable_name": self.durable, "deliver_policy": "all", "ack_policy": "explicit",
            "ack_wait": seconds_to_ns(self.ack_wait_s, "ack_wait_s"),
            "filter_subject": self.filter_subject, "max_deliver": -1,
            "replay_policy": "instant",
        })

    def _stream_missing(self, js: JetStream) -> None:
        if not self.create_stream:
            raise FleetError("stream %s does not exist on %s: an engine creates it when it "
                             "starts (or pass create_stream=True)" % (self.stream, self.url))
        js.stream_create(self.stream, [STREAM_SUBJECTS],
                         duplicate_window_s=DEFAULT_DUPLICATE_WINDOW_S)

    def _lost(self) -> None:
        """Forgets a connection that failed; next() makes another."""
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._pull = None
        if self._lost_at is None:
            self._lost_at = time.monotonic()

    def _reconnect(self, deadline: Optional[float]) -> bool:
        """Tries to connect again until it works (True), deadline passes
        (False), or reconnect_wait_s since the loss passes (FleetUnavailable;
        the next call starts a new round)."""
        if self._lost_at is None:
            self._lost_at = time.monotonic()      # a new round after FleetUnavailable
        backoff = RECONNECT_BACKOFF_MIN_S
        while True:
            try:
                self._connect()
                self._lost_at = None
                self.counters["reconnects"] += 1
                return True
            except (NatsAuthError, FleetPermissionError):
                raise
            except (NatsConnectionError, NatsTimeout, FleetError) as e:
                last = e
            now = time.monotonic()
            if now - self._lost_at >= self.reconnect_wait_s:
                self._lost_at = None
                raise FleetUnavailable("lost the connection to %s and could not make another "
                                       "within %.1f s: %s" % (self.url, self.reconnect_wait_s,
                                                              last), self.url)
            if deadline is not None and now >= deadline:
                return False
            pause = min(backoff, self._lost_at + self.reconnect_wait_s - now)
            if deadline is not None:
                pause = min(pause, deadline - now)
            time.sleep(max(pause, 0.0))
            backoff = min(backoff * 2, RECONNECT_BACKOFF_MAX_S)

    # -- reading ----------------------------------------------------------

    def next(self, timeout: Optional[float] = None) -> Optional[FleetNotification]:
        """The next notification for the host, waiting at most timeout
        seconds (None: until one comes; 0: only what is there); None when
        none came in time. Inject it, then ``ack()`` it."""
        if self._closed:
            raise FleetError("this FleetSubscriber is closed")
        no_wait = timeout is not None and timeout <= 0
        if no_wait and self._pull is not None:
            # A waiting pull is under way: what it brought is in the socket.
            deadline: Optional[float] = time.monotonic() + NO_WAIT_READ_S
        elif no_wait:
            # Only what the server has now: a no_wait pull, whose answer
            # (messages, or 404) comes at once; self.timeout bounds the wait.
            deadline = time.monotonic() + self.timeout
        else:
            deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            while self._ready:
                n = self._ready.popleft()
                place = self._place(n)
                if place == "duplicate":
                    self.counters["duplicates"] += 1
                    self._send_ack(n._reply, b"+ACK")
                    continue
                if place == "ahead":
                    if self._hold_back(n):
                        self.counters["held_back"] += 1
                        continue
                    self.counters["gaps"] += 1
                self._held.pop(n.stream_seq, None)
                key = (n.engine, n.session)
                handed = self._handed.get(key)
                if handed is None or handed[0] != n.epoch or n.seq > handed[1]:
                    assert n.epoch is not None    # checked on arrival
                    self._handed[key] = (n.epoch, n.seq)
                self.counters["delivered"] += 1
                return n
            if deadline is not None and time.monotonic() >= deadline:
                return None
            if self._conn is None and not self._reconnect(deadline):
                return None
            try:
                ended = self._read_pull(deadline, no_wait)
            except (NatsConnectionError, NatsTimeout):
                self._lost()
                continue
            if ended and no_wait and not self._ready:
                return None

    def __iter__(self) -> Iterator[FleetNotification]:
        """Every notification, as they come (without end)."""
        while True:
            n = self.next(None)
            if n is not None:
                yield n

    def _read_pull(self, deadline: Optional[float], no_wait: bool) -> bool:
        """Sends a pull when none is under way and reads its answers until
        a notification is ready, the pull has ended (True) or deadline."""
        conn = self._conn
        assert conn is not None and self._pull_sid is not None
        if self._pull is None:
            self._pull_count += 1
            self._pull = "%s.%d" % (self._pull_prefix, self._pull_count)
            if no_wait:
                request: Dict[str, Any] = {"batch": self.batch, "no_wait": True}
            else:
                request = {"batch": self.batch, "expires": int(PULL_EXPIRES_S * 1e9)}
            conn.publish("$JS.API.CONSUMER.MSG.NEXT.%s.%s" % (self.stream, self.durable),
                         json.dumps(request).encode(), self._pull)
            self._pull_left = self.batch
            self._pull_ends = time.monotonic() + (0 if no_wait else PULL_EXPIRES_S)
        while not self._ready:
            stall = self._pull_ends + PULL_GRACE_S
            wait_until = stall if deadline is None else min(deadline, stall)
            try:
                msg = conn.next_msg(self._pull_sid, max(wait_until - time.monotonic(), 0.0))
            except NatsPermissionError as e:
                raise FleetPermissionError(
                    "the NATS user of %s may not %s to %s, which reading %s through consumer "
                    "%s needs (server: %s)" % (self.url, e.operation, e.subject,
                                               self.filter_subject, self.durable,
                                               e.server_text), e.subject,
                    self.filter_subject) from None
            if msg is None:
                if time.monotonic() >= stall:
                    # No 408 in time: a PING says whether the server is there.
                    conn.flush(self.timeout)
                    self._pull = None
                    return True
                return False
            if msg.status is not None:
                if self._status(msg):
                    return True
                continue
            self._take(msg)
            self._pull_left -= 1
            if self._pull_left <= 0:
                self._pull = None
                return True
        return False

    def _status(self, msg: Msg) -> bool:
        """Handles a status message; True when it ends the pull under way."""
        if msg.subject != self._pull:
            return False                          # the end of an earlier pull
        if msg.status == 409 and "deleted" in msg.description.lower():
            self._pull = None
            raise FleetError("consumer %s of stream %s on %s was deleted"
                             % (self.durable, self.stream, self.url))
        if msg.status == 100:
            return False                          # a heartbeat
        self._pull = None                         # 404, 408, 409: the pull is over
        return True

    def _take(self, msg: Msg) -> None:
        """Checks a delivered message; a notification goes to the ready
        queue, anything else is counted and terminated."""
        ack = _ack_tokens(msg.reply, self.stream, self.durable)
        if ack is None:
            self._refuse(msg, "its reply subject %r is not an ack subject of consumer %s"
                         % ((msg.reply or "")[:80], self.durable), None)
            return
        if len(msg.data) > self.max_notification_bytes:
            self.counters["oversized"] += 1
            self._refuse(msg, "its payload of %d bytes is over max_notification_bytes (%d)"
                         % (len(msg.data), self.max_notification_bytes), msg.reply)
            return
        try:
            n = self._notification(msg)
        except ValueError as e:
            self._refuse(msg, str(e), msg.reply)
            return
        n.delivered_count, n.stream_seq = ack
        self._ready.append(n)

    def _notification(self, msg: Msg) -> FleetNotification:
        """The notification a message carries; ValueError saying what is
        wrong with it."""
        tokens = msg.subject.split(".")
        if len(tokens) != 4 or tokens[0] != "vigil" or tokens[3] != "n" \
                or not ENGINE_RE.match(tokens[1]):
            raise ValueError("subject %r is not vigil.<engine>.<session token>.n" % msg.subject[:80])
        engine = tokens[1]
        session = session_from_token(tokens[2])
        if session is None:
            raise ValueError("subject %r: %r is not a session token" % (msg.subject[:80],
                                                                        tokens[2][:80]))
        head = {}
        for name in ("Vigil-Engine", "Vigil-Session", "Vigil-Seq", "Vigil-Epoch"):
            value = msg.header(name)      # ValueError when given twice
            if value is None:
                raise ValueError("header %s is missing" % name)
            head[name] = value
        if head["Vigil-Engine"] != engine:
            raise ValueError("header Vigil-Engine %r is not the subject's engine %r"
                             % (head["Vigil-Engine"][:80], engine))
        if head["Vigil-Session"] != session:
            raise ValueError("header Vigil-Session %r is not the subject's session %r"
                             % (head["Vigil-Session"][:80], session))
        if not _SEQ_RE.match(head["Vigil-Seq"]):
            raise ValueError("header Vigil-Seq %r is not a decimal seq" % head["Vigil-Seq"][:80])
        if not EPOCH_RE.match(head["Vigil-Epoch"]):
            raise ValueError("header Vigil-Epoch %r is not 16 hex digits"
                             % head["Vigil-Epoch"][:80])
        try:
            m = msgpack.unpackb(msg.data, raw=False, strict_map_key=False, use_list=True)
        except Exception as e:            # hostile bytes raise any of msgpack's errors
            raise ValueError("the payload is not msgpack: %s" % str(e)[:120]) from None
        if not isinstance(m, dict) or not all(isinstance(k, str) for k in m):
            raise ValueError("the payload is not a map with string keys")
        for key in _REQUIRED:
            if m.get(key) is None:
                raise ValueError("the payload has no %s" % key)
        for key, types in _TYPES.items():
            value = m.get(key)
            if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
                raise ValueError("the payload's %s is %s, not %s"
                                 % (key, type(value).__name__,
                                    " or ".join(t.__name__ for t in types)))
        for key in ("lines", "incidents"):
            if not all(isinstance(x, dict) for x in m.get(key) or []):
                raise ValueError("the payload's %s are not all maps" % key)
        if not 0 <= m["seq"] <= SEQ_MAX:
            raise ValueError("the payload's seq %d is out of 0..%d" % (m["seq"], SEQ_MAX))
        if m["session"] != session or m["seq"] != int(head["Vigil-Seq"]) \
                or m["epoch"] != head["Vigil-Epoch"]:
            raise ValueError("headers (session %r, seq %s, epoch %s) disagree with the payload "
                             "(session %r, seq %d, epoch %r)"
                             % (session, head["Vigil-Seq"], head["Vigil-Epoch"],
                                m["session"][:80], m["seq"], m["epoch"][:80]))
        n = FleetNotification.from_map(m)
        assert isinstance(n, FleetNotification)
        n.engine = engine
        n._subscriber = self
        n._reply = msg.reply
        n._settled = False
        return n

    def _refuse(self, msg: Msg, why: str, reply: Optional[str]) -> None:
        self.counters["malformed"] += 1
        self.last_malformed = "%s: %s" % (msg.subject[:80], why)
        if reply is not None:
            self._send_ack(reply, b"+TERM")

    # -- acks -------------------------------------------------------------

    def _settle(self, n: FleetNotification, verdict: bytes) -> None:
        if n._settled:
            return
        n._settled = True
        if verdict == b"+ACK":
            key = (n.engine, n.session)
            mark = self._cursor.get(key)
            if mark is None or mark[0] != n.epoch or n.seq > mark[1]:
                assert n.epoch is not None        # checked on arrival
                if mark is not None and mark[0] != n.epoch:
                    # The engine started a new numbering: its old epoch's
                    # messages, delivered again late, are duplicates.
                    past = self._past_epochs.setdefault(key, deque(maxlen=PAST_EPOCHS_MAX))
                    if mark[0] not in past:
                        past.append(mark[0])
                self._cursor[key] = (n.epoch, n.seq)
            self.counters["acked"] += 1
        else:
            self.counters["termed"] += 1
        self._send_ack(n._reply, verdict)

    def _send_ack(self, reply: str, verdict: bytes) -> None:
        """Publishes an ack verdict. A connection already lost keeps it:
        the cursor covers what it acked, and JetStream delivers it again
        to be acked as a duplicate."""
        if self._conn is None:
            self.counters["ack_failures"] += 1
            return
        try:
            self._conn.publish(reply, verdict)
        except NatsConnectionError:
            self.counters["ack_failures"] += 1
            self._lost()

    def flush(self, timeout: Optional[float] = None) -> None:
        """Waits until the server has processed every ack sent so far (a
        PING and its PONG), for a host that records its cursor only once
        JetStream has the acks too. NatsConnectionError or NatsTimeout when
        the connection is lost or the server does not answer in time (the
        cursor is right either way: what was not acked comes again and is
        skipped)."""
        if self._conn is None:
            raise NatsConnectionError("not connected to %s" % self.url, self.url)
        try:
            self._conn.flush(self.timeout if timeout is None else timeout)
        except NatsConnectionError:
            self._lost()
            raise

    # -- ending -----------------------------------------------------------

    def close(self) -> None:
        """Waits briefly for the server to confirm the acks sent, then
        closes the connection. Notifications taken from the server but not
        handed over are delivered again, to this durable's next reader."""
        if self._closed:
            return
        self._closed = True
        if self._conn is not None:
            try:
                self._conn.flush(CLOSE_FLUSH_S)
            except (NatsConnectionError, NatsTimeout, NatsPermissionError):
                pass
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "FleetSubscriber":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<FleetSubscriber %s %s/%s %s>" % (self.url, self.stream, self.durable,
                                                 self.filter_subject)
