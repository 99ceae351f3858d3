"""FleetSubscriber against a real nats-server with JetStream: the stream as
the engines make it, engine-like messages published here (the engine itself
is tests/fleet's business), and what a gateway would notice: notifications
typed and in order, exactly once into the host across a killed reader, lost
acks, a new epoch and a server restart; hostile messages never handed over;
a user without the right to a session refused by name. The NATS client
underneath is also tried against a fake server that sends what no server
should, to show that it errors rather than hangs."""

import select
import socket
import subprocess
import threading
import time
import unittest

import msgpack

from support import EVENT_TIMEOUT_S, PACKAGE_ROOT, PYTHON
from natsfixture import NatsServer
from vigil_client import (FleetError, FleetNotification, FleetPermissionError, FleetSubscriber,
                          FleetUnavailable, JetStream, NatsAuthError, NatsConnection,
                          NatsPermissionError, notification_subject,
                          session_token)

EPOCH_A = "00000000000000aa"
EPOCH_B = "3f9c2a61d07be485"
EPOCH_C = "00000000000000cc"

# The consumer's ack_wait where a test waits for a redelivery: short, so the
# wait is short; the waits themselves are on events, with EVENT_TIMEOUT_S.
SHORT_ACK_WAIT_S = 1.0


def note(session, seq, epoch=EPOCH_A, **extra):
    """A notification map as an engine sends it."""
    m = {"session": session, "seq": seq, "epoch": epoch, "type": "output", "mode": "idle",
         "monitor_id": "mon_1", "label": "build", "batch": seq,
         "lines": [{"seq": seq, "stream": "stderr", "text": "line %d" % seq, "pattern": 0,
                    "truncated": False}],
         "text": "<<<vigil %s %d>>>\n" % (session, seq), "at": "2026-01-01T00:00:00Z"}
    m.update(extra)
    return m


def publish(js, engine, m, headers=None, subject=None, payload=None):
    """Publishes m as an engine does (docs/fleet.md: subject, headers,
    Nats-Msg-Id); headers overrides or (with None) removes headers."""
    head = {"Vigil-Engine": engine, "Vigil-Session": str(m.get("session")),
            "Vigil-Seq": str(m.get("seq")), "Vigil-Epoch": str(m.get("epoch"))}
    for k, v in (headers or {}).items():
        if v is None:
            head.pop(k, None)
        else:
            head[k] = v
    return js.publish(subject or notification_subject(engine, m["session"]),
                      payload if payload is not None else msgpack.packb(m, use_bin_type=True),
                      headers=head,
                      msg_id="%s:%s:%s" % (m.get("epoch"), m.get("session"), m.get("seq")))


