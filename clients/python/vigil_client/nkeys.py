"""NATS nkeys: the text form of the Ed25519 keys a NATS server knows users by.

A public nkey is base32 (RFC 4648, upper case, no padding) of one prefix
byte saying whose key it is (``U`` a user, ``A`` an account, ``O`` an
operator...), the 32 bytes of the Ed25519 public key, and a CRC-16 of those
33 bytes (XMODEM: polynomial 0x1021, initial 0, stored little-endian): 56
characters. A seed, the private half, is the same with two prefix bytes
that pack the seed marker and the kind into its first two characters
(``SU`` for a user's seed), the 32 bytes of the Ed25519 private key and the
CRC: 58 characters.

This module reads seeds and writes public keys with the standard library
alone; signing with a seed is nats_auth.py's (it needs the cryptography
package). A seed is a secret: no error raised here holds a seed or any part
of one, only what kind of text it is and what is wrong with it.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Dict, Tuple

# The prefix byte of each kind of key (the top five bits; the letter its
# base32 text starts with).
KIND_PREFIX: Dict[str, int] = {
    "seed": 18 << 3,        # S
    "private": 15 << 3,     # P
    "server": 13 << 3,      # N
    "cluster": 2 << 3,      # C
    "operator": 14 << 3,    # O
    "account": 0,           # A
    "user": 20 << 3,        # U
    "curve": 23 << 3,       # X
}
_KIND_OF_PREFIX = {prefix: kind for kind, prefix in KIND_PREFIX.items()}

# The Ed25519 key in a seed or a public key.
KEY_BYTES = 32

# Text lengths: 2 prefix bytes + key + CRC for a seed, 1 + key + CRC for a
# public key, in base32 without padding.
SEED_CHARS = 58
PUBLIC_CHARS = 56

_BASE32_RE = re.compile(r"^[A-Z2-7]+$")


def crc16(data: bytes) -> int:
    """CRC-16/XMODEM of data, as nkeys checksum their bytes."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def _with_crc(raw: bytes) -> str:
    crc = crc16(raw)
    return base64.b32encode(raw + bytes((crc & 0xFF, crc >> 8))).decode("ascii").rstrip("=")


def encode_public(kind: str, key: bytes) -> str:
    """The public nkey (``U...`` for "user") of a 32-byte Ed25519 public
    key; ValueError for an unknown kind or a key of another length."""
    prefix = KIND_PREFIX.get(kind)
    if prefix is None or kind in ("seed", "private"):
        raise ValueError("%r is not a kind of public nkey (user, account, operator, ...)"
                         % (kind,))
    if len(key) != KEY_BYTES:
        raise ValueError("an Ed25519 public key is %d bytes, got %d" % (KEY_BYTES, len(key)))
    return _with_crc(bytes((prefix,)) + bytes(key))


def decode_seed(text: str) -> Tuple[str, bytes]:
    """(kind, 32-byte Ed25519 private key) of a seed's text. ValueError
    saying what is wrong (never repeating the text): not 58 characters of
    base32, a checksum that does not match (a damaged or mistyped seed), a
    public key or other nkey where a seed belongs, an unknown kind."""
    if len(text) != SEED_CHARS or not _BASE32_RE.match(text):
        if len(text) == PUBLIC_CHARS and _BASE32_RE.match(text):
            raise ValueError("it is %d characters, as a public nkey is: a seed is %d, starting "
                             "with S" % (PUBLIC_CHARS, SEED_CHARS))
        raise ValueError("it is not a seed: a seed is %d characters of A-Z and 2-7, this is %d"
                         % (SEED_CHARS, len(text)))
    try:
        raw = base64.b32decode(text + "=" * (-len(text) % 8))
    except (binascii.Error, ValueError):
        raise ValueError("it is not base32") from None
    body, stored = raw[:-2], raw[-2] | (raw[-1] << 8)
    if crc16(body) != stored:
        raise ValueError("its checksum (CRC-16) does not match: the seed is damaged or "
                         "mistyped")
    if body[0] & 0xF8 != KIND_PREFIX["seed"]:
        raise ValueError("its first byte does not mark a seed (a seed's text starts with S)")
    prefix = ((body[0] & 0x07) << 5) | ((body[1] & 0xF8) >> 3)
    kind = _KIND_OF_PREFIX.get(prefix)
    if kind is None or kind in ("seed", "private"):
        raise ValueError("it is a seed of an unknown kind (prefix byte %d)" % prefix)
    return kind, bytes(body[2:])
