"""Every protocol method as a Python method with keyword arguments.

One definition serves the sync client, the asyncio client and the session
objects of both: each method only names its arguments and hands them to
``_call``, which the class using this mixin provides. For the sync classes
``_call`` returns the result map, for the asyncio ones an awaitable of it,
hence the type parameter ``R``. Arguments left at None are not sent, so the
engine's default applies (docs/protocol.md, section 5, gives every default
and bound). ``for`` is a Python keyword, so monitor_wait takes ``for_``.
Every method takes ``session``: the session to act on, one this connection
has opened (default: the one it opened last). monitor_start and process_run
send this process's working directory as ``cwd`` unless given one, so a
command runs where its caller is, as from a shell (``cwd="."``: the
engine's).
"""

from __future__ import annotations

import os

from typing import Any, Dict, Generic, Mapping, Optional, Sequence, TypeVar, Union

R = TypeVar("R")


def _args(**kwargs: Any) -> Dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not None}


def _caller_cwd(cwd: Optional[str]) -> Optional[str]:
    """The directory a start runs in: ``cwd`` when given, else this
    process's working directory (a command started from a project runs in
    the project, as from a shell), or the engine's when this process's
    cannot be read (it was removed). ``"."`` asks for the engine's own."""
    if cwd is not None:
        return cwd
    try:
        return os.getcwd()
    except OSError:
        return None


