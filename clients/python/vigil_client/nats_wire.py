"""A small synchronous NATS client over TCP, speaking NATS's text protocol.

A fleet of engines publishes into NATS JetStream (docs/fleet.md) and this
package keeps msgpack as its only dependency, so it carries the few parts
of a NATS client that a gateway needs: the handshake (INFO; TLS when the
URL is ``tls://``, TLS options are given or the server requires it; then
CONNECT with user and password, a token, or an nkey's signature of the
server's nonce from a creds file or a seed; verbose and pedantic off,
headers and no_responders on), PUB/HPUB, SUB/UNSUB, MSG/HMSG with their
header block (``NATS/1.0 [status [description]]`` then ``Key: Value``
lines), PING/PONG both ways, and request-reply through one wildcard inbox
subscription.

What the server sends is checked, not trusted: a control line longer than
CONTROL_LINE_MAX_BYTES, a header block longer than HEADER_BLOCK_MAX_BYTES, a
message larger than the max_payload the server announced, or a line this
client cannot parse closes the connection with :class:`NatsProtocolError`
instead of waiting for bytes that will never make sense. Every wait has a
deadline. A ``-ERR`` naming a permissions violation does not close the
connection (the server keeps it open); it is raised, naming the subject, at
the next call that waits. Any other ``-ERR`` ends the connection.

Nothing here starts a thread. A connection is read by one thread at a
time (``next_msg``, ``request``, ``flush``); while that thread reads,
others may ``publish``: sends go out whole under a lock of their own, and
reads wait for bytes with ``select`` rather than a socket timeout, so a
reader's deadline never becomes a sender's. ``shutdown`` wakes a reader
blocked on the socket (the RPC client's way to close, rpc_nats.py).

TLS is nats_tls.py's (the stdlib ssl module through memory buffers, so
every deadline above holds over TLS too), and nkeys and creds files are
nats_auth.py's (Ed25519 from the cryptography package, imported only when
they are used). Files named by ``creds``, ``nkey_seed`` and the TLS options
are read at every connect, before anything is sent: a bad one is a
ValueError naming it, and nothing reaches the server. Only one way of
proving who the client is may be given as arguments (user and password, a
token, creds, nkey_seed); it replaces any credentials in the URL.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import ssl
import threading
import time
from collections import deque
from typing import Any, Deque, Dict, List, Mapping, NamedTuple, Optional, Tuple
from urllib.parse import unquote, urlsplit

from .nats_auth import NkeyIdentity, load_creds, load_nkey_seed
from .nats_tls import TlsChannel, TlsOptions, describe_error

# The longest control line (INFO, MSG, -ERR...) this client reads. A
# cluster's INFO lists its peers' URLs and can run to a few KiB; a line
# longer than this is not a server talking.
CONTROL_LINE_MAX_BYTES = 64 << 10

# The longest header block of a message this client takes. JetStream's own
# headers and vigil's five are far below it.
HEADER_BLOCK_MAX_BYTES = 64 << 10

# What a server that announces no max_payload is taken to allow (NATS's
# default is 1 MiB); an announced one above NATS's hard limit is cut to it.
DEFAULT_MAX_PAYLOAD = 1 << 20
MAX_PAYLOAD_LIMIT = 64 << 20

# How long connecting (TCP, INFO, CONNECT, the first PONG) may take.
DEFAULT_CONNECT_TIMEOUT_S = 10.0

# How many bytes one recv asks for.
READ_CHUNK_BYTES = 64 << 10

# How many messages a subscription keeps for its reader before it drops the
# oldest (and counts it): a reader that stopped reading must not grow memory.
SUBSCRIPTION_BACKLOG_MAX = 65536

DEFAULT_PORT = 4222

# Subjects and header names: printable ASCII with no whitespace (NATS splits
# control lines at whitespace, header lines at ':' and CRLF).
_SUBJECT_RE = re.compile(r"^[!-~]+$")
_HEADER_NAME_RE = re.compile(r"^[!-9;-~]+$")          # printable, no ':'
_DIGITS_RE = re.compile(rb"^[0-9]{1,12}$")
_VIOLATION_RE = re.compile(r"Permissions Violation for (Publish|Subscription) to \"?([^\"\s]+)\"?",
                           re.I)


class NatsError(Exception):
    """Something a NATS server said or did that this client cannot go on
    with; the base of this module's errors."""


