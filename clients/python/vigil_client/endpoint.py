"""Where the engine is: its socket, its program, and who serves the socket.

The default socket path is the engine's own (docs/protocol.md, 2.1):
``$VIGIL_SOCKET`` when set (as the ``vigil`` command reads it), else
``$XDG_RUNTIME_DIR/vigil/vigil.sock``, else ``/tmp/vigil-$EUID/vigil.sock``.
Before sending a byte on a socket, a client checks the uid of the process
serving it (docs/protocol.md, 2.2): whoever could put a socket at that path
would otherwise read every argv and environment (tokens) the host sends.
``find_vigild`` resolves the program an embedded engine runs.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
from typing import Optional

# The longest path a Unix socket address holds (sun_path, less its NUL).
SOCKET_PATH_MAX_BYTES = 107


def default_socket_path() -> str:
    """The socket a client uses when given none (the engine's default)."""
    explicit = os.environ.get("VIGIL_SOCKET")
    if explicit:
        return explicit
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return os.path.join(xdg, "vigil", "vigil.sock")
    return "/tmp/vigil-%d/vigil.sock" % os.geteuid()


def check_socket_path(path: str) -> None:
    """Refuses a path a Unix socket cannot have, naming the bound."""
    n = len(os.fsencode(path))
    if n == 0 or n > SOCKET_PATH_MAX_BYTES:
        raise ValueError("socket path must be 1..%d bytes, got %d: %r"
                         % (SOCKET_PATH_MAX_BYTES, n, path))


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    uid: int = struct.unpack("3i", creds)[1]     # struct ucred {pid, uid, gid}
    return uid


def check_server_uid(sock: socket.socket, path: str) -> None:
    """Raises PermissionError when the engine at path runs as neither this
    process's uid nor root. The caller closes the socket."""
    uid = peer_uid(sock)
    if uid not in (os.geteuid(), 0):
        raise PermissionError("refusing the engine at %s: it runs as uid %d, not as uid %d "
                              "(yours) or root" % (path, uid, os.geteuid()))


def find_vigild(vigild: Optional[str] = None) -> str:
    """The vigild program to run: ``vigild`` as given when it contains a
    slash; else that name (default ``$VIGIL_VIGILD``, else ``"vigild"``) as
    found on PATH. Raises FileNotFoundError saying where it looked."""
    name = vigild or os.environ.get("VIGIL_VIGILD") or "vigild"
    if os.sep in name:
        if os.path.isfile(name) and os.access(name, os.X_OK):
            return name
        raise FileNotFoundError("vigild: %r is not an executable file" % name)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError("vigild: %r was not found on PATH (%s); give its path, "
                                "e.g. Engine.spawn(vigild=\"build/vigild\"), or set VIGIL_VIGILD"
                                % (name, os.environ.get("PATH", "")))
    return found
