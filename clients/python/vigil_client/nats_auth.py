"""How this client proves to a NATS server who it is with an nkey: a creds
file, or a user's nkey seed alone.

A server that knows users by nkey (``nkey:`` users in its config) or by JWT
(operator mode: accounts signed by an operator, users signed by an account)
puts a random ``nonce`` in its INFO. The client answers in CONNECT with
``sig``, the Ed25519 signature of that nonce made with its user seed
(base64url, no padding), beside either ``nkey``, its public key, or ``jwt``,
the user JWT an account signed for that key. A creds file (``nsc generate
creds``) carries both the JWT and the seed:

    -----BEGIN NATS USER JWT-----
    eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJ...
    ------END NATS USER JWT------
    (any lines outside the two blocks: nsc writes a warning there)
    -----BEGIN USER NKEY SEED-----
    SUA...
    ------END USER NKEY SEED------

The file is hostile input until checked, and a secret: it must be a regular
file of at most CREDS_FILE_MAX_BYTES, ASCII, hold each block exactly once
(the marker's words exact, a run of three or more dashes on each side, as
every NATS client writes them; one line between the markers), a JWT of
three base64url parts whose claims are a user's with the seed's public key
as subject, and a seed that is a valid user seed (base32, seed prefix,
CRC-16: nkeys.py). Anything else is a ValueError naming the file and what is
wrong; no message ever holds the seed or a piece of it. A file given as
``nkey_seed`` holds the seed alone (``nsc``'s ``.nk`` files), whitespace
around it allowed.

Files are read at every connect, not once: a creds file renewed in place
(a new JWT before the old one expires) is used at the next reconnect. The
seed is held only while a connect signs its nonce.

A creds file readable by its group or by others is not refused: nats.c (the
engine's ``--nats-creds``, the CLI's ``VIGIL_NATS_CREDS``) and nats.js do not
refuse one, and secrets mounted by Kubernetes (0644) or Docker (0444) are
such files; the same file must work for the whole fleet. Keep it 0600 where
you can.

Ed25519 comes from the cryptography package (Debian: python3-cryptography),
imported here only when a creds file or a seed is used, so msgpack stays the
package's one hard dependency. Without it, using one raises ImportError
saying how to install it, before anything is sent.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import stat
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .nkeys import decode_seed, encode_public

# The largest creds or seed file read. nsc's creds files are about 1 KiB (a
# user JWT with a few permissions, the seed, the warning); a JWT that lists
# many subjects can run to a few KiB. Past this it is not a creds file.
CREDS_FILE_MAX_BYTES = 16 << 10

# The longest nonce signed. nats-server's are 15 characters (11 random
# bytes, base64url); a server's INFO that offers more is not asking for a
# signature of a challenge but for one of something else.
NONCE_MAX_CHARS = 128
_NONCE_RE = re.compile(r"^[A-Za-z0-9_=+/-]+$")

# The longest path taken (Linux's PATH_MAX), and what a seed looks like: a
# longer "path", or one that looks like a seed or holds a marker or a line
# break, is a secret given where its file belongs.
PATH_MAX_CHARS = 4096
_LOOKS_LIKE_SEED_RE = re.compile(r"^S[A-Z2-7]{50,}$")

_JWT_MARKER = "NATS USER JWT"
_SEED_MARKER = "USER NKEY SEED"
_MARKER_RE = re.compile(r"^-{3,}(BEGIN|END) ([A-Z ]+?)-{3,}$")
_JWT_RE = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")

Signer = Callable[[bytes], bytes]


def _ed25519_signer(private_key: bytes) -> Tuple[Signer, bytes]:
    """(sign, 32-byte public key) for an Ed25519 private key, through the
    cryptography package, imported now; ImportError saying how to get it."""
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    except ImportError as missing:
        raise ImportError(
            "creds= and nkey_seed= sign the NATS server's nonce with Ed25519, which needs the "
            "cryptography package, and %s cannot import it: on Debian's Python, apt-get install "
            "python3-cryptography; elsewhere %s -m pip install cryptography (or "
            "vigil-client[nats-auth])" % (sys.executable, sys.executable)) from missing
    key = Ed25519PrivateKey.from_private_bytes(private_key)
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return key.sign, public


class NkeyIdentity:
    """A NATS user proven by an nkey: its public key, its user JWT (None
    for a seed alone), and how to sign a nonce. ``describe`` names it for
    an error (the file and the public key, never the seed)."""

    def __init__(self, public_key: str, jwt: Optional[str], sign: Signer, source: str,
                 claims: Optional[Dict[str, Any]] = None):
        self.public_key = public_key
        self.jwt = jwt
        self._sign = sign
        self.source = source
        self.claims = claims or {}

    def connect_fields(self, nonce: Any) -> Dict[str, str]:
        """What CONNECT carries for this user: ``jwt`` or ``nkey``, and
        ``sig`` when the server sent a nonce. ValueError for a nonce that
        is not a short base64 string (nothing is signed then)."""
        fields = {"jwt": self.jwt} if self.jwt is not None else {"nkey": self.public_key}
        if nonce is None:
            return fields
        if not isinstance(nonce, str) or not 0 < len(nonce) <= NONCE_MAX_CHARS \
                or not _NONCE_RE.match(nonce):
            raise ValueError("the server's nonce is not a base64 string of 1..%d characters; "
                             "it is not signed" % NONCE_MAX_CHARS)
        signature = self._sign(nonce.encode("ascii"))
        fields["sig"] = base64.urlsafe_b64encode(signature).decode("ascii").rstrip("=")
        return fields

    def describe(self) -> str:
        """Which user this is, for a refusal: the file, the public key,
        the account that signed its JWT, and an expiry already past."""
        text = "%s, user %s" % (self.source, self.public_key)
        issuer = self.claims.get("issuer_account") or self.claims.get("iss")
        if isinstance(issuer, str):
            text += ", signed by %s" % issuer
        expires = self.claims.get("exp")
        if isinstance(expires, int) and not isinstance(expires, bool) and 0 < expires < time.time():
            text += ", whose JWT expired at %s" % time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                                time.gmtime(expires))
        return text


def _read_small_file(path: Any, argument: str) -> str:
    """The text of the file at path, checked to be a regular ASCII file of
    at most CREDS_FILE_MAX_BYTES; ValueError naming argument and path."""
    if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str) \
            or not os.fspath(path):
        raise ValueError("%s must be the path of a file, as a non-empty str, got %s"
                         % (argument, type(path).__name__))
    shown = os.fspath(path)
    # A creds file's text or a seed given where its path belongs must not
    # reach a message (an open of it fails, naming the "path").
    if "\n" in shown or "-----" in shown or len(shown) > PATH_MAX_CHARS \
            or _LOOKS_LIKE_SEED_RE.match(shown.strip()):
        raise ValueError("%s must be the path of a file; this looks like the secret itself "
                         "(not repeated here): write it to a file only its owner can read "
                         "and give that file's path" % argument)
    # O_NONBLOCK: a FIFO put where the file was opens at once (then is
    # refused as not a regular file) instead of blocking until a writer comes.
    flags = os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(shown, flags)
    except OSError as e:
        raise ValueError("%s %s cannot be opened: %s" % (argument, shown, e.strerror)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("%s %s is not a regular file" % (argument, shown))
        chunks: List[bytes] = []
        size = 0
        while size <= CREDS_FILE_MAX_BYTES:
            chunk = os.read(fd, CREDS_FILE_MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise ValueError("%s %s cannot be read: %s" % (argument, shown, e.strerror)) from None
    finally:
        os.close(fd)
    if size > CREDS_FILE_MAX_BYTES:
        raise ValueError("%s %s is over %d bytes (CREDS_FILE_MAX_BYTES): not a creds or seed file"
                         % (argument, shown, CREDS_FILE_MAX_BYTES))
    try:
        return b"".join(chunks).decode("ascii")
    except UnicodeDecodeError as e:
        raise ValueError("%s %s holds a byte that is not ASCII at offset %d: not a creds or seed "
                         "file" % (argument, shown, e.start)) from None


def _user_seed(text: str, where: str) -> Tuple[Signer, str]:
    """(sign, public user nkey) of a user seed's text; ValueError saying,
    without the seed, what is wrong with it."""
    try:
        kind, private_key = decode_seed(text)
    except ValueError as e:
        raise ValueError("%s: the seed is not valid: %s" % (where, e)) from None
    if kind != "user":
        article = "an" if kind[0] in "aeiou" else "a"
        raise ValueError("%s: the seed is %s %s seed, not a user's (a user seed starts with SU; "
                         "NATS clients connect as users)" % (where, article, kind))
    sign, public = _ed25519_signer(private_key)
    return sign, encode_public("user", public)


def _block(lines: List[str], marker: str, where: str) -> str:
    """The one line between ``BEGIN marker`` and ``END marker``."""
    begins = [i for i, line in enumerate(lines)
              if (m := _MARKER_RE.match(line)) and m.group(1) == "BEGIN"
              and m.group(2) == marker]
    if not begins:
        raise ValueError("%s has no line -----BEGIN %s-----" % (where, marker))
    if len(begins) > 1:
        raise ValueError("%s has %d BEGIN %s blocks, not one" % (where, len(begins), marker))
    i = begins[0]
    value = lines[i + 1] if i + 1 < len(lines) else ""
    if not value or _MARKER_RE.match(value):
        raise ValueError("%s: the %s block is empty (is the file cut short?)" % (where, marker))
    end = _MARKER_RE.match(lines[i + 2]) if i + 2 < len(lines) else None
    if end is None or end.group(1) != "END" or end.group(2) != marker:
        raise ValueError("%s: the %s block does not end with ------END %s------ on the line after "
                         "its one line (is the file cut short?)" % (where, marker, marker))
    return value


def _b64url_json(part: str) -> Any:
    try:
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError):
        return None


def _user_claims(jwt: str, public_key: str, where: str) -> Dict[str, Any]:
    """The claims of a user JWT, checked to be a user's for public_key."""
    if not _JWT_RE.match(jwt):
        raise ValueError("%s: the JWT block is not a JWT (three base64url parts joined by dots)"
                         % where)
    header_part, claims_part, _ = jwt.split(".")
    header, claims = _b64url_json(header_part), _b64url_json(claims_part)
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise ValueError("%s: the JWT's header or claims are not base64url JSON objects" % where)
    nats = claims.get("nats") if isinstance(claims.get("nats"), dict) else {}
    kind = nats.get("type", claims.get("type"))        # v2 keeps it under nats, v1 at the top
    if kind != "user":
        raise ValueError("%s: the JWT is %s, not a user's (a creds file holds a user JWT)"
                         % (where, "of type %r" % kind if isinstance(kind, str) else "of no type"))
    if claims.get("sub") != public_key:
        raise ValueError("%s: the JWT is for the user %r, but the seed is the key of %s: the two "
                         "blocks come from different users" % (where, claims.get("sub"),
                                                               public_key))
    if isinstance(nats.get("issuer_account"), str):
        claims = dict(claims, issuer_account=nats["issuer_account"])
    return claims


def load_creds(path: Any) -> NkeyIdentity:
    """The user a creds file proves (see the module's paragraph for what
    is checked). ValueError naming the file and what is wrong; ImportError
    without the cryptography package."""
    text = _read_small_file(path, "creds file")
    where = "creds file %s" % os.fspath(path)
    lines = [line.strip() for line in text.splitlines()]
    jwt = _block(lines, _JWT_MARKER, where)
    seed = _block(lines, _SEED_MARKER, where)
    sign, public_key = _user_seed(seed, where)
    claims = _user_claims(jwt, public_key, where)
    return NkeyIdentity(public_key, jwt, sign, where, claims)


def load_nkey_seed(path: Any) -> NkeyIdentity:
    """The user a seed file proves: one user seed, whitespace around it
    allowed. ValueError naming the file and what is wrong; ImportError
    without the cryptography package."""
    text = _read_small_file(path, "nkey_seed file")
    where = "nkey_seed file %s" % os.fspath(path)
    words = text.split()
    if len(words) != 1:
        raise ValueError("%s must hold one seed and nothing else, it holds %d words (a creds "
                         "file goes to creds=)" % (where, len(words)))
    sign, public_key = _user_seed(words[0], where)
    return NkeyIdentity(public_key, None, sign, where)