class NatsConnectionError(NatsError, ConnectionError):
    """The connection is gone or could not be made; ``url`` says which
    server and the message why. Every later call raises it again."""

    def __init__(self, message: str, url: str = ""):
        super().__init__(message)
        self.url = url


class NatsAuthError(NatsConnectionError):
    """Authentication failed, and trying again as it is will not help: the
    server refused the credentials (``Authorization Violation``), or TLS
    could not prove the server (:class:`NatsTLSError`)."""


class NatsTLSError(NatsAuthError):
    """TLS failed for a reason that trying again will not fix: the
    server's certificate is not trusted or not for this host, the server
    refused this client's certificate (or the lack of one), or TLS was
    asked for (``tls://``, ``tls_ca=``...) and the server does not offer
    it. The message says which and what to give."""


class NatsProtocolError(NatsConnectionError):
    """The server sent something that is not the NATS protocol, or breaks a
    bound of this client; the connection is closed."""


class NatsPermissionError(NatsError, PermissionError):
    """The server refused a publish or a subscription for want of the right
    to it: ``operation`` is ``"publish"`` or ``"subscribe"``, ``subject``
    the subject refused. The connection stays usable."""

    def __init__(self, operation: str, subject: str, server_text: str):
        super().__init__("the NATS user may not %s to %s (server: %s)"
                         % (operation, subject, server_text))
        self.operation = operation
        self.subject = subject
        self.server_text = server_text


class NatsTimeout(NatsError, TimeoutError):
    """No answer within the time given."""


class NoResponders(NatsError):
    """A request found nobody subscribed to its subject (status 503):
    ``subject`` says which. For JetStream it means no stream or no
    JetStream behind that API subject."""

    def __init__(self, subject: str):
        super().__init__("no responders on %s (is JetStream enabled on the server, and for "
                         "this account?)" % subject)
        self.subject = subject


class Msg(NamedTuple):
    """A message as delivered: its subject, the subscription's ``sid``, the
    ``reply`` subject (None: none), its ``headers`` (name to every value, in
    order; empty for a MSG), the ``status`` code of a status message (404,
    408, 409, 503..., None for an ordinary message) with its
    ``description``, and the payload ``data``."""

    subject: str
    sid: int
    reply: Optional[str]
    headers: Dict[str, List[str]]
    status: Optional[int]
    description: str
    data: bytes

    def header(self, name: str) -> Optional[str]:
        """The header's one value; None when it is absent. A header given
        more than once raises ValueError (for a message that is checked,
        two values is a malformed message, not a choice)."""
        values = self.headers.get(name)
        if not values:
            return None
        if len(values) > 1:
            raise ValueError("header %s is given %d times" % (name, len(values)))
        return values[0]


class ServerAddress(NamedTuple):
    """Where a URL points, the credentials it carries, and whether it asks
    for TLS (``tls://``)."""

    host: str
    port: int
    user: Optional[str]
    password: Optional[str]
    token: Optional[str]
    tls: bool = False

    def display(self) -> str:
        """scheme://host:port, for messages (never the credentials)."""
        return "%s://%s:%d" % ("tls" if self.tls else "nats", self.host, self.port)


def parse_url(url: str) -> ServerAddress:
    """``nats://[user:password@ | token@]host[:port]`` (or ``host:port``),
    or ``tls://...``, which asks for TLS; ValueError naming the URL
    (without its credentials) for anything else."""
    if not isinstance(url, str) or not url:
        raise ValueError("url must be a non-empty string like nats://host:4222, got %r" % (url,))
    text = url if "://" in url else "nats://" + url
    parts = urlsplit(text)
    shown = "%s://%s" % (parts.scheme, parts.hostname or "")
    if parts.scheme not in ("nats", "tls"):
        raise ValueError("url %s: only nats:// and tls:// are supported" % shown)
    if not parts.hostname:
        raise ValueError("url %r has no host" % shown)
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("url %s: a NATS URL has no path, query or fragment" % shown)
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise ValueError("url %s: the port is not a number 1..65535" % shown) from None
    user = password = token = None
    if parts.username is not None:
        if parts.password is not None:
            user, password = unquote(parts.username), unquote(parts.password)
        else:
            token = unquote(parts.username)
    return ServerAddress(parts.hostname, port, user, password, token, parts.scheme == "tls")


