"""NATS identities made for a test: nkey key pairs, operator, account and
user JWTs, creds files, and the nats-server config of an operator's
accounts (operator mode with a memory resolver).

Written here from the formats, with none of NATS's tools (nsc is not
installed):
- an nkey is base32 (no padding) of a prefix byte saying whose key it is
  (U user, A account, O operator), the 32-byte Ed25519 public key and a
  CRC-16/XMODEM of both, little-endian; a seed is the same with two prefix
  bytes (``S`` and the kind's letter) and the private key;
- a JWT is ``b64url(header).b64url(claims).b64url(signature)``, the header
  ``{"typ":"JWT","alg":"ed25519-nkey"}``, the signature the issuer's Ed25519
  signature of the first two parts joined by a dot, the claims ``jti`` (a
  hash of the claims), ``iat``, ``iss`` (the issuer's public key), ``name``,
  ``sub`` (the subject's public key) and under ``nats`` the kind's own fields
  with ``type`` and ``version: 2``. An account's ``limits`` with nonzero
  ``mem_storage``/``disk_storage`` gives it JetStream.

The encoding is this file's own, not the package's (vigil_client/nkeys.py),
so a mistake in one is not hidden by the same mistake in the other: the
nats-server that checks them is the judge. Needs the cryptography package
(Debian: python3-cryptography, which scripts/install-deps.sh installs).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from typing import Any, Dict, List, Optional

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

PREFIX = {"seed": 18 << 3, "operator": 14 << 3, "account": 0, "user": 20 << 3}

UNLIMITED_ACCOUNT = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
                     "wildcards": True, "conn": -1, "leaf": -1}
UNLIMITED_JETSTREAM = {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}


def _crc16(data: bytes) -> int:
    """CRC-16/XMODEM, one bit at a time (polynomial 0x1021, initial 0)."""
    crc = 0
    for byte in data:
        for bit in range(7, -1, -1):
            top = (crc >> 15) & 1
            crc = (crc << 1) & 0xFFFF
            if top ^ ((byte >> bit) & 1):
                crc ^= 0x1021
    return crc


def _text(raw: bytes) -> str:
    crc = _crc16(raw)
    return base64.b32encode(raw + crc.to_bytes(2, "little")).decode().rstrip("=")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class Nkey:
    """An Ed25519 key pair of one kind (user, account, operator): its
    ``public`` nkey, its ``seed`` text, ``sign``."""

    def __init__(self, kind: str):
        self.kind = kind
        self._private = os.urandom(32)
        self._key = Ed25519PrivateKey.from_private_bytes(self._private)
        public = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        prefix = PREFIX[kind]
        self.public = _text(bytes([prefix]) + public)
        self.seed = _text(bytes([PREFIX["seed"] | (prefix >> 5), (prefix & 31) << 3])
                          + self._private)

    def sign(self, data: bytes) -> bytes:
        return self._key.sign(data)


def make_jwt(issuer: Nkey, subject: str, name: str, nats: Dict[str, Any],
             expires: Optional[int] = None) -> str:
    """A v2 JWT of claims nats (with its type) about subject, signed by issuer."""
    header = b64url(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    claims: Dict[str, Any] = {"iat": int(time.time()), "iss": issuer.public, "name": name,
                              "sub": subject}
    if expires is not None:
        claims["exp"] = expires
    claims["jti"] = base64.b32encode(hashlib.sha256(json.dumps(claims, sort_keys=True)
                                                    .encode()).digest()).decode().rstrip("=")
    claims["nats"] = dict(nats, version=2)
    body = b64url(json.dumps(claims).encode())
    return "%s.%s.%s" % (header, body, b64url(issuer.sign(("%s.%s" % (header, body)).encode())))


def account_jwt(operator: Nkey, account: Nkey, name: str, jetstream: bool = True) -> str:
    limits = dict(UNLIMITED_ACCOUNT, **(UNLIMITED_JETSTREAM if jetstream else {}))
    return make_jwt(operator, account.public, name, {
        "type": "account", "limits": limits,
        "default_permissions": {"pub": {}, "sub": {}}})


def user_jwt(account: Nkey, user: Nkey, name: str, expires: Optional[int] = None) -> str:
    return make_jwt(account, user.public, name, {
        "type": "user", "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1},
        expires=expires)


def creds_text(jwt: str, seed: str) -> str:
    """A creds file as nsc writes it."""
    return ("-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n"
            "NKEYs are sensitive and should be treated as secrets.\n\n"
            "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n\n"
            "*************************************************************\n" % (jwt, seed))


def write_private(path: str, text: str) -> str:
    """Writes text to a new file only its owner may read; returns path."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


class OperatorAccounts:
    """An operator, its system account and an account FLEET with JetStream,
    for a nats-server in operator mode (``config``); ``creds`` makes a user
    of FLEET (or of another account) and writes its creds file."""

    def __init__(self, directory: str):
        self.directory = directory
        self.operator = Nkey("operator")
        self.system = Nkey("account")
        self.fleet = Nkey("account")
        self.accounts: List[Any] = [
            (self.system, account_jwt(self.operator, self.system, "SYS", jetstream=False)),
            (self.fleet, account_jwt(self.operator, self.fleet, "FLEET")),
        ]

    @property
    def config(self) -> str:
        operator = make_jwt(self.operator, self.operator.public, "vigil-test",
                            {"type": "operator"})
        preload = "".join('  %s: "%s"\n' % (a.public, j) for a, j in self.accounts)
        return ('operator: "%s"\nsystem_account: %s\nresolver: MEMORY\n'
                'resolver_preload: {\n%s}\n' % (operator, self.system.public, preload))

    def creds(self, name: str, account: Optional[Nkey] = None,
              expires: Optional[int] = None) -> str:
        """The path of a new creds file for a user called name."""
        user = Nkey("user")
        jwt = user_jwt(account or self.fleet, user, name, expires)
        return write_private(os.path.join(self.directory, name + ".creds"),
                             creds_text(jwt, user.seed))
