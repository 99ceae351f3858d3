"""The errors a vigil client raises.

The engine answers a failed call with ``[code, message]`` (docs/protocol.md,
section 4): a number from a fixed table and a sentence that starts with the
error's name. :class:`VigilError` carries both, plus the method that failed,
and has one subclass per code so that a gateway can write
``except NotFound`` instead of comparing numbers. Failures of the connection
itself (the engine went away, a reply never came) are not protocol errors and
are raised as :class:`ConnectionClosed` or :class:`TimeoutError`.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

# The protocol's error codes by name (docs/protocol.md, section 4).
ERROR_CODES: Dict[str, int] = {
    "internal": 0,
    "invalid_params": 1,
    "not_found": 2,
    "denied": 3,
    "limit_exceeded": 4,
    "invalid_pattern": 5,
    "command_not_found": 6,
    "spawn_failed": 7,
    "already_exited": 8,
    "disabled": 9,
    "unknown_method": 10,
}


class VigilError(Exception):
    """A call the engine refused or could not carry out.

    ``code`` is the protocol's number, ``name`` its name (``"not_found"``),
    ``message`` the engine's sentence exactly as sent (it starts with the
    name and names the offending argument), ``data`` a third element of the
    error array when an engine sends one (vigil 0.1 does not: None), and
    ``method`` the method that failed.
    """

    code: int = -1

    def __init__(self, code: int, message: str, data: Any = None, method: Optional[str] = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.method = method

    @property
    def name(self) -> str:
        """The error's name (``"denied"``), or ``"code N"`` for a code this
        client does not know."""
        for name, code in ERROR_CODES.items():
            if code == self.code:
                return name
        return "code %d" % self.code

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return "%s(%d, %r)" % (type(self).__name__, self.code, self.message)

    @staticmethod
    def from_wire(error: Any, method: Optional[str] = None) -> "VigilError":
        """The exception for a response's ``error`` element, of the subclass
        its code names. A malformed element still becomes a VigilError (code
        0), with what was received in the message."""
        if isinstance(error, (list, tuple)) and len(error) >= 2 and isinstance(error[0], int):
            code, message = error[0], error[1]
            data = error[2] if len(error) > 2 else None
            if not isinstance(message, str):
                message = repr(message)
            cls = _BY_CODE.get(code, VigilError)
            return cls(code, message, data, method)
        return Internal(0, "internal: malformed error from the engine: %r" % (error,), None, method)


class Internal(VigilError):
    """code 0: a bug or an OS failure in the engine."""

    code = 0


class InvalidParams(VigilError):
    """code 1: a missing, mistyped, unknown or out-of-range argument."""

    code = 1


class NotFound(VigilError):
    """code 2: no such monitor, process or session visible to the caller."""

    code = 2


class Denied(VigilError):
    """code 3: the gate refused (allowlist, policy, shell, cwd, env)."""

    code = 3


class LimitExceeded(VigilError):
    """code 4: a cap was reached (monitors per session, patterns, pending calls)."""

    code = 4


class InvalidPattern(VigilError):
    """code 5: a pattern does not compile or is too long."""

    code = 5


class CommandNotFound(VigilError):
    """code 6: the program does not exist or is not executable."""

    code = 6


class SpawnFailed(VigilError):
    """code 7: the OS refused to start the program."""

    code = 7


class AlreadyExited(VigilError):
    """code 8: a stop sent to a monitor that ended by itself."""

    code = 8


class Disabled(VigilError):
    """code 9: monitors are disabled, or the engine is shutting down."""

    code = 9


class UnknownMethod(VigilError):
    """code 10: no method of that name."""

    code = 10


_BY_CODE: Dict[int, Type[VigilError]] = {
    cls.code: cls
    for cls in (Internal, InvalidParams, NotFound, Denied, LimitExceeded, InvalidPattern,
                CommandNotFound, SpawnFailed, AlreadyExited, Disabled, UnknownMethod)
}


class EngineUnavailable(VigilError, ConnectionError):
    """No engine answers a request sent over NATS: nobody subscribes to
    the subject (no engine of that name is connected to the server, or it
    may not subscribe there), which the server says at once ("no
    responders"). Not a protocol error: ``code`` is -1 and ``name``
    ``"unavailable"``; the message names the subject and the engine. A
    ConnectionError too, so code that retries later on a lost connection
    retries this."""

    code = -1

    def __init__(self, message: str, method: Optional[str] = None):
        super().__init__(-1, message, None, method)

    @property
    def name(self) -> str:
        return "unavailable"


class ConnectionClosed(ConnectionError):
    """The connection to the engine is gone (the engine exited, the socket
    closed, or this client closed it); ``reason`` says which. Calls waiting
    for an answer get it, and so does every later call."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
