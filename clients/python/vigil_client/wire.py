"""msgpack-rpc framing as the engine speaks it (docs/protocol.md, 2.3).

A stream of msgpack arrays with no length prefix: requests
``[0, msgid, method, params]``, responses ``[1, msgid, error, result]`` and
notifications ``[2, method, params]``, where ``params`` is ``[]`` or one map
of named arguments. This module packs what a host sends and sorts what it
receives; the sync and asyncio clients share it and differ only in how they
wait.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Union

# msgpack ships no type information.
try:
    import msgpack  # type: ignore[import]
except ImportError as _missing:  # pragma: no cover - depends on the Python
    import sys as _sys
    raise ImportError(
        "vigil_client needs msgpack, which %s cannot import: install it for this "
        "Python (%s -m pip install msgpack; on Debian's Python: apt-get install "
        "python3-msgpack)" % (_sys.executable, _sys.executable)) from _missing

# The largest message a client accepts. The engine bounds what it queues for
# one connection by rpc.max_output_bytes (at most 1 GiB), so a message larger
# than that and a margin is not the engine talking (the vigil command line
# client uses the same bound).
MESSAGE_MAX_BYTES = 1100 << 20

# msgids are unsigned 32-bit integers; this client counts from 1 and wraps.
MSGID_MAX = 0xFFFFFFFF

# How many bytes a read asks the transport for at a time.
READ_CHUNK_BYTES = 64 << 10


def new_unpacker() -> msgpack.Unpacker:
    """A streaming decoder for what the engine sends: str as str (the engine
    sends only valid UTF-8), bin as bytes, bounded by MESSAGE_MAX_BYTES."""
    return msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=MESSAGE_MAX_BYTES)


def feed(unpacker: msgpack.Unpacker, data: bytes,
         dispatch: Callable[[Any], Optional[str]]) -> Optional[str]:
    """Feeds what was read to unpacker and hands each whole message to
    dispatch, in order; stops at the first reason dispatch gives to close
    the connection, and returns it (None: go on reading)."""
    unpacker.feed(data)
    for msg in unpacker:
        reason = dispatch(msg)
        if reason:
            return reason
    return None


def _params(args: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    # None means "not given": the engine reads nil as absent anyway, and an
    # absent key keeps the message small and the intent plain.
    kept = {k: v for k, v in (args or {}).items() if v is not None}
    return [kept] if kept else []


def pack_request(msgid: int, method: str, args: Optional[Mapping[str, Any]] = None) -> bytes:
    """``[0, msgid, method, params]``."""
    packed: bytes = msgpack.packb([0, msgid, method, _params(args)], use_bin_type=True)
    return packed


def pack_notification(method: str, args: Optional[Mapping[str, Any]] = None) -> bytes:
    """``[2, method, params]``: a call that wants no answer."""
    packed: bytes = msgpack.packb([2, method, _params(args)], use_bin_type=True)
    return packed


class Response(NamedTuple):
    """``[1, msgid, error, result]``."""

    msgid: int
    error: Any
    result: Any


class Push(NamedTuple):
    """``[2, method, params]`` from the engine: ``vigil.notification`` (its
    map) or ``vigil.error`` (``[code, message]``)."""

    method: str
    params: Any


def classify(msg: Any) -> Union[Response, Push, None]:
    """What a decoded message is; None for anything a host does not act on
    (the engine never sends requests)."""
    if not isinstance(msg, (list, tuple)) or not msg:
        return None
    if msg[0] == 1 and len(msg) == 4 and isinstance(msg[1], int):
        return Response(msg[1], msg[2], msg[3])
    if msg[0] == 2 and len(msg) == 3 and isinstance(msg[1], str):
        return Push(msg[1], msg[2])
    return None


def result_map(result: Any) -> Dict[str, Any]:
    """A response's result: always a map by the protocol; {} if not."""
    return result if isinstance(result, dict) else {}
