"""TLS for the NATS connection (nats_wire.py), driven through memory buffers.

nats-server 2.9 speaks TLS after its INFO: a server with a ``tls {}`` block
sends INFO in the clear with ``tls_required``, then expects the client's
TLS handshake on the same TCP connection. So a connection starts plain and
is upgraded here once INFO has been read.

The TLS engine (an ``ssl.SSLObject``) is fed through two memory BIOs rather
than wrapping the socket, and the socket stays a plain one. That keeps what
nats_wire.py promises: a read waits with ``select`` against its own
deadline (an SSL socket can hold decrypted bytes ``select`` does not see,
and a blocking SSL read waits for the rest of a record past any deadline);
the handshake keeps the connect deadline; and one thread reading while
others send never runs OpenSSL on one connection from two threads at once,
which OpenSSL does not allow. Every use of the SSLObject is under one lock,
held for the memory work only, never while the socket is waited on. Bytes
the engine produces go to the socket in the order it produced them: they
are taken from the outgoing BIO and sent only under the connection's send
lock (``encrypt`` and ``drain`` are called holding it).

Verification: the server's certificate must chain to the system's CAs, or
to ``tls_ca`` when it is given (then to it alone), and name the URL's host
(an IP address is matched against the certificate's IP entries). TLS 1.2 at
least, as nats-server asks. ``tls_cert`` (with ``tls_key`` when the key is
in a file of its own) is presented to a server that asks for a client
certificate (``verify: true``).
"""

from __future__ import annotations

import os
import select
import socket
import ssl
import threading
import time
from typing import Any, Optional, Tuple

# How many bytes one read of the socket asks for during the handshake, and
# one read of decrypted bytes asks the TLS engine for.
READ_CHUNK_BYTES = 64 << 10

# What the server sends to refuse this client's certificate, or the lack of
# one (OpenSSL's reason names): trying again changes nothing.
_CLIENT_CERT_ALERTS = ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "UNKNOWN_CA",
                       "CERTIFICATE_UNKNOWN", "UNSUPPORTED_CERTIFICATE", "CERTIFICATE_EXPIRED",
                       "CERTIFICATE_REVOKED")


def _path(value: Any, argument: str) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise ValueError("%s must be the path of a PEM file, got %r"
                         % (argument, type(value).__name__))
    return os.fspath(value)


def make_context(tls_ca: Any = None, tls_cert: Any = None,
                 tls_key: Any = None) -> ssl.SSLContext:
    """A client context verifying the server (against tls_ca alone when
    given, else the system's CAs) and its host name, presenting tls_cert
    (and tls_key) when given. ValueError naming the argument and file that
    cannot be loaded."""
    ca, cert, key = (_path(tls_ca, "tls_ca"), _path(tls_cert, "tls_cert"),
                     _path(tls_key, "tls_key"))
    if key is not None and cert is None:
        raise ValueError("tls_key is given without tls_cert: the key is for a client "
                         "certificate, give both")
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
    except (OSError, ssl.SSLError) as e:
        raise ValueError("tls_ca %s cannot be loaded as PEM certificates: %s"
                         % (ca, getattr(e, "strerror", None) or e)) from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert is not None:
        try:
            context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as e:
            raise ValueError("tls_cert %s%s cannot be loaded as a PEM certificate and its key: %s"
                             % (cert, "" if key is None else " with tls_key %s" % key,
                                getattr(e, "strerror", None) or e)) from None
    return context


class TlsOptions:
    """What a connect asked of TLS: ``wanted`` (a ``tls://`` URL or any TLS
    option given: a server that does not offer TLS is then refused rather
    than spoken to in the clear), the context to verify the server with,
    built when the options are given (so a bad file is a ValueError before
    anything is sent) or, with none, when a server requires TLS; ``trust``
    and ``asked_by`` for messages, ``has_cert`` whether this client has a
    certificate to present."""

    def __init__(self, url_asks: bool, tls_ca: Any = None, tls_cert: Any = None,
                 tls_key: Any = None):
        given = [name for name, value in (("tls_ca", tls_ca), ("tls_cert", tls_cert),
                                          ("tls_key", tls_key)) if value is not None]
        self.wanted = url_asks or bool(given)
        self.asked_by = " and ".join((["the tls:// URL"] if url_asks else []) + given)
        self._context = make_context(tls_ca, tls_cert, tls_key) if given else None
        self.trust = ("tls_ca %s" % os.fspath(tls_ca) if tls_ca is not None
                      else "the system's CAs")
        self.has_cert = tls_cert is not None

    def context(self) -> ssl.SSLContext:
        """The context to verify the server with."""
        if self._context is None:
            self._context = make_context()
        return self._context


