"""A session's resume cursor: the last notification the host has handled.

Notifications are numbered per session (``seq``) and per engine start
(``epoch``). A host that remembers the last seq it handled and passes it as
``last_seq`` to ``session_open`` after a disconnect or its own restart gets
exactly what it missed (docs/protocol.md, section 3). This class is that
memory, shared by the sync and asyncio session objects.

When does a notification count as handled? With ``auto_ack=True`` (the
default) as soon as it is handed to the application (``wait`` returns it):
a resume never repeats what the application was given. With
``auto_ack=False`` only when the application calls ``ack``: what it was
given but did not ack (it crashed while injecting it) comes again, at least
once. Persisting the cursor is the application's choice: store
``last_seq`` (and ``epoch``) where it survives, and pass it back to
``Client.session(name, last_seq=...)``.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Union

from .notification import Notification

# The largest last_seq the engine takes (2^53 - 1, exact in JSON hosts).
LAST_SEQ_MAX = (1 << 53) - 1


class SessionCursor:
    """A named session's identity and resume cursor."""

    def __init__(self, name: Optional[str], last_seq: Optional[int] = None, auto_ack: bool = True):
        if last_seq is not None and (not isinstance(last_seq, int) or isinstance(last_seq, bool)
                                     or not 0 <= last_seq <= LAST_SEQ_MAX):
            raise ValueError("last_seq must be 0..%d, got %r" % (LAST_SEQ_MAX, last_seq))
        self.name: Optional[str] = name
        self.last_seq: Optional[int] = last_seq
        """The seq of the last notification handled (None: nothing yet)."""
        self.auto_ack = auto_ack
        self.epoch: Optional[str] = None
        """The engine epoch of the last session_open or notification."""
        self.resumed: bool = False
        """Whether the last session_open found the session existing."""
        self.next_seq: Optional[int] = None
        """The seq the engine said its next new notification gets."""
        self.closed_here = False
        """Whether this session was closed through it (session_close) and
        not opened again: over NATS it is then not reopened by itself."""

    def ack(self, seq: Union[int, Notification]) -> None:
        """Marks everything up to seq (a number or a notification) handled;
        a resume then starts after it. The cursor never moves back."""
        if isinstance(seq, Notification):
            seq = seq.seq
        if self.last_seq is None or seq > self.last_seq:
            self.last_seq = seq

    def _opened(self, result: Mapping[str, Any]) -> None:
        self.closed_here = False
        self.name = result.get("session", self.name)
        self.epoch = result.get("epoch", self.epoch)
        self.resumed = bool(result.get("resumed"))
        self.next_seq = result.get("next_seq")

    def _track_close(self, method: str, args: Mapping[str, Any]) -> None:
        if method == "session_close" and args.get("session") == self.name:
            self.closed_here = True

    def _handed(self, n: Notification) -> None:
        if n.epoch:
            self.epoch = n.epoch
        if self.auto_ack:
            self.ack(n)

    def __repr__(self) -> str:
        return "<%s %r last_seq=%r epoch=%r>" % (type(self).__name__, self.name, self.last_seq,
                                                 self.epoch)
