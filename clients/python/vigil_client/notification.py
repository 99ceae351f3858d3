"""Typed notifications: what the engine pushes to a host.

The engine pushes ``[2, "vigil.notification", [map]]`` (docs/protocol.md,
section 6). :class:`Notification` is that map as a dataclass, with its lines
as :class:`Line` and its incidents as :class:`Incident`. Field names are the
protocol's keys, unchanged (``type``, ``mode``, ``seq``...), so the protocol
page documents them. A key this client does not know (an engine newer than
it) is not lost: it lands in ``extra``. ``raw`` keeps the map as received.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Type, TypeVar, Union

# The notification types that end a monitor: each monitor gets exactly one.
ENDING_TYPES: Tuple[str, ...] = ("exit", "stopped", "timed_out", "idle_timeout", "overload")

T = TypeVar("T")


def _from_map(cls: Type[T], m: Mapping[str, Any], convert: Optional[Dict[str, Any]] = None) -> T:
    """An instance of the dataclass cls from map m: each known key to its
    field (through convert[key] when given), the rest into ``extra``."""
    known = {f.name for f in dataclasses.fields(cls)} - {"extra", "raw"}
    kwargs: Dict[str, Any] = {}
    extra: Dict[str, Any] = {}
    for key, value in m.items():
        if key in known:
            if convert and key in convert and value is not None:
                value = convert[key](value)
            kwargs[key] = value
        else:
            extra[key] = value
    kwargs["extra"] = extra
    return cls(**kwargs)


@dataclass
class Line:
    """One line of a monitor's output: its per-monitor ``seq``, ``stream``
    (``"stdout"``/``"stderr"``), sanitized ``text`` (valid UTF-8, no ANSI),
    the index of the ``pattern`` that matched (None: none), and whether it
    was ``truncated`` at ``monitor.line_max_bytes``."""

    seq: int = 0
    stream: str = ""
    text: str = ""
    pattern: Optional[int] = None
    truncated: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_map(cls, m: Mapping[str, Any]) -> "Line":
        return _from_map(cls, m)


@dataclass
class Incident:
    """A crash or message gathered from several lines, or a health change
    (docs/incidents.md): ``id`` per monitor, ``kind``
    (``"crash"``/``"message"``/``"health"``), its
    ``fingerprint``, the pattern that opened it, the seqs of its first and
    last lines, how many ``lines``, and the coalesced ``repeats``."""

    id: int = 0
    kind: str = ""
    fingerprint: str = ""
    pattern: Optional[int] = None
    pattern_name: Optional[str] = None
    first_seq: Optional[int] = None
    last_seq: Optional[int] = None
    lines: int = 0
    repeats: int = 0
    repeat_span_ms: Optional[int] = None
    last_repeat_at: Optional[str] = None
    truncated_lines: int = 0
    summary: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_map(cls, m: Mapping[str, Any]) -> "Incident":
        return _from_map(cls, m)


# A notification of an unexpected shape is still handed over (its raw map
# says what came), never a reason to drop the connection.
def _lines(value: Any) -> List[Line]:
    if not isinstance(value, list):
        return []
    return [Line.from_map(x) for x in value if isinstance(x, Mapping)]


def _incidents(value: Any) -> List[Incident]:
    if not isinstance(value, list):
        return []
    return [Incident.from_map(x) for x in value if isinstance(x, Mapping)]


@dataclass
class Notification:
    """One ``vigil.notification``. The fields are the protocol's keys
    (docs/protocol.md, section 6):

    - ``session``, ``seq`` (per session, the resume cursor), ``epoch`` (the
      engine's; ``(epoch, seq)`` is unique);
    - ``type``: ``output``, an ending type (``exit``, ``stopped``,
      ``timed_out``, ``idle_timeout``, ``overload``), ``dropped`` or
      ``policy_error``;
    - ``mode``: ``idle`` or ``live_safe``, how it was routed;
    - ``monitor_id``, ``label`` (None for ``dropped``), ``batch``, ``lines``,
      ``incidents``, ``suppressed``;
    - for endings: ``state``, ``exit_code``, ``signal``, ``duration_ms``,
      ``reason``, ``exceeded``;
    - for ``dropped``: ``dropped`` (how many, None when unknown),
      ``from_seq``, ``to_seq``;
    - ``text``: the envelope to put in front of the agent; ``at``: when.

    ``extra`` holds keys this client does not know; ``raw`` the map as
    received.
    """

    session: str = ""
    seq: int = 0
    type: str = ""
    mode: str = "idle"
    monitor_id: Optional[str] = None
    label: Optional[str] = None
    batch: Optional[int] = None
    lines: List[Line] = field(default_factory=list)
    incidents: List[Incident] = field(default_factory=list)
    incidents_withheld: int = 0
    incidents_coalesced: int = 0
    incidents_dropped: int = 0
    suppressed: int = 0
    state: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[Union[str, int]] = None
    duration_ms: Optional[int] = None
    reason: Optional[str] = None
    exceeded: Optional[str] = None
    dropped: Optional[int] = None
    from_seq: Optional[int] = None
    to_seq: Optional[int] = None
    epoch: Optional[str] = None
    text: str = ""
    at: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_map(cls, m: Mapping[str, Any]) -> "Notification":
        """The notification for a ``vigil.notification`` params map."""
        n = _from_map(cls, m, {"lines": _lines, "incidents": _incidents})
        n.raw = dict(m)
        return n

    @property
    def kind(self) -> str:
        """The same as ``type`` (the protocol's key), under a name that does
        not read like Python's ``type()``."""
        return self.type

    @property
    def delivery(self) -> str:
        """The same as ``mode`` (the protocol's key): ``idle`` or
        ``live_safe``, how the engine routed it."""
        return self.mode

    @property
    def is_ending(self) -> bool:
        """True for the one notification that ends a monitor."""
        return self.type in ENDING_TYPES

    @property
    def is_live_safe(self) -> bool:
        """True when it should go in at the next safe point of a turn, not
        wait for the turn's end."""
        return self.mode == "live_safe"