def describe_error(e: ssl.SSLError, trust: str, has_cert: bool) -> Tuple[str, bool]:
    """A sentence saying why TLS failed, for a user, and whether it is
    about certificates (a configuration to change: not worth retrying).
    trust says what the server was verified against."""
    if isinstance(e, ssl.SSLCertVerificationError):
        why = e.verify_message or e.reason or str(e)
        if "hostname" in why.lower() or "ip address" in why.lower():
            return ("the server's certificate is not for this host (%s)" % why, True)
        return ("the server's certificate is not trusted: %s (verified against %s; give tls_ca= "
                "the CA that signed it)" % (why, trust), True)
    reason = (e.reason or "").upper()
    if any(alert in reason for alert in _CLIENT_CERT_ALERTS):
        if has_cert:
            return ("the server refused this client's certificate (tls_cert): %s" % e.reason,
                    True)
        return ("the server refused the connection for want of a client certificate (%s): give "
                "tls_cert= and tls_key=" % e.reason, True)
    return ("TLS failed: %s" % (e.reason or e), False)


class TlsChannel:
    """The TLS session of one connection over its plain socket.

    ``handshake`` runs once, with a deadline; then ``encrypt`` turns what
    is to be sent into bytes for the socket, ``decrypt`` what came from the
    socket into plain bytes, and ``drain`` takes bytes the engine produced
    while reading (a TLS 1.3 key update's answer). ``encrypt`` and
    ``drain`` are called under the caller's send lock, and the bytes they
    return are sent before it is released."""

    def __init__(self, sock: socket.socket, context: ssl.SSLContext, server_hostname: str,
                 trust: str, has_cert: bool):
        self._sock = sock
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=False,
                                     server_hostname=server_hostname)
        self._lock = threading.Lock()
        self.trust = trust
        """What the server is verified against, for messages."""
        self.has_cert = has_cert
        """Whether this client presents a certificate of its own."""

    def handshake(self, deadline: float, pending: bytes = b"") -> None:
        """Runs the TLS handshake, waiting for the server at most until
        deadline (monotonic). Raises ssl.SSLError (a certificate refused on
        either side, a broken handshake), ConnectionError (the server
        closed) or TimeoutError (the deadline passed)."""
        if pending:
            self._incoming.write(pending)
        while True:
            with self._lock:
                try:
                    self._tls.do_handshake()
                    done = True
                except ssl.SSLWantReadError:
                    done = False
                out = self._outgoing.read()
            if out:
                self._sock.sendall(out)
            if done:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the TLS handshake did not finish in time")
            readable, _, _ = select.select([self._sock], [], [], left)
            if not readable:
                raise TimeoutError("the TLS handshake did not finish in time")
            chunk = self._sock.recv(READ_CHUNK_BYTES)
            if not chunk:
                raise ConnectionError("the server closed the connection during the TLS handshake")
            with self._lock:
                self._incoming.write(chunk)

    def encrypt(self, data: bytes) -> bytes:
        """The bytes to send for data (and anything the engine had waiting
        before it, first). Called under the caller's send lock."""
        with self._lock:
            if data:
                self._tls.write(data)
            return self._outgoing.read()

    def drain(self) -> bytes:
        """What the engine produced and nobody sent yet. Called under the
        caller's send lock."""
        with self._lock:
            return self._outgoing.read()

    def decrypt(self, raw: bytes) -> bytes:
        """The plain bytes raw completes (b"" while a record is still
        partial). Raises ssl.SSLError for an alert or a broken record, and
        ConnectionError when the server ended the TLS session."""
        out = []
        with self._lock:
            self._incoming.write(raw)
            while True:
                try:
                    data = self._tls.read(READ_CHUNK_BYTES)
                except ssl.SSLWantReadError:
                    break
                except ssl.SSLZeroReturnError:
                    raise ConnectionError("the server ended the TLS session") from None
                if not data:
                    break
                out.append(data)
        return b"".join(out)

    def has_output(self) -> bool:
        """Whether drain has bytes to send."""
        with self._lock:
            return self._outgoing.pending > 0

    @property
    def version(self) -> Optional[str]:
        """The TLS version agreed ("TLSv1.3"), once the handshake is done."""
        return self._tls.version()