class Methods(Generic[R]):
    """The protocol's methods (docs/protocol.md, section 5). Results are the
    engine's maps as dicts, every documented key present."""

    def _call(self, method: str, args: Dict[str, Any], reply_within_s: float = 0.0) -> R:
        """Sends one request; ``reply_within_s`` is how much longer than the
        client's call timeout the answer may take (monitor_wait, a
        foreground process_run)."""
        raise NotImplementedError

    def call(self, method: str, **args: Any) -> R:
        """Any method by name, for one this client does not wrap yet."""
        return self._call(method, _args(**args))

    # --- the engine ---------------------------------------------------------

    def ping(self, *, session: Optional[str] = None) -> R:
        """``{version, api_level}``."""
        return self._call("ping", _args(session=session))

    def api_info(self, *, session: Optional[str] = None) -> R:
        """``{version, api_level, epoch, methods, error_codes,
        notification_types, limits, counters, containment, state_dir}``."""
        return self._call("api_info", _args(session=session))

    def config_reload(self, *, session: Optional[str] = None) -> R:
        """Reloads the config file and every policy, all or nothing:
        ``{reloaded: True, policies}``."""
        return self._call("config_reload", _args(session=session))

    # --- sessions -----------------------------------------------------------

    def session_open(self, *, session: Optional[str] = None, last_seq: Optional[int] = None,
                     linger_ms: Optional[int] = None) -> R:
        """Attaches this connection to the named session (a new ``ses_...``
        one without a name), replaying every kept notification after
        ``last_seq`` first: ``{session, resumed, next_seq, epoch}``. The
        session objects of ``Client.session()`` do this and keep the
        cursor for you."""
        return self._call("session_open", _args(session=session, last_seq=last_seq,
                                                linger_ms=linger_ms))

    def session_state(self, state: str, *, session: Optional[str] = None) -> R:
        """``"busy"`` (the agent is in a turn: idle notifications wait) or
        ``"idle"`` (releases them): ``{state, delivered}``."""
        return self._call("session_state", _args(state=state, session=session))

    def session_close(self, *, session: Optional[str] = None) -> R:
        """Stops the session's monitors and deletes it: ``{stopped}``."""
        return self._call("session_close", _args(session=session))

    def session_list(self, *, session: Optional[str] = None) -> R:
        """This connection's sessions: ``{sessions: [{session, attached,
        monitors, state, queued, cursors}]}``."""
        return self._call("session_list", _args(session=session))

    # --- model cursors (docs/protocol.md, section 5, "Model cursors") --------

    def cursor_take(self, cursor: str, *, limit: Optional[int] = None,
                    wait_ms: Optional[int] = None, session: Optional[str] = None) -> R:
        """Takes the kept notifications above the session's cursor
        ``cursor`` (made at 0 when new), oldest first, at most ``limit``,
        and moves the cursor past them in the same step, so two readers of
        one cursor never get the same seq: ``{notifications, cursor,
        last_seq, dropped, dropped_from, dropped_to}`` (the notifications as
        maps, exactly as pushed; ``dropped``: seqs above the cursor the
        session no longer kept, ``dropped_from..dropped_to``, passed too).
        With ``wait_ms`` and nothing to take, the engine waits that long for
        a notification; the call waits that long plus the client's call
        timeout."""
        return self._call("cursor_take", _args(cursor=cursor, limit=limit, wait_ms=wait_ms,
                                               session=session),
                          (wait_ms or 0) / 1000.0)

    def cursor_get(self, cursor: str, *, session: Optional[str] = None) -> R:
        """``{cursor, last_seq, kept_from}``: the cursor's seq (0 for one the
        session does not have; none is made), the session's highest seq
        and the oldest it keeps (None when none)."""
        return self._call("cursor_get", _args(cursor=cursor, session=session))

    def cursor_advance(self, cursor: str, to: int, *, session: Optional[str] = None) -> R:
        """Moves the cursor forward to ``to`` (never back; at most the
        session's last seq), for notifications the model got another way:
        ``{cursor}``."""
        return self._call("cursor_advance", _args(cursor=cursor, to=to, session=session))

    def notifications_since(self, since_seq: int, *, limit: Optional[int] = None,
                            session: Optional[str] = None) -> R:
        """Re-reads the kept notifications above ``since_seq`` without
        moving any cursor: ``{notifications, last_seq, dropped,
        dropped_from, dropped_to}``."""
        return self._call("notifications_since", _args(since_seq=since_seq, limit=limit,
                                                       session=session))

    # --- monitors -----------------------------------------------------------

    def monitor_start(self, *, command: Optional[str] = None, argv: Optional[Sequence[str]] = None,
                      shell: Optional[bool] = None, label: Optional[str] = None,
                      description: Optional[str] = None, cwd: Optional[str] = None,
                      env: Optional[Mapping[str, str]] = None,
                      patterns: Optional[Sequence[str]] = None, match_pattern: Optional[str] = None,
                      match_streams: Optional[str] = None, notify: Optional[str] = None,
                      incidents: Optional[bool] = None, envelope: Optional[str] = None,
                      mode: Optional[str] = None, policy: Optional[str] = None,
                      timeout_ms: Optional[int] = None, persistent: Optional[bool] = None,
                      idle_timeout_ms: Optional[int] = None, memory_limit: Optional[int] = None,
                      cpu_limit: Optional[float] = None, session: Optional[str] = None) -> R:
        """Starts a monitored command (``command`` or ``argv``):
        ``{monitor_id, label, mode, notify, pid, started_at, note}``.
        ``patterns`` left out means the built-in crash patterns; ``[]``
        means every line (docs/incidents.md)."""
        return self._call("monitor_start", _args(
            command=command, argv=list(argv) if argv is not None else None, shell=shell,
            label=label, description=description, cwd=_caller_cwd(cwd),
            env=dict(env) if env is not None else None,
            patterns=list(patterns) if patterns is not None else None,
            match_pattern=match_pattern, match_streams=match_streams, notify=notify,
            incidents=incidents, envelope=envelope, mode=mode, policy=policy,
            timeout_ms=timeout_ms, persistent=persistent, idle_timeout_ms=idle_timeout_ms,
            memory_limit=memory_limit, cpu_limit=cpu_limit, session=session))

    def monitor_stop(self, monitor_id: str, *, signal: Optional[Union[str, int]] = None,
                     grace_ms: Optional[int] = None, session: Optional[str] = None) -> R:
        """Stops the monitor's process group; answers once it is gone:
        ``{status: "stopped"|"already_stopped", state, exit_code, signal}``."""
        return self._call("monitor_stop", _args(monitor_id=monitor_id, signal=signal,
                                                grace_ms=grace_ms, session=session),
                          # The answer comes once the group is gone: after
                          # the grace at most (the default grace is short).
                          (grace_ms or 0) / 1000.0)

    def monitor_list(self, *, include_exited: Optional[bool] = None, state: Optional[str] = None,
                     limit: Optional[int] = None, session: Optional[str] = None) -> R:
        """``{monitors: [entry], total}``, newest first."""
        return self._call("monitor_list", _args(include_exited=include_exited, state=state,
                                                limit=limit, session=session))

    def monitor_status(self, monitor_id: str, *, include_start: Optional[bool] = None,
                       reveal_env: Optional[bool] = None, session: Optional[str] = None) -> R:
        """The list entry plus ``duration_ms``, ``resource_usage`` and
        ``start``. ``start`` is None unless ``include_start=True``: then the
        monitor_start arguments, resolved, that start the same monitor again
        (None entries were not given), its ``env`` values None (the names
        kept) unless ``reveal_env=True`` too. Argv and env may hold secrets:
        never pass these flags for a result a model will read."""
        return self._call("monitor_status", _args(monitor_id=monitor_id,
                                                  include_start=include_start,
                                                  reveal_env=reveal_env, session=session))

    def monitor_output(self, monitor_id: str, *, stream: Optional[str] = None,
                       since_sequence: Optional[int] = None, limit: Optional[int] = None,
                       incident: Optional[int] = None, session: Optional[str] = None) -> R:
        """Lines from the ring: ``{lines, counters, next_sequence}`` (and
        ``incident`` when one was asked for)."""
        return self._call("monitor_output", _args(monitor_id=monitor_id, stream=stream,
                                                  since_sequence=since_sequence, limit=limit,
                                                  incident=incident, session=session))

    def monitor_logs(self, monitor_id: str, *, stream: Optional[str] = None,
                     offset: Optional[int] = None, limit: Optional[int] = None,
                     session: Optional[str] = None) -> R:
        """Raw bytes from the capture: ``{stdout, stderr, stdout_size,
        stderr_size, truncated, more, stdout_next_offset,
        stderr_next_offset, state}`` (``stdout``/``stderr`` are bytes)."""
        return self._call("monitor_logs", _args(monitor_id=monitor_id, stream=stream,
                                                offset=offset, limit=limit, session=session))

    def monitor_events(self, monitor_id: str, *, since_event_id: Optional[int] = None,
                       session: Optional[str] = None) -> R:
        """The event log: ``{events, dropped, text}``."""
        return self._call("monitor_events", _args(monitor_id=monitor_id,
                                                  since_event_id=since_event_id, session=session))

    def monitor_wait(self, monitor_id: str, *, for_: Optional[str] = None,
                     since_event_id: Optional[int] = None, since_sequence: Optional[int] = None,
                     timeout_ms: Optional[int] = None, session: Optional[str] = None) -> R:
        """Waits in the engine for the monitor's ending (``for_="exit"``, the
        default), a ``"match"``, any ``"event"`` or ``"output"``:
        ``{event, timed_out, state, last_sequence}``. The answer may take
        ``timeout_ms`` (default 30000); the call waits that long plus the
        client's call timeout."""
        wait_ms = timeout_ms if timeout_ms is not None else 30000
        return self._call("monitor_wait", _args(monitor_id=monitor_id, since_event_id=since_event_id,
                                                since_sequence=since_sequence,
                                                timeout_ms=timeout_ms, session=session,
                                                **{"for": for_}),
                          wait_ms / 1000.0)

    def process_run(self, *, command: Optional[str] = None, argv: Optional[Sequence[str]] = None,
                    shell: Optional[bool] = None, label: Optional[str] = None,
                    cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                    stdin: Optional[Union[str, bytes]] = None, timeout_s: Optional[int] = None,
                    stdout_lines: Optional[int] = None, background: Optional[bool] = None,
                    memory_limit: Optional[int] = None, cpu_limit: Optional[float] = None,
                    session: Optional[str] = None) -> R:
        """Runs a command to its end (or, with ``background=True``, starts it
        and answers at once): ``{process_id, state, exit_code, signal,
        stdout_summary, stderr_summary, duration_ms, resource_usage, note}``."""
        # A foreground run answers when the process ends: up to timeout_s
        # (default 300), plus the kill grace.
        wait_s = 0.0 if background else float(timeout_s if timeout_s is not None else 300)
        return self._call("process_run", _args(
            command=command, argv=list(argv) if argv is not None else None, shell=shell,
            label=label, cwd=_caller_cwd(cwd), env=dict(env) if env is not None else None, stdin=stdin,
            timeout_s=timeout_s, stdout_lines=stdout_lines, background=background,
            memory_limit=memory_limit, cpu_limit=cpu_limit, session=session), wait_s)
