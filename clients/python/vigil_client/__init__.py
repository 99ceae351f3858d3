"""vigil_client: a Python client for vigil's engine, vigild.

A gateway (the program that runs an agent loop) uses it to embed an engine
(``Engine.spawn``) or connect to one (``Client.connect``), start monitors,
tell the engine when the agent is in a turn, and take the notifications the
engine pushes, as typed :class:`Notification` objects, to inject into the
agent's turns. Sessions (``client.session(name)``) keep the resume cursor,
so a gateway that reconnects or restarts gets exactly what it missed. The
asyncio flavour (``AsyncClient``, ``AsyncEngine``) has the same shape.
A gateway of a fleet (engines publishing into NATS JetStream, docs/fleet.md)
reads notifications with ``FleetSubscriber`` instead, over a small NATS
client of this package's own (nats_wire.py, jetstream.py), and calls a
remote engine with ``Client.connect_nats`` (NATS request-reply, rpc_nats.py).
The wire contract is docs/protocol.md in vigil's repository; this package
needs only msgpack (and, for NATS creds files and nkeys, the cryptography
package, imported only when they are used).
"""

from .aio import AsyncClient, AsyncEngine, AsyncSession
from .client import DEFAULT_CALL_TIMEOUT_S, Client, Engine, Session
from .cursor import LAST_SEQ_MAX, SessionCursor
from .endpoint import default_socket_path, find_vigild
from .errors import (ERROR_CODES, AlreadyExited, CommandNotFound, ConnectionClosed, Denied,
                     Disabled, EngineUnavailable, Internal, InvalidParams, InvalidPattern,
                     LimitExceeded, NotFound, SpawnFailed, UnknownMethod, VigilError)
from .fleet import (FleetError, FleetNotification, FleetPermissionError, FleetSubscriber,
                    FleetUnavailable, notification_subject, session_token)
from .inbox import DEFAULT_MAX_BACKLOG
from .jetstream import JetStream, JetStreamError, PubAck
from .nats_wire import (NatsAuthError, NatsConnection, NatsConnectionError, NatsError,
                        NatsPermissionError, NatsProtocolError, NatsTimeout, NatsTLSError,
                        NoResponders)
from .notification import ENDING_TYPES, Incident, Line, Notification
from .rpc_nats import NatsRpc, rpc_subject

__version__ = "0.1.0"

__all__ = [
    "AlreadyExited", "AsyncClient", "AsyncEngine", "AsyncSession", "Client", "CommandNotFound",
    "ConnectionClosed", "DEFAULT_CALL_TIMEOUT_S", "DEFAULT_MAX_BACKLOG", "Denied", "Disabled",
    "ENDING_TYPES", "ERROR_CODES", "Engine", "EngineUnavailable", "FleetError", "FleetNotification",
    "FleetPermissionError", "FleetSubscriber", "FleetUnavailable", "Incident", "Internal",
    "InvalidParams", "InvalidPattern", "JetStream", "JetStreamError", "LAST_SEQ_MAX",
    "LimitExceeded", "Line", "NatsAuthError", "NatsConnection", "NatsConnectionError",
    "NatsError", "NatsPermissionError", "NatsProtocolError", "NatsRpc", "NatsTimeout",
    "NatsTLSError", "NoResponders",
    "NotFound", "Notification", "PubAck", "Session", "SessionCursor", "SpawnFailed",
    "UnknownMethod", "VigilError", "default_socket_path", "find_vigild",
    "notification_subject", "rpc_subject", "session_token",
]