def check_subject(subject: str, what: str = "subject") -> str:
    """subject, or ValueError naming it: non-empty printable ASCII without
    whitespace, no empty token."""
    if not isinstance(subject, str) or not _SUBJECT_RE.match(subject) \
            or "" in subject.split("."):
        raise ValueError("%s %r is not a NATS subject (printable ASCII, no spaces, no empty "
                         "token)" % (what, subject))
    return subject


def encode_headers(headers: Mapping[str, Any]) -> bytes:
    """The ``NATS/1.0`` header block for headers (a value may be a list of
    values); ValueError naming a header whose name or value cannot be
    carried (a ':', CR or LF, a non-ASCII name)."""
    out = [b"NATS/1.0\r\n"]
    for name, value in headers.items():
        if not isinstance(name, str) or not _HEADER_NAME_RE.match(name):
            raise ValueError("header name %r cannot be carried by NATS" % (name,))
        for v in value if isinstance(value, (list, tuple)) else [value]:
            v = str(v)
            if "\r" in v or "\n" in v:
                raise ValueError("header %s: its value holds a CR or LF" % name)
            out.append(b"%s: %s\r\n" % (name.encode(), v.encode()))
    out.append(b"\r\n")
    return b"".join(out)


def decode_headers(block: bytes) -> Tuple[Optional[int], str, Dict[str, List[str]]]:
    """(status, description, headers) of a header block; NatsProtocolError
    when it is not ``NATS/1.0 ...`` lines ending with an empty line."""
    if not block.endswith(b"\r\n\r\n"):
        raise NatsProtocolError("a header block does not end with an empty line")
    lines = block[:-4].split(b"\r\n")
    first = lines[0]
    if not first.startswith(b"NATS/1.0"):
        raise NatsProtocolError("a header block starts with %r, not NATS/1.0" % first[:40])
    status: Optional[int] = None
    description = ""
    rest = first[len(b"NATS/1.0"):].strip()
    if rest:
        code, _, desc = rest.partition(b" ")
        if not re.match(rb"^[0-9]{3}$", code):
            raise NatsProtocolError("a header block's status %r is not 3 digits" % code[:40])
        status = int(code)
        description = desc.strip().decode("utf-8", "replace")
    headers: Dict[str, List[str]] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name.strip():
            raise NatsProtocolError("a header line %r has no 'name:'" % line[:60])
        key = name.strip().decode("utf-8", "replace")
        headers.setdefault(key, []).append(value.strip().decode("utf-8", "replace"))
    return status, description, headers


class _Subscription:
    """One SUB: its subject and what arrived for it, bounded."""

    def __init__(self, sid: int, subject: str):
        self.sid = sid
        self.subject = subject
        self.pending: Deque[Msg] = deque()
        self.dropped = 0


# The arguments of NatsConnection.connect that say who the client is (one
# way at most) and how the server is verified: FleetSubscriber, NatsRpc and
# the clients take them too and pass them on, and a client's
# fleet_subscriber copies them.
CONNECT_IDENTITY_OPTIONS = ("user", "password", "token", "creds", "nkey_seed")
CONNECT_TLS_OPTIONS = ("tls_ca", "tls_cert", "tls_key")


# The inbox prefix NATS clients use unless a user's permissions call for
# one of its own (``_INBOX_<user>``: docs/fleet.md, section 5).
DEFAULT_INBOX_PREFIX = "_INBOX"


def check_inbox_prefix(prefix: str) -> str:
    """prefix, or ValueError naming it: a subject with no wildcard."""
    check_subject(prefix, "inbox_prefix")
    if any(tok in ("*", ">") for tok in prefix.split(".")):
        raise ValueError("inbox_prefix %r holds a wildcard token; give the literal prefix your "
                         "NATS user may subscribe under (as _INBOX_alice for _INBOX_alice.>)"
                         % (prefix,))
    return prefix