def take(sub, count, timeout=EVENT_TIMEOUT_S):
    """The next count notifications of sub, waiting on them."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        n = sub.next(max(deadline - time.monotonic(), 0.01))
        if n is None and time.monotonic() >= deadline:
            raise AssertionError("%d of %d notifications within %.0f s: %r; counters %r"
                                 % (len(got), count, timeout, [(x.session, x.seq) for x in got],
                                    sub.counters))
        if n is not None:
            got.append(n)
    return got


class FleetCase(unittest.TestCase):
    """A nats-server with JetStream and the stream VIGIL, for each test."""

    config = None

    def setUp(self):
        self.server = NatsServer.for_test(self, self.config)
        self.admin = self.connect()
        self.js = JetStream(self.admin)
        self.js.stream_create("VIGIL", ["vigil.*.*.n"], duplicate_window_s=120)

    def connect(self, url=None):
        conn = NatsConnection.connect(url or self.admin_url())
        self.addCleanup(conn.close)
        return conn

    def admin_url(self):
        return self.server.url

    def subscriber(self, durable="gw", **kwargs):
        kwargs.setdefault("url", self.admin_url())
        sub = FleetSubscriber(durable=durable, **kwargs)
        self.addCleanup(sub.close)
        return sub

    def consumer_settled(self, durable, last_stream_seq):
        """Whether the consumer has acks for everything up to
        last_stream_seq and nothing waiting for an ack."""
        info = self.js.consumer_info("VIGIL", durable)
        return (info["ack_floor"]["stream_seq"] >= last_stream_seq
                and info["num_ack_pending"] == 0 and info["num_pending"] == 0)

    def wait_settled(self, sub, durable, last_stream_seq):
        """Reads on (nothing may be handed over) until the consumer has
        settled everything up to last_stream_seq."""
        deadline = time.monotonic() + EVENT_TIMEOUT_S
        while not self.consumer_settled(durable, last_stream_seq):
            self.assertLess(time.monotonic(), deadline, "consumer %s did not settle: %r"
                            % (durable, self.js.consumer_info("VIGIL", durable)))
            n = sub.next(0.2)
            self.assertIsNone(n, "handed over %r" % (n and (n.session, n.seq, n.epoch)))
            sub.flush()


class Stream(FleetCase):
    def test_the_stream_drops_a_republish_inside_its_duplicate_window(self):
        info = self.js.stream_info("VIGIL")
        self.assertEqual(info["config"]["subjects"], ["vigil.*.*.n"])
        self.assertEqual(info["config"]["duplicate_window"], 120 * 10**9)
        first = publish(self.js, "e1", note("build.prod", 1))
        again = publish(self.js, "e1", note("build.prod", 1))
        self.assertEqual((first.stream, first.duplicate, again.duplicate, again.seq),
                         ("VIGIL", False, True, first.seq))
        self.assertEqual(self.js.stream_info("VIGIL")["state"]["messages"], 1)

    def test_session_names_become_one_token(self):
        self.assertEqual(session_token("build.prod"), "build%2Eprod")
        self.assertEqual(notification_subject("e1", "build.prod"), "vigil.e1.build%2Eprod.n")
        self.assertEqual(notification_subject("*", "*"), "vigil.*.*.n")
        with self.assertRaisesRegex(ValueError, "session 'a b'"):
            notification_subject("e1", "a b")
        with self.assertRaisesRegex(ValueError, "engine 'e.1'"):
            FleetSubscriber(self.server.url, "gw", engine="e.1")

    def test_a_missing_stream_is_named(self):
        self.js.stream_delete("VIGIL")
        with self.assertRaisesRegex(FleetError, "stream VIGIL does not exist on nats://127"):
            self.subscriber()
        sub = self.subscriber(create_stream=True)
        publish(self.js, "e1", note("s", 1))
        self.assertEqual([n.seq for n in take(sub, 1)], [1])


class Delivery(FleetCase):
    def test_typed_in_order_and_acked_ones_are_not_redelivered(self):
        for seq in range(1, 6):
            publish(self.js, "e1", note("build.prod", seq))
        publish(self.js, "e2", note("other", 1))
        sub = self.subscriber(session="build.prod", ack_wait_s=SHORT_ACK_WAIT_S)
        self.assertEqual(sub.filter_subject, "vigil.*.build%2Eprod.n")
        got = take(sub, 5)
        self.assertEqual([n.seq for n in got], [1, 2, 3, 4, 5])
        n = got[0]
        self.assertIsInstance(n, FleetNotification)
        self.assertEqual((n.engine, n.session, n.epoch, n.type, n.label, n.delivered_count),
                         ("e1", "build.prod", EPOCH_A, "output", "build", 1))
        self.assertEqual((n.lines[0].text, n.lines[0].stream), ("line 1", "stderr"))
        for x in got:
            x.ack()
        self.assertEqual(sub.cursor, {("e1", "build.prod"): (EPOCH_A, 5)})
        # Acked: JetStream holds nothing for this consumer, and never
        # delivered anything twice (ack_wait was short).
        self.wait_settled(sub, "gw", 5)
        self.assertEqual(self.js.consumer_info("VIGIL", "gw")["num_redelivered"], 0)
        self.assertIsNone(sub.next(0))
        self.assertEqual((sub.counters["delivered"], sub.counters["acked"],
                          sub.counters["duplicates"], sub.counters["malformed"]), (5, 5, 0, 0))

    def test_a_killed_reader_leaves_its_unacked_to_the_next_one(self):
        for seq in range(1, 6):
            publish(self.js, "e1", note("s", seq))
        # The child acks 1..3, flushes, is handed 4 and is killed before its ack.
        child_code = (
            "import sys\n"
            "sys.path.insert(0, %r)\n"
            "from vigil_client import FleetSubscriber\n"
            "sub = FleetSubscriber(%r, 'gw', ack_wait_s=%r)\n"
            "while True:\n"
            "    n = sub.next(60)\n"
            "    if n.seq <= 3:\n"
            "        n.ack(); sub.flush()\n"
            "        continue\n"
            "    print('holding', n.seq, flush=True)\n"
            "    sys.stdin.read()\n" % (PACKAGE_ROOT, self.server.url, SHORT_ACK_WAIT_S))
        child = subprocess.Popen([PYTHON, "-c", child_code], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(child.stderr.close)
        self.addCleanup(child.stdout.close)
        self.addCleanup(child.stdin.close)
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        ready, _, _ = select.select([child.stdout], [], [], EVENT_TIMEOUT_S)
        line = child.stdout.readline() if ready else b""
        self.assertEqual(line, b"holding 4\n", child.stderr.read() if not ready else line)
        child.kill()
        child.wait()
        sub = self.subscriber(ack_wait_s=SHORT_ACK_WAIT_S)
        got = take(sub, 2)
        self.assertEqual([n.seq for n in got], [4, 5])
        self.assertGreaterEqual(got[0].delivered_count, 2)    # JetStream delivered it again
        for n in got:
            n.ack()
        self.wait_settled(sub, "gw", 5)
        self.assertEqual(sub.counters["delivered"], 2)

    def test_what_the_host_injected_is_acked_not_handed_over_again(self):
        for seq in range(1, 5):
            publish(self.js, "e1", note("s", seq))
        first = self.subscriber("gw", ack_wait_s=SHORT_ACK_WAIT_S)
        # The host injected 1 and 2, recorded (EPOCH_A, 2) and died before acking.
        self.assertEqual([n.seq for n in take(first, 3)], [1, 2, 3])
        first.close()
        sub = self.subscriber("gw", ack_wait_s=SHORT_ACK_WAIT_S,
                              cursor={("e1", "s"): (EPOCH_A, 2)})
        got = take(sub, 2)
        self.assertEqual([n.seq for n in got], [3, 4])
        self.assertEqual(sub.counters["duplicates"], 2)
        for n in got:
            n.ack()
        self.assertEqual(sub.cursor, {("e1", "s"): (EPOCH_A, 4)})
        # The duplicates were acked too: nothing waits.
        self.wait_settled(sub, "gw", 4)

    def test_what_comes_ahead_of_the_cursor_is_held_back_until_it_is_next(self):
        # JetStream redelivers a dead reader's unacked message behind what
        # came since: the stream order here is what a second reader sees.
        publish(self.js, "e1", note("s", 5))
        publish(self.js, "e1", note("s", 4))
        publish(self.js, "e1", note("s", 6))
        sub = self.subscriber(ack_wait_s=SHORT_ACK_WAIT_S, cursor={("e1", "s"): (EPOCH_A, 3)})
        got = []
        for n in take(sub, 3):
            got.append(n.seq)
            n.ack()
        self.assertEqual(got, [4, 5, 6])
        self.assertGreaterEqual(sub.counters["held_back"], 1)
        self.assertEqual(sub.counters["gaps"], 0)
        self.assertEqual(sub.cursor, {("e1", "s"): (EPOCH_A, 6)})

    def test_a_new_epoch_is_a_new_numbering(self):
        publish(self.js, "e1", note("s", 4))
        publish(self.js, "e1", note("s", 5))
        publish(self.js, "e1", note("s", 1, epoch=EPOCH_B))
        publish(self.js, "e1", note("s", 2, epoch=EPOCH_B))
        publish(self.js, "e2", note("s", 5, epoch=EPOCH_C))   # another engine's session "s"
        sub = self.subscriber(cursor={("e1", "s"): (EPOCH_A, 5)})
        got = take(sub, 3)
        self.assertEqual([(n.engine, n.epoch, n.seq) for n in got],
                         [("e1", EPOCH_B, 1), ("e1", EPOCH_B, 2), ("e2", EPOCH_C, 5)])
        self.assertEqual(sub.counters["duplicates"], 2)
        for n in got:
            n.ack()
        self.assertEqual(sub.cursor, {("e1", "s"): (EPOCH_B, 2), ("e2", "s"): (EPOCH_C, 5)})
        self.wait_settled(sub, "gw", 5)

    def test_term_refuses_for_good(self):
        publish(self.js, "e1", note("s", 1))
        publish(self.js, "e1", note("s", 2))
        sub = self.subscriber(ack_wait_s=SHORT_ACK_WAIT_S)
        one, two = take(sub, 2)
        one.term()
        two.ack()
        self.assertTrue(one.settled and two.settled)
        self.assertEqual(sub.cursor, {("e1", "s"): (EPOCH_A, 2)})
        self.wait_settled(sub, "gw", 2)
        self.assertEqual((sub.counters["termed"], sub.counters["acked"]), (1, 1))

    def test_hostile_messages_are_counted_and_never_handed_over(self):
        js, e = self.js, "e1"
        publish(js, e, note("s", 1), payload=b"\xc1 this is not msgpack")
        publish(js, e, note("s", 2), payload=msgpack.packb(dict(note("s", 2), seq="2")))
        publish(js, e, note("s", 3), headers={"Vigil-Seq": "4"})
        publish(js, e, note("s", 4), headers={"Vigil-Session": "other"})
        publish(js, e, note("s", 5), headers={"Vigil-Epoch": None})
        publish(js, e, note("s", 6, text="x" * 100000))
        publish(js, e, note("s", 7), payload=msgpack.packb([1, 2, 3]))
        publish(js, e, note("s", 8), subject="vigil.e1.bad%41.n")
        publish(js, e, note("s", 9, lines=["not a map"]))
        publish(js, e, note("s", 10, epoch="not-hex"))
        publish(js, e, note("s", 11), headers={"Vigil-Engine": "e2"})
        publish(js, e, note("s", 12, type=None))
        publish(js, e, dict(note("s", 13), seq=True), headers={"Vigil-Seq": "13"})
        publish(js, e, note("s", 20))
        sub = self.subscriber(ack_wait_s=SHORT_ACK_WAIT_S, max_notification_bytes=4096)
        [n] = take(sub, 1)
        self.assertEqual(n.seq, 20)
        self.assertEqual((sub.counters["malformed"], sub.counters["oversized"]), (13, 1),
                         sub.last_malformed)
        n.ack()
        # Terminated: none of them waits for an ack or comes again.
        self.wait_settled(sub, "gw", 14)
        self.assertEqual(sub.counters["delivered"], 1)


ACCOUNTS = """
accounts {
  FLEET {
    jetstream: enabled
    users: [
      {user: admin, password: adminpw}
      {user: alice, password: alicepw, permissions: {
        publish: {allow: ["$JS.API.CONSUMER.INFO.VIGIL.*",
                          "$JS.API.CONSUMER.CREATE.VIGIL.*.vigil.e1.public.n",
                          "$JS.API.CONSUMER.MSG.NEXT.VIGIL.*", "$JS.ACK.VIGIL.>"]}
        subscribe: {allow: ["_INBOX.>"]}
      }}
    ]
  }
}
"""


class Permissions(FleetCase):
    config = ACCOUNTS

    def admin_url(self):
        return self.server.url_for("admin", "adminpw")

    def test_a_user_without_rights_to_a_session_is_refused_by_name(self):
        publish(self.js, "e1", note("public", 1))
        publish(self.js, "e1", note("secret", 1))
        alice = self.server.url_for("alice", "alicepw")
        with self.assertRaises(FleetPermissionError) as refused:
            self.subscriber("alice-secret", url=alice, engine="e1", session="secret")
        self.assertEqual(refused.exception.filter_subject, "vigil.e1.secret.n")
        self.assertEqual(refused.exception.subject,
                         "$JS.API.CONSUMER.CREATE.VIGIL.alice-secret.vigil.e1.secret.n")
        self.assertIn("may not publish to $JS.API.CONSUMER.CREATE", str(refused.exception))
        # What she may read, she reads.
        sub = self.subscriber("alice-public", url=alice, engine="e1", session="public")
        [n] = take(sub, 1)
        self.assertEqual((n.session, n.seq), ("public", 1))
        n.ack()
        sub.flush()

    def test_wrong_credentials_are_refused(self):
        with self.assertRaisesRegex(NatsAuthError, "refused the credentials"):
            FleetSubscriber(self.server.url_for("alice", "wrong"), "gw")
        with self.assertRaises(NatsAuthError):
            FleetSubscriber(self.server.url, "gw")


class Restart(FleetCase):
    def test_the_server_restarted_under_a_reader_loses_nothing(self):
        for seq in (1, 2, 3):
            publish(self.js, "e1", note("s", seq))
        sub = self.subscriber(ack_wait_s=SHORT_ACK_WAIT_S)
        got = take(sub, 3)
        got[0].ack()
        got[1].ack()
        sub.flush()
        self.admin.close()
        self.server.restart()
        got[2].ack()        # injected while the server was away: this ack is lost
        js = JetStream(self.connect())
        for seq in (4, 5):
            publish(js, "e1", note("s", seq))
        after = take(sub, 2)
        self.assertEqual([n.seq for n in after], [4, 5])
        for n in after:
            n.ack()
        self.js = js
        # 3 comes again (its ack was lost) and is acked as a duplicate.
        self.wait_settled(sub, "gw", 5)
        self.assertEqual(sub.counters["duplicates"], 1)
        self.assertGreaterEqual(sub.counters["reconnects"], 1)
        self.assertEqual(sub.cursor, {("e1", "s"): (EPOCH_A, 5)})

    def test_a_server_that_stays_away_is_a_clear_error_to_retry_on(self):
        sub = self.subscriber(reconnect_wait_s=1.0)
        self.admin.close()
        self.server.stop()
        started = time.monotonic()
        with self.assertRaisesRegex(FleetUnavailable, "lost the connection to nats://127"):
            sub.next(EVENT_TIMEOUT_S)
        self.assertLess(time.monotonic() - started, EVENT_TIMEOUT_S)
        self.server.start()
        js = JetStream(self.connect())
        publish(js, "e1", note("s", 1))
        self.assertEqual([n.seq for n in take(sub, 1)], [1])


class FakeServer:
    """A TCP server on loopback that sends INFO, answers the handshake's
    PING, then sends script (bytes) and keeps the connection open."""

    def __init__(self, test, script, info=b'INFO {"max_payload": 1024, "headers": true}\r\n',
                 on_ping=b"PONG\r\n"):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.url = "nats://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.info, self.script, self.on_ping = info, script, on_ping
        self.conns = []
        test.addCleanup(self.close)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        self.conns.append(conn)
        conn.sendall(self.info)
        seen = b""
        sent_script = False
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            seen += data
            while b"PING\r\n" in seen:
                seen = seen.replace(b"PING\r\n", b"", 1)
                conn.sendall(self.on_ping)
                if not sent_script:
                    sent_script = True
                    conn.sendall(self.script)

    def close(self):
        self.listener.close()
        for c in self.conns:
            c.close()
        self.thread.join(10)


class Wire(unittest.TestCase):
    def read_after_script(self, script):
        server = FakeServer(self, script)
        conn = NatsConnection.connect(server.url, timeout=EVENT_TIMEOUT_S)
        self.addCleanup(conn.close)
        sid = conn.subscribe("x")
        return conn, sid

    def test_malformed_server_lines_are_errors_not_hangs(self):
        cases = [
            (b"WHAT is this\r\n", "unknown operation"),
            (b"MSG x 1 notanumber\r\n", "malformed MSG"),
            (b"MSG x 1 5000\r\n" + b"y" * 5000 + b"\r\n", "over max_payload 1024"),
            (b"HMSG x 1 12 14\r\nNATS/9.9\r\n\r\nhi\r\n", "not NATS/1.0"),
            (b"MSG x 1 2\r\nhiXX", "not followed by CRLF"),
            (b"-ERR 'Stale Connection'\r\n", "Stale Connection"),
            (b"Z" * (70 << 10), "control line longer than"),
        ]
        for script, expected in cases:
            with self.subTest(expected=expected):
                conn, sid = self.read_after_script(script)
                started = time.monotonic()
                with self.assertRaisesRegex(ConnectionError, expected):
                    conn.next_msg(sid, EVENT_TIMEOUT_S)
                self.assertLess(time.monotonic() - started, EVENT_TIMEOUT_S / 2)
                with self.assertRaises(ConnectionError):      # and it stays closed
                    conn.publish("x", b"")

    def test_messages_and_headers_are_parsed(self):
        conn, sid = self.read_after_script(
            b"MSG x 1 r.1 3\r\nabc\r\n"
            b"HMSG x 1 38 40\r\nNATS/1.0\r\nA: 1\r\nA: 2\r\nVigil-Seq: 7\r\n\r\nhi\r\n"
            b"HMSG x 1 28 28\r\nNATS/1.0 404 No Messages\r\n\r\n\r\n")
        a = conn.next_msg(sid, EVENT_TIMEOUT_S)
        self.assertEqual((a.subject, a.reply, a.data, a.headers), ("x", "r.1", b"abc", {}))
        b = conn.next_msg(sid, EVENT_TIMEOUT_S)
        self.assertEqual((b.headers, b.header("Vigil-Seq"), b.data),
                         ({"A": ["1", "2"], "Vigil-Seq": ["7"]}, "7", b"hi"))
        with self.assertRaisesRegex(ValueError, "header A is given 2 times"):
            b.header("A")
        c = conn.next_msg(sid, EVENT_TIMEOUT_S)
        self.assertEqual((c.status, c.description, c.data), (404, "No Messages", b""))

    def test_a_permissions_violation_names_the_subject_and_keeps_the_connection(self):
        conn, sid = self.read_after_script(
            b"-ERR 'Permissions Violation for Publish to \"vigil.e1.secret.n\"'\r\n")
        with self.assertRaises(NatsPermissionError) as refused:
            conn.next_msg(sid, EVENT_TIMEOUT_S)
        self.assertEqual((refused.exception.operation, refused.exception.subject),
                         ("publish", "vigil.e1.secret.n"))
        conn.flush(EVENT_TIMEOUT_S)          # still there

    def test_refused_credentials_and_silent_servers(self):
        server = FakeServer(self, b"", on_ping=b"-ERR 'Authorization Violation'\r\n")
        with self.assertRaisesRegex(NatsAuthError, "Authorization Violation"):
            NatsConnection.connect(server.url, timeout=EVENT_TIMEOUT_S)
        silent = FakeServer(self, b"", on_ping=b"")
        with self.assertRaisesRegex(ConnectionError, "did not answer a PING"):
            NatsConnection.connect(silent.url, timeout=0.5)

    def test_bad_arguments_are_named(self):
        with self.assertRaisesRegex(ValueError, "only nats:// and tls:// are supported"):
            NatsConnection.connect("http://127.0.0.1:4222")
        server = FakeServer(self, b"")
        conn = NatsConnection.connect(server.url, timeout=EVENT_TIMEOUT_S)
        self.addCleanup(conn.close)
        with self.assertRaisesRegex(ValueError, "subject 'a b'"):
            conn.publish("a b", b"")
        with self.assertRaisesRegex(ValueError, "over the server's max_payload"):
            conn.publish("a", b"x" * 2000)
        with self.assertRaisesRegex(ValueError, "header X-A: its value holds a CR or LF"):
            conn.publish("a", b"", headers={"X-A": "1\r\nEvil: 1"})

    def test_token_authentication(self):
        server = NatsServer.for_test(self, 'authorization { token: "s3cret" }\n', jetstream=False)
        conn = NatsConnection.connect("nats://s3cret@127.0.0.1:%d" % server.port)
        self.addCleanup(conn.close)
        conn.flush(EVENT_TIMEOUT_S)
        with self.assertRaises(NatsAuthError):
            NatsConnection.connect("nats://wrong@127.0.0.1:%d" % server.port)


if __name__ == "__main__":
    unittest.main()
