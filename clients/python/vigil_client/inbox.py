"""The notifications received and not yet taken, per session, bounded.

The engine pushes notifications whenever they are due; the application
takes them when it is ready (``Client.wait``, ``Session.wait``). In between
they wait here, by session, each numbered in arrival order so that taking
"the next of any session" keeps the order they came in. The inbox holds at
most ``max_backlog``; one more means the application has stopped taking
them, and the client closes the connection rather than grow without bound
(the engine does the same to a reader that falls behind). Nothing is lost
by that for a session with a cursor: reconnecting resumes after the last
notification taken.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Deque, Dict, Iterator, Optional, Tuple

from .notification import Notification

# How many notifications may wait in a client before it gives up on the
# application: far more than the engine keeps per session
# (session.queue_max, 256 by default) for one session.
DEFAULT_MAX_BACKLOG = 10000


class Inbox:
    """Notifications waiting to be taken, per session, in arrival order."""

    def __init__(self, max_backlog: int = DEFAULT_MAX_BACKLOG):
        if not isinstance(max_backlog, int) or max_backlog < 1:
            raise ValueError("max_backlog must be an integer of at least 1, got %r" % (max_backlog,))
        self.max_backlog = max_backlog
        self._by_session: Dict[str, Deque[Tuple[int, Notification]]] = {}
        self._arrival: Iterator[int] = itertools.count()
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def put(self, n: Notification) -> bool:
        """Keeps n; False (and n not kept) when the inbox is full."""
        if self._count >= self.max_backlog:
            return False
        self._by_session.setdefault(n.session, deque()).append((next(self._arrival), n))
        self._count += 1
        return True

    def take(self, session: Optional[str] = None) -> Optional[Notification]:
        """The oldest notification of that session (of any, when None), or
        None when there is none."""
        if session is not None:
            q = self._by_session.get(session)
        else:
            heads = [q for q in self._by_session.values() if q]
            q = min(heads, key=lambda d: d[0][0]) if heads else None
        if not q:
            return None
        self._count -= 1
        n = q.popleft()[1]
        if not q:
            del self._by_session[n.session]
        return n

    def discard(self, session: str) -> None:
        """Forgets what waits for that session (before a resume: the engine
        sends it again)."""
        q = self._by_session.pop(session, None)
        if q:
            self._count -= len(q)
