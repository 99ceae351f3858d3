"""JetStream's API as requests over a NATS connection (nats_wire.py).

JetStream is driven by JSON requests to ``$JS.API.*`` subjects, answered
with JSON that holds either the result or ``{"error": {"code",
"err_code", "description"}}``. This module makes those requests for what a
fleet needs: a stream's info and creation (tests, and a gateway that wants
to make sure the stream exists), a durable pull consumer's creation or
binding, and a publish acknowledged by the stream (with ``Nats-Msg-Id``,
JetStream's duplicate window drops a republish and says so). The pull
itself (``CONSUMER.MSG.NEXT``) is fleet.py's, since how its answers are
read is the subscriber's business.

An answer is checked as any input is: one that is not a JSON object is a
:class:`JetStreamError` saying so, never a crash further on.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence

from .nats_wire import NatsConnection, check_subject

API_PREFIX = "$JS.API"

# How long a JetStream API request waits for its answer by default.
DEFAULT_API_TIMEOUT_S = 5.0

# JetStream's error codes that a caller acts on (err_code in an answer).
ERR_STREAM_NOT_FOUND = 10059
ERR_CONSUMER_NOT_FOUND = 10014

NS_PER_S = 1_000_000_000


def seconds_to_ns(seconds: float, what: str) -> int:
    """A positive duration in seconds as JetStream's nanoseconds;
    ValueError naming what for anything else."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0 \
            or seconds > 10 * 365 * 86400:
        raise ValueError("%s must be a positive number of seconds (at most ten years), got %r"
                         % (what, seconds))
    return int(seconds * NS_PER_S)


class JetStreamError(Exception):
    """JetStream answered a request with an error: ``code`` (HTTP-like),
    ``err_code`` (JetStream's own number, 0 when absent), ``description``,
    and ``subject``, the API subject asked."""

    def __init__(self, subject: str, code: int, err_code: int, description: str):
        super().__init__("JetStream refused %s: %s (code %d, err_code %d)"
                         % (subject, description, code, err_code))
        self.subject = subject
        self.code = code
        self.err_code = err_code
        self.description = description


class PubAck(NamedTuple):
    """A stream's acknowledgment of a publish: which ``stream``, its
    sequence ``seq`` there, and ``duplicate`` when the duplicate window
    dropped it as a republish of a message it has."""

    stream: str
    seq: int
    duplicate: bool