def new_inbox_prefix(base: str = DEFAULT_INBOX_PREFIX) -> str:
    """``<base>.<22 random characters>``: a prefix no other client uses."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    return base + "." + "".join(alphabet[b % 62] for b in os.urandom(22))


class NatsConnection:
    """One connection to a NATS server. ``NatsConnection.connect(url)``
    makes it; ``close()`` (or ``with``) ends it."""

    def __init__(self, sock: socket.socket, address: ServerAddress, inbox_prefix: str):
        self._sock = sock
        self.address = address
        self.url = address.display()
        self.server_info: Dict[str, Any] = {}
        self.max_payload = DEFAULT_MAX_PAYLOAD
        self._buf = bytearray()
        self._subs: Dict[int, _Subscription] = {}
        self._next_sid = 1
        self._pings_sent = 0              # PONGs answer PINGs in order: counting
        self._pongs_received = 0          # both says which PING was answered
        self._violations: Deque[NatsPermissionError] = deque()
        self._closed: Optional[NatsConnectionError] = None
        self._send_lock = threading.Lock()  # one sender at a time: frames go out whole
        self._inbox_prefix = inbox_prefix
        self._inbox_sid: Optional[int] = None
        self._next_request = 1
        self.stray_messages = 0
        """Messages for a subscription that is gone, or replies nobody waits for."""
        self._tls: Optional[TlsChannel] = None   # the TLS session, once upgraded
        self._refusal_hint = ""           # who this client said it was, for a refusal

    # -- making and ending ------------------------------------------------

    @classmethod
    def connect(cls, url: str, *, user: Optional[str] = None, password: Optional[str] = None,
                token: Optional[str] = None, creds: Any = None, nkey_seed: Any = None,
                tls_ca: Any = None, tls_cert: Any = None, tls_key: Any = None,
                name: Optional[str] = None, timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
                inbox_prefix: Optional[str] = None) -> "NatsConnection":
        """Connects to url and completes the handshake (INFO, TLS when asked
        for or required, CONNECT, PING, PONG).

        Who the client is: credentials in the URL, or one of ``user`` and
        ``password``, ``token``, ``creds`` (a creds file's path: its user
        JWT and the signature of the server's nonce with its seed) or
        ``nkey_seed`` (a user seed file's path: its public key and the
        signature), which replaces the URL's. TLS: a ``tls://`` URL, or any
        of ``tls_ca`` (a PEM file of the CAs to trust instead of the
        system's), ``tls_cert`` and ``tls_key`` (a client certificate and
        its key, for a server that verifies clients), asks for it; a server
        that requires it gets it anyway, verified against the system's CAs.

        Raises ValueError (a bad URL or argument, a creds, seed or PEM file
        that cannot be used: before anything is sent), ImportError (creds or
        nkey_seed without the cryptography package), NatsConnectionError
        (unreachable, closed), NatsAuthError (refused credentials),
        NatsTLSError (a certificate refused either way, TLS asked for and
        not offered) or NatsProtocolError (not a NATS server)."""
        address = parse_url(url)
        ways = [way for way, given in (("user/password", user is not None or password is not None),
                                       ("token", token is not None), ("creds", creds is not None),
                                       ("nkey_seed", nkey_seed is not None)) if given]
        if len(ways) > 1:
            raise ValueError("give one way to authenticate, not %s" % " and ".join(ways))
        if ways:
            address = address._replace(user=user, password=password, token=token)
        identity: Optional[NkeyIdentity] = None
        if creds is not None:
            identity = load_creds(creds)
        elif nkey_seed is not None:
            identity = load_nkey_seed(nkey_seed)
        tls = TlsOptions(address.tls, tls_ca, tls_cert, tls_key)
        deadline = time.monotonic() + timeout
        try:
            sock = socket.create_connection((address.host, address.port), timeout=timeout)
        except OSError as e:
            raise NatsConnectionError("cannot connect to %s: %s" % (address.display(), e),
                                      address.display()) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The socket's timeout bounds a send to a server that stopped
        # reading; reads wait with select against their own deadlines.
        sock.settimeout(DEFAULT_CONNECT_TIMEOUT_S)
        conn = cls(sock, address, inbox_prefix or new_inbox_prefix())
        try:
            conn._handshake(name, deadline, identity, tls)
        except BaseException:
            conn.close()
            raise
        return conn

    def _handshake(self, name: Optional[str], deadline: float,
                   identity: Optional[NkeyIdentity], tls: TlsOptions) -> None:
        op, args = self._read_control(deadline)
        if op != b"INFO":
            raise self._fail(NatsProtocolError("%s sent %r, not INFO, on connect"
                                               % (self.url, op[:20])))
        self._take_info(args)
        info = self.server_info
        if tls.wanted or info.get("tls_required"):
            self._start_tls(tls, deadline)
        connect: Dict[str, Any] = {
            "verbose": False, "pedantic": False, "tls_required": self._tls is not None,
            "lang": "python-vigil", "version": "0.1.0", "protocol": 1, "echo": True,
            "headers": True, "no_responders": True,
        }
        if name:
            connect["name"] = name
        if self.address.user is not None:
            connect["user"] = self.address.user
            connect["pass"] = self.address.password or ""
        if self.address.token is not None:
            connect["auth_token"] = self.address.token
        if identity is not None:
            self._refusal_hint = " (%s)" % identity.describe()
            try:
                connect.update(identity.connect_fields(info.get("nonce")))
            except ValueError as e:
                raise self._fail(NatsProtocolError("%s: %s" % (self.url, e), self.url)) from None
        elif info.get("nonce") and self.address.user is None and self.address.token is None:
            self._refusal_hint = (" (the server asked for an nkey signature: give creds= or "
                                  "nkey_seed=)")
        # One send for both: a server that drops the connection at once
        # (a refused client certificate) cannot fail the second write.
        self._pings_sent += 1
        target = self._pings_sent
        self._send(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        try:
            while self._pongs_received < target:
                if not self._read_one(deadline):
                    raise self._fail(NatsConnectionError(
                        "%s did not answer a PING within the time given for connecting"
                        % self.url, self.url))
        except NatsTLSError:
            raise
        except NatsConnectionError as e:
            if self._tls is not None and self._tls.has_cert and not isinstance(e, NatsAuthError):
                raise NatsConnectionError("%s (after the TLS handshake: did the server refuse "
                                          "this client's certificate?)" % e, self.url) from None
            raise

    def _start_tls(self, tls: TlsOptions, deadline: float) -> None:
        """Upgrades the connection to TLS after the server's INFO."""
        info = self.server_info
        if not (info.get("tls_required") or info.get("tls_available")):
            raise self._fail(NatsTLSError("%s does not offer TLS, which %s asks for"
                                          % (self.url, tls.asked_by), self.url))
        if info.get("tls_verify") and not tls.has_cert:
            raise self._fail(NatsTLSError("%s verifies its clients' certificates (tls_verify): "
                                          "give tls_cert= and tls_key=" % self.url, self.url))
        if self._buf:
            raise self._fail(NatsProtocolError("%s sent bytes after INFO, before the TLS "
                                               "handshake" % self.url, self.url))
        try:
            channel = TlsChannel(self._sock, tls.context(), self.address.host, tls.trust,
                                 tls.has_cert)
            channel.handshake(deadline)
        except ssl.SSLError as e:
            text, about_certificates = describe_error(e, tls.trust, tls.has_cert)
            kind = NatsTLSError if about_certificates else NatsConnectionError
            raise self._fail(kind("%s: %s" % (self.url, text), self.url)) from None
        except TimeoutError:
            raise self._fail(NatsConnectionError("%s did not finish the TLS handshake in the "
                                                 "time given for connecting" % self.url,
                                                 self.url)) from None
        except OSError as e:
            raise self._fail(NatsConnectionError("%s: the TLS handshake failed: %s"
                                                 % (self.url, e), self.url)) from None
        self._tls = channel

    @property
    def tls_version(self) -> Optional[str]:
        """The TLS version in use ("TLSv1.3"); None on a plain connection."""
        return self._tls.version if self._tls is not None else None

    def close(self) -> None:
        """Ends the connection (idempotent). Nothing is flushed: call
        ``flush`` first to know the server has what was sent."""
        if self._closed is None:
            self._closed = NatsConnectionError("the connection to %s was closed by this client"
                                               % self.url, self.url)
        try:
            self._sock.close()
        except OSError:
            pass

    def shutdown(self) -> None:
        """Ends the connection from any thread, waking a thread blocked
        reading it (which then gets NatsConnectionError); ``close`` still
        releases the socket once that thread is done."""
        if self._closed is None:
            self._closed = NatsConnectionError("the connection to %s was closed by this client"
                                               % self.url, self.url)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def __enter__(self) -> "NatsConnection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def is_closed(self) -> bool:
        return self._closed is not None

    # -- sending ----------------------------------------------------------

    def publish(self, subject: str, data: bytes = b"", reply: Optional[str] = None,
                headers: Optional[Mapping[str, Any]] = None) -> None:
        """PUB (HPUB with headers) data to subject. ValueError for a bad
        subject or header, or data over the server's max_payload. A
        permissions refusal comes back later, at the next wait."""
        check_subject(subject)
        if reply is not None:
            check_subject(reply, "reply subject")
        head = encode_headers(headers) if headers else b""
        if len(head) + len(data) > self.max_payload:
            raise ValueError("a message of %d bytes to %s is over the server's max_payload "
                             "(%d)" % (len(head) + len(data), subject, self.max_payload))
        target = subject if reply is None else "%s %s" % (subject, reply)
        if headers:
            line = "HPUB %s %d %d\r\n" % (target, len(head), len(head) + len(data))
        else:
            line = "PUB %s %d\r\n" % (target, len(data))
        self._send(line.encode() + head + bytes(data) + b"\r\n")

    def subscribe(self, subject: str) -> int:
        """SUB subject; returns its sid, for ``next_msg`` and ``unsubscribe``."""
        check_subject(subject)
        sid = self._next_sid
        self._next_sid += 1
        self._subs[sid] = _Subscription(sid, subject)
        self._send(b"SUB %s %d\r\n" % (subject.encode(), sid))
        return sid

    def unsubscribe(self, sid: int) -> None:
        """UNSUB sid; what arrives for it afterwards is dropped."""
        if self._subs.pop(sid, None) is not None and self._closed is None:
            self._send(b"UNSUB %d\r\n" % sid)

    def flush(self, timeout: float) -> None:
        """PING and wait for the PONG: the server has then processed
        everything sent before (and any refusal of it has been raised)."""
        self._ping_and_wait(time.monotonic() + timeout, "a flush")
        self._raise_violation()

    def _ping_and_wait(self, deadline: float, what: str) -> None:
        self._send(b"PING\r\n")
        self._pings_sent += 1
        target = self._pings_sent
        while self._pongs_received < target:
            if not self._read_one(deadline):
                raise NatsTimeout("%s did not answer a PING within the time given for %s"
                                  % (self.url, what))

    # -- receiving --------------------------------------------------------

    def next_msg(self, sid: int, timeout: Optional[float]) -> Optional[Msg]:
        """The next message of subscription sid, waiting at most timeout
        seconds (None: without end); None when none came in time."""
        sub = self._subs.get(sid)
        if sub is None:
            raise ValueError("no subscription %d on this connection" % sid)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._raise_violation()
            if sub.pending:
                return sub.pending.popleft()
            if deadline is not None and time.monotonic() >= deadline:
                return None
            if not self._read_one(deadline):
                return None

    def request(self, subject: str, data: bytes = b"", timeout: float = 5.0,
                headers: Optional[Mapping[str, Any]] = None) -> Msg:
        """Publishes data to subject with a reply subject in this
        connection's inbox and returns the reply. NoResponders when nobody
        listens, NatsTimeout when no reply comes in time,
        NatsPermissionError when the subject (or the inbox) is refused."""
        if self._inbox_sid is None:
            self._inbox_sid = self.subscribe(self._inbox_prefix + ".*")
        reply = "%s.%d" % (self._inbox_prefix, self._next_request)
        self._next_request += 1
        self.publish(subject, data, reply, headers)
        deadline = time.monotonic() + timeout
        sub = self._subs[self._inbox_sid]
        while True:
            while sub.pending:
                msg = sub.pending.popleft()
                if msg.subject != reply:
                    self.stray_messages += 1      # a reply to an earlier request that timed out
                    continue
                if msg.status == 503:
                    raise NoResponders(subject)
                return msg
            self._raise_violation()
            if not self._read_one(deadline):
                raise NatsTimeout("no reply from %s to a request on %s within %.1f s"
                                  % (self.url, subject, timeout))

    def new_inbox(self) -> str:
        """A fresh subject under this connection's inbox prefix that no
        request uses (for a subscription of one's own)."""
        subject = "%s.s%d" % (self._inbox_prefix, self._next_request)
        self._next_request += 1
        return subject

    def dropped(self, sid: int) -> int:
        """How many messages subscription sid dropped because its reader
        let SUBSCRIPTION_BACKLOG_MAX of them wait."""
        sub = self._subs.get(sid)
        return sub.dropped if sub else 0

    # -- the reading machinery --------------------------------------------

    def _raise_violation(self) -> None:
        if self._violations:
            raise self._violations.popleft()

    def _fail(self, error: NatsConnectionError) -> NatsConnectionError:
        """Closes the connection for error and returns it to raise."""
        if self._closed is None:
            self._closed = error
        try:
            self._sock.close()
        except OSError:
            pass
        return error

    def _send(self, data: bytes) -> None:
        if self._closed is not None:
            raise self._closed
        try:
            with self._send_lock:
                if self._tls is not None:
                    data = self._tls.encrypt(data)
                self._sock.sendall(data)
        except ssl.SSLError as e:
            raise self._fail(self._tls_failure(e)) from None
        except OSError as e:
            raise self._fail(NatsConnectionError("the connection to %s failed while sending: %s"
                                                 % (self.url, e), self.url)) from None

    def _fill(self, deadline: Optional[float]) -> bool:
        """Reads more bytes into the buffer; False when the deadline passed
        first. Raises NatsConnectionError when the server closed."""
        if self._closed is not None:
            raise self._closed
        left: Optional[float] = None
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
        try:
            readable, _, _ = select.select([self._sock], [], [], left)
            if not readable:
                return False
            chunk = self._sock.recv(READ_CHUNK_BYTES)
        except socket.timeout:
            return False
        except (OSError, ValueError) as e:     # ValueError: the socket was closed meanwhile
            raise self._fail(NatsConnectionError("the connection to %s failed: %s"
                                                 % (self.url, e), self.url)) from None
        if not chunk:
            raise self._fail(NatsConnectionError("%s closed the connection" % self.url,
                                                 self.url))
        if self._tls is not None:
            chunk = self._decrypt(chunk)
        self._buf += chunk
        return True

    def _decrypt(self, raw: bytes) -> bytes:
        """The plain bytes raw completes; sends what the TLS engine has to
        say back (in order with every other send: under the send lock)."""
        assert self._tls is not None
        try:
            plain = self._tls.decrypt(raw)
            if self._tls.has_output():
                with self._send_lock:
                    self._sock.sendall(self._tls.drain())
        except ssl.SSLError as e:
            raise self._fail(self._tls_failure(e)) from None
        except OSError as e:                   # ConnectionError: the TLS session ended
            raise self._fail(NatsConnectionError("the connection to %s failed: %s"
                                                 % (self.url, e), self.url)) from None
        return plain

    def _tls_failure(self, e: ssl.SSLError) -> NatsConnectionError:
        """The error to raise for a TLS failure after the handshake (an
        alert: a TLS 1.3 server refuses a client certificate only then)."""
        assert self._tls is not None
        text, about_certificates = describe_error(e, self._tls.trust, self._tls.has_cert)
        kind = NatsTLSError if about_certificates else NatsConnectionError
        return kind("%s: %s" % (self.url, text), self.url)

    def _read_line(self, deadline: Optional[float]) -> Optional[bytes]:
        """One control line without its CRLF; None at the deadline."""
        start = 0
        while True:
            end = self._buf.find(b"\r\n", start)
            if end >= 0:
                if end > CONTROL_LINE_MAX_BYTES:
                    break
                line = bytes(self._buf[:end])
                del self._buf[:end + 2]
                return line
            if len(self._buf) > CONTROL_LINE_MAX_BYTES:
                break
            start = max(0, len(self._buf) - 1)
            if not self._fill(deadline):
                return None
        raise self._fail(NatsProtocolError("%s sent a control line longer than %d bytes"
                                           % (self.url, CONTROL_LINE_MAX_BYTES), self.url))

    def _read_exact(self, n: int, deadline: Optional[float]) -> Optional[bytes]:
        """n bytes and the CRLF after them; None at the deadline."""
        while len(self._buf) < n + 2:
            if not self._fill(deadline):
                return None
        if self._buf[n:n + 2] != b"\r\n":
            raise self._fail(NatsProtocolError("%s sent a message whose payload is not followed "
                                               "by CRLF" % self.url, self.url))
        data = bytes(self._buf[:n])
        del self._buf[:n + 2]
        return data

    def _read_control(self, deadline: Optional[float]) -> Tuple[bytes, bytes]:
        line = self._read_line(deadline)
        if line is None:
            raise self._fail(NatsConnectionError("%s said nothing in time" % self.url, self.url))
        op, _, args = line.partition(b" ")
        return op.upper(), args

    def _take_info(self, args: bytes) -> None:
        try:
            info = json.loads(args.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            info = None
        if not isinstance(info, dict):
            raise self._fail(NatsProtocolError("%s sent an INFO that is not a JSON object"
                                               % self.url, self.url))
        self.server_info = info
        mp = info.get("max_payload")
        if isinstance(mp, int) and not isinstance(mp, bool) and mp > 0:
            self.max_payload = min(mp, MAX_PAYLOAD_LIMIT)

    def _read_one(self, deadline: Optional[float]) -> bool:
        """Reads and handles one server operation (a message goes to its
        subscription); False when the deadline passed before a whole one
        arrived (what was read so far stays buffered)."""
        # Peek: a message's control line is consumed only once its payload
        # is here too, so a deadline in the middle loses nothing.
        while True:
            end = self._buf.find(b"\r\n")
            if end >= 0:
                break
            if len(self._buf) > CONTROL_LINE_MAX_BYTES:
                self._read_line(deadline)     # raises the protocol error
            if not self._fill(deadline):
                return False
        if end > CONTROL_LINE_MAX_BYTES:
            self._read_line(deadline)         # raises the protocol error
        line = bytes(self._buf[:end])
        op, _, args = line.partition(b" ")
        op = op.upper()
        if op in (b"MSG", b"HMSG"):
            return self._read_msg(op, args.split(), end, deadline)
        del self._buf[:end + 2]
        if op == b"PING":
            self._send(b"PONG\r\n")
        elif op == b"PONG":
            self._pongs_received += 1
        elif op == b"+OK":
            pass
        elif op == b"INFO":
            self._take_info(args)
        elif op == b"-ERR":
            self._take_error(args.decode("utf-8", "replace").strip().strip("'"))
        else:
            raise self._fail(NatsProtocolError("%s sent an unknown operation %r"
                                               % (self.url, line[:60]), self.url))
        return True

    def _take_error(self, text: str) -> None:
        m = _VIOLATION_RE.search(text)
        if m:
            operation = "publish" if m.group(1).lower() == "publish" else "subscribe"
            self._violations.append(NatsPermissionError(operation, m.group(2), text))
            return
        lowered = text.lower()
        if "authorization" in lowered or "authentication" in lowered:
            raise self._fail(NatsAuthError("%s refused the credentials: %s%s"
                                           % (self.url, text, self._refusal_hint), self.url))
        raise self._fail(NatsConnectionError("%s ended the connection: %s" % (self.url, text),
                                             self.url))

    def _read_msg(self, op: bytes, args: List[bytes], line_end: int,
                  deadline: Optional[float]) -> bool:
        with_headers = op == b"HMSG"
        counts = 2 if with_headers else 1
        if len(args) not in (2 + counts, 3 + counts) \
                or not all(_DIGITS_RE.match(a) for a in args[-counts:]) \
                or not _DIGITS_RE.match(args[1]):
            raise self._fail(NatsProtocolError("%s sent a malformed %s line: %r"
                                               % (self.url, op.decode(),
                                                  bytes(self._buf[:min(line_end, 120)])),
                                               self.url))
        total = int(args[-1])
        head_len = int(args[-2]) if with_headers else 0
        if total > self.max_payload or head_len > total or head_len > HEADER_BLOCK_MAX_BYTES:
            raise self._fail(NatsProtocolError(
                "%s sent a %s of %d bytes (header block %d): over max_payload %d or the header "
                "bound %d" % (self.url, op.decode(), total, head_len, self.max_payload,
                              HEADER_BLOCK_MAX_BYTES), self.url))
        # The whole message must be buffered before anything is consumed.
        need = line_end + 2 + total + 2
        while len(self._buf) < need:
            if not self._fill(deadline):
                return False
        del self._buf[:line_end + 2]
        body = self._read_exact(total, deadline)
        assert body is not None               # it was all buffered
        subject = args[0].decode("utf-8", "replace")
        reply = args[2].decode("utf-8", "replace") if len(args) == 3 + counts else None
        status: Optional[int] = None
        description = ""
        headers: Dict[str, List[str]] = {}
        if with_headers:
            try:
                status, description, headers = decode_headers(body[:head_len])
            except NatsProtocolError as e:
                raise self._fail(NatsProtocolError("%s: %s" % (self.url, e), self.url)) from None
        msg = Msg(subject, int(args[1]), reply, headers, status, description, body[head_len:])
        sub = self._subs.get(msg.sid)
        if sub is None:
            self.stray_messages += 1
            return True
        if len(sub.pending) >= SUBSCRIPTION_BACKLOG_MAX:
            sub.pending.popleft()
            sub.dropped += 1
        sub.pending.append(msg)
        return True