class JetStream:
    """The JetStream API of one connection."""

    def __init__(self, conn: NatsConnection, timeout: float = DEFAULT_API_TIMEOUT_S):
        self.conn = conn
        self.timeout = timeout

    def api(self, subject: str, body: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """The answer to one API request (``$JS.API.`` + subject) as a
        dict. JetStreamError for an error answer or one that is not a JSON
        object; the connection's errors (NoResponders: no JetStream,
        NatsPermissionError, NatsTimeout) as they come."""
        full = "%s.%s" % (API_PREFIX, subject)
        payload = json.dumps(body).encode() if body is not None else b""
        msg = self.conn.request(full, payload, self.timeout)
        try:
            answer = json.loads(msg.data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            answer = None
        if not isinstance(answer, dict):
            raise JetStreamError(full, 0, 0, "an answer that is not a JSON object: %r"
                                 % msg.data[:80])
        if answer.get("error") is not None:
            raise _refusal(full, answer["error"])
        return answer

    # -- streams ----------------------------------------------------------

    def stream_info(self, stream: str) -> Dict[str, Any]:
        """The stream's info (its ``config`` and ``state``)."""
        return self.api("STREAM.INFO." + check_token(stream, "stream"))

    def stream_create(self, stream: str, subjects: Sequence[str], *,
                      duplicate_window_s: float = 120.0, max_age_s: Optional[float] = None,
                      max_bytes: Optional[int] = None, storage: str = "file",
                      replicas: int = 1) -> Dict[str, Any]:
        """Creates the stream (limits retention, discard old) and returns
        its info; an existing stream of the same config is returned as is,
        one of another config is a JetStreamError."""
        config: Dict[str, Any] = {
            "name": check_token(stream, "stream"),
            "subjects": [check_subject(s, "stream subject") for s in subjects],
            "retention": "limits", "discard": "old", "storage": storage,
            "num_replicas": replicas,
            "duplicate_window": seconds_to_ns(duplicate_window_s, "duplicate_window_s"),
        }
        if max_age_s is not None:
            config["max_age"] = seconds_to_ns(max_age_s, "max_age_s")
        if max_bytes is not None:
            config["max_bytes"] = max_bytes
        return self.api("STREAM.CREATE." + stream, config)

    def stream_delete(self, stream: str) -> None:
        """Deletes the stream and everything in it."""
        self.api("STREAM.DELETE." + check_token(stream, "stream"))

    # -- consumers --------------------------------------------------------

    def consumer_info(self, stream: str, durable: str) -> Dict[str, Any]:
        """The consumer's info (``config``, ``num_pending``,
        ``num_ack_pending``, ``ack_floor``...)."""
        return self.api("CONSUMER.INFO.%s.%s" % (check_token(stream, "stream"),
                                                 check_token(durable, "durable")))

    def consumer_create(self, stream: str, config: Mapping[str, Any]) -> Dict[str, Any]:
        """Creates the durable consumer ``config["durable_name"]`` (or
        returns it when one of the same config exists). The request goes to
        ``CONSUMER.CREATE.<stream>.<durable>.<filter subject>`` when the
        config has a filter, so that a server's permissions can grant a user
        consumers on some subjects only, else to
        ``CONSUMER.DURABLE.CREATE.<stream>.<durable>``."""
        durable = check_token(str(config.get("durable_name", "")), "durable")
        body = {"stream_name": check_token(stream, "stream"), "config": dict(config)}
        subject_filter = config.get("filter_subject")
        if subject_filter:
            return self.api("CONSUMER.CREATE.%s.%s.%s"
                            % (stream, durable, check_subject(subject_filter, "filter subject")),
                            body)
        return self.api("CONSUMER.DURABLE.CREATE.%s.%s" % (stream, durable), body)

    def consumer_delete(self, stream: str, durable: str) -> None:
        """Deletes the consumer (its ack floor is lost)."""
        self.api("CONSUMER.DELETE.%s.%s" % (check_token(stream, "stream"),
                                            check_token(durable, "durable")))

    # -- publishing -------------------------------------------------------

    def publish(self, subject: str, data: bytes, headers: Optional[Mapping[str, Any]] = None,
                msg_id: Optional[str] = None, timeout: Optional[float] = None) -> PubAck:
        """Publishes into the stream that captures subject and waits for its
        acknowledgment; msg_id goes as ``Nats-Msg-Id``. JetStreamError when
        the stream refuses, NoResponders when no stream captures subject."""
        head = dict(headers or {})
        if msg_id is not None:
            head["Nats-Msg-Id"] = msg_id
        msg = self.conn.request(subject, data, self.timeout if timeout is None else timeout,
                                head or None)
        try:
            answer = json.loads(msg.data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            answer = None
        if not isinstance(answer, dict):
            raise JetStreamError(subject, 0, 0, "a publish acknowledgment that is not a JSON "
                                 "object: %r" % msg.data[:80])
        if answer.get("error") is not None:
            raise _refusal(subject, answer["error"])
        seq = answer.get("seq")
        if not isinstance(seq, int):
            raise JetStreamError(subject, 0, 0, "a publish acknowledgment without a seq: %r"
                                 % (answer,))
        return PubAck(str(answer.get("stream", "")), seq, bool(answer.get("duplicate")))


def _refusal(subject: str, error: Any) -> JetStreamError:
    """The JetStreamError for an answer's ``error`` element, whatever its
    shape (a hostile or broken server sends anything)."""
    if not isinstance(error, dict):
        return JetStreamError(subject, 0, 0, "a malformed error %r" % (error,))
    code, err_code = error.get("code"), error.get("err_code")
    return JetStreamError(subject, code if isinstance(code, int) else 0,
                          err_code if isinstance(err_code, int) else 0,
                          str(error.get("description", "")))


def check_token(name: str, what: str) -> str:
    """name, or ValueError naming what: a stream or consumer name is one
    subject token (no '.', '*', '>' or whitespace)."""
    if not isinstance(name, str) or not name or len(name) > 255 \
            or any(c in name for c in ".*> \t\r\n") or not name.isprintable():
        raise ValueError("%s name %r must be one NATS subject token (no '.', '*', '>' or "
                         "spaces, 1..255 characters)" % (what, name))
    return name
