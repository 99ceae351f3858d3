"""Client.connect_nats against a real vigild --nats through a real
nats-server (docs/fleet.md section 6): every call as over the socket,
deferred answers (monitor_wait, monitor_stop), a session's own subject
refusing another session's call with the engine's `denied`, a wrong engine
name failing at once (no responders), answers from a rogue responder
refused as malformed without a crash or a hang, a request over the server's
max_payload refused before it is sent, a broker that goes away and comes
back (reconnect), an idle virtual connection closed by the engine and its
session opened again, an inbox prefix of the user's own, the asyncio
client, and the notifications of the same session read with
fleet_subscriber. Every wait is on an event with a generous deadline;
every process a test starts is stopped by it."""

import asyncio
import os
import subprocess
import threading
import time
import unittest

import msgpack

from natsfixture import NatsServer
from support import EVENT_TIMEOUT_S, VIGILD, config, lua, read_until_ending, workdir
from vigil_client import (AsyncClient, Client, ConnectionClosed, Denied, EngineUnavailable,
                          Internal, LimitExceeded, NatsConnection, NatsPermissionError,
                          VigilError)

ENGINE = "e1"

# A monitor that runs until the file it names exists, then says so: its
# ending is the test's to decide, so a wait on it cannot end early.
UNTIL_FILE = "while [ ! -e '%s' ]; do sleep 0.02; done; echo done"


def wait_for(what, predicate, timeout=EVENT_TIMEOUT_S, step=0.05):
    """Polls predicate until it returns something true; fails naming what."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError("%s: not within %.0f s" % (what, timeout))
        time.sleep(step)


class NatsEngine:
    """vigild --listen SOCKET --nats URL --nats-engine NAME, its log in the
    work directory; ready once its request subjects are served."""

    def __init__(self, test, work, url, name=ENGINE, nats_settings=None):
        cfg = config()
        cfg["nats"] = dict(nats_settings or {})
        cfg["session"] = {"linger_ms": 600000}
        path = os.path.join(work.path, "nats-engine.lua")
        with open(path, "w") as f:
            f.write("return %s\n" % lua(cfg))
        self.socket = os.path.join(work.path, "run-%s" % name, "vigil.sock")
        self.args = [VIGILD, "--listen", self.socket, "--config", path, "--no-state",
                     "--nats", url, "--nats-engine", name]
        self.log_path = work.log_path
        self.proc = None
        test.addCleanup(self.stop)
        self.start()

    def start(self):
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=log)
        self.wait_serving()

    def rpc_info(self):
        """api_info's nats.rpc, over the engine's socket."""
        with Client.connect(self.socket, wait_s=EVENT_TIMEOUT_S) as local:
            return local.api_info()["nats"]["rpc"]

    def wait_serving(self):
        wait_for("the engine serves its request subjects",
                 lambda: self.proc.poll() is None and self.rpc_info()["serving"])

    def stop(self):
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(EVENT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class RpcCase(unittest.TestCase):
    """A nats-server with JetStream and an engine e1 on it, for each test."""

    server_config = None
    nats_settings = None

    def setUp(self):
        self.work = workdir(self)
        self.server = NatsServer.for_test(self, self.server_config)
        self.engine = NatsEngine(self, self.work, self.engine_url(),
                                 nats_settings=self.nats_settings)

    def engine_url(self):
        return self.server.url

    def client(self, *args, **kwargs):
        kwargs.setdefault("call_timeout", EVENT_TIMEOUT_S)
        c = Client.connect_nats(kwargs.pop("url", self.server.url), *(args or (ENGINE,)),
                                **kwargs)
        self.addCleanup(c.close)
        return c

    def flag(self, name):
        return os.path.join(self.work.path, name)


class Calls(RpcCase):
    def test_every_call_works_as_over_the_socket(self):
        c = self.client()
        self.assertEqual(c.nats.subject, "vigil.e1.rpc")
        self.assertEqual(c.ping()["api_level"], 1)
        rpc = c.api_info()["nats"]["rpc"]
        self.assertTrue(rpc["serving"])
        s = c.session("build.prod")
        self.assertEqual(s.name, "build.prod")
        flag = self.flag("go")
        mon = s.monitor_start(label="build", argv=["sh", "-c", UNTIL_FILE % flag])
        mid = mon["monitor_id"]
        # monitor_wait is answered when the monitor ends, which it cannot
        # before the flag exists: meanwhile other calls are answered.
        waited = {}
        waiter = threading.Thread(target=lambda: waited.update(
            s.monitor_wait(mid, timeout_ms=int(EVENT_TIMEOUT_S * 1000))))
        waiter.start()
        self.addCleanup(waiter.join, EVENT_TIMEOUT_S)
        self.assertEqual([m["monitor_id"] for m in s.monitor_list()["monitors"]], [mid])
        self.assertEqual(s.monitor_status(mid)["state"], "running")
        self.assertTrue(waiter.is_alive())
        open(flag, "w").close()
        waiter.join(EVENT_TIMEOUT_S)
        self.assertFalse(waiter.is_alive(), "monitor_wait was not answered")
        self.assertEqual((waited["timed_out"], waited["state"]), (False, "exited"))
        out = s.monitor_output(mid)
        self.assertEqual([line["text"] for line in out["lines"]], ["done"])
        self.assertEqual(s.monitor_logs(mid)["stdout"], b"done\n")
        # monitor_stop is answered once the process group is gone.
        long = s.monitor_start(argv=["sh", "-c", "sleep 60"])
        stopped = s.monitor_stop(long["monitor_id"])
        self.assertEqual((stopped["status"], stopped["state"]), ("stopped", "stopped"))
        # The engine's own errors come back as over the socket.
        with self.assertRaises(VigilError) as refused:
            s.monitor_status("mon_nosuchmonitor")
        self.assertEqual((refused.exception.name, refused.exception.method),
                         ("not_found", "monitor_status"))
        self.assertEqual(c.nats.counters["malformed"], 0)
        self.assertEqual(c.nats.counters["requests"], c.nats.counters["answers"])

    def test_a_session_subject_serves_that_session_alone(self):
        scoped = self.client(session="build.prod")
        self.assertEqual(scoped.nats.subject, "vigil.e1.build%2Eprod.rpc")
        with self.assertRaises(Denied) as other:
            scoped.monitor_list(session="other")
        self.assertEqual(other.exception.message,
                         'denied: session: vigil.e1.build%2Eprod.rpc serves the session '
                         '"build.prod" alone, not "other"')
        with self.assertRaisesRegex(Denied, "^denied: session_list acts on more than one"):
            scoped.session_list()
        # A call that names no session acts on the subject's: the engine's
        # whole subject sees the monitor in build.prod.
        mon = scoped.monitor_start(argv=["sh", "-c", "sleep 60"])
        s = scoped.session()
        self.assertEqual(s.name, "build.prod")
        whole = self.client().session("build.prod")
        self.assertEqual([m["monitor_id"] for m in whole.monitor_list()["monitors"]],
                         [mon["monitor_id"]])
        s.monitor_stop(mon["monitor_id"])

    def test_a_wrong_engine_name_fails_at_once(self):
        c = self.client("no-such-engine")
        started = time.monotonic()
        with self.assertRaises(EngineUnavailable) as gone:
            c.ping()
        # At once, not at the call's timeout (EVENT_TIMEOUT_S).
        self.assertLess(time.monotonic() - started, EVENT_TIMEOUT_S / 3)
        e = gone.exception
        self.assertIsInstance(e, VigilError)
        self.assertIsInstance(e, ConnectionError)
        self.assertEqual((e.name, e.method), ("unavailable", "ping"))
        self.assertIn("no engine answers on vigil.no-such-engine.rpc", e.message)
        self.assertIn("--nats-engine no-such-engine", e.message)
        self.assertEqual(c.nats.counters["no_responders"], 1)

    def test_a_request_over_max_payload_is_refused_before_it_is_sent(self):
        c = self.client()
        bound = c.nats.max_payload
        with self.assertRaises(LimitExceeded) as big:
            c.call("ping", padding="x" * bound)
        self.assertRegex(big.exception.message,
                         r"^limit_exceeded: the request is \d+ bytes with its headers, over the "
                         r"NATS server's max_payload \(%d bytes, nats://127\.0\.0\.1:\d+\)$"
                         % bound)
        self.assertEqual(big.exception.method, "ping")
        self.assertEqual(c.nats.counters["requests"], 0)
        self.assertEqual(c.ping()["api_level"], 1)       # the client goes on

    def test_notifications_are_read_from_jetstream(self):
        scoped = self.client(session="chat")
        with self.assertRaisesRegex(RuntimeError, "FleetSubscriber"):
            scoped.wait(0)
        sub = scoped.fleet_subscriber("gw-chat")
        self.addCleanup(sub.close)
        self.assertEqual(sub.filter_subject, "vigil.e1.chat.n")
        mon = scoped.monitor_start(argv=["sh", "-c", "echo 'Error: out of cheese'"],
                                   patterns=["^Error:"])
        seen = read_until_ending(sub)
        self.assertEqual({(n.engine, n.session, n.monitor_id) for n in seen},
                         {("e1", "chat", mon["monitor_id"])})
        self.assertIn("Error: out of cheese", "".join(n.text for n in seen))


class Rogue(RpcCase):
    """A responder that is not the engine subscribes to an engine's subject
    and answers what it likes."""

    def rogue(self, answers):
        """Answers the n-th request with answers[n](request frame, reply);
        returns a list the requests' Vigil-Client headers land in."""
        conn = NatsConnection.connect(self.server.url)
        sid = conn.subscribe("vigil.rogue.rpc")
        conn.flush(EVENT_TIMEOUT_S)
        stop = threading.Event()
        clients = []

        def serve():
            for answer in answers:
                msg = None
                while msg is None and not stop.is_set():
                    msg = conn.next_msg(sid, 0.1)
                if msg is None:
                    return
                clients.append(msg.header("Vigil-Client"))
                frame = msgpack.unpackb(msg.data, raw=False)
                for subject, payload in answer(frame, msg.reply):
                    conn.publish(subject, payload)

        thread = threading.Thread(target=serve)
        thread.start()
        self.addCleanup(conn.close)
        self.addCleanup(thread.join, EVENT_TIMEOUT_S)
        self.addCleanup(stop.set)
        return clients

    def test_malformed_answers_are_errors_and_the_client_goes_on(self):
        def frame(*parts):
            return msgpack.packb(list(parts), use_bin_type=True)

        def reply(payload_of):
            return lambda req, to: [(to, payload_of(req[1]))]

        bad = [
            ("not msgpack", reply(lambda m: b"\xc1garbage")),
            ("two frames", reply(lambda m: frame(1, m, None, {}) + frame(1, m, None, {}))),
            ("an incomplete frame", reply(lambda m: frame(1, m, None, {"a": 1})[:-2])),
            ("a request frame", reply(lambda m: frame(0, m, "ping", []))),
            ("another msgid", reply(lambda m: frame(1, m + 1, None, {}))),
            ("msgid 0 without an error", reply(lambda m: frame(1, 0, None, {}))),
            ("a result that is no map", reply(lambda m: frame(1, m, None, [1, 2]))),
            ("an error of the wrong shape", reply(lambda m: frame(1, m, "oops", None))),
            ("an empty payload", reply(lambda m: b"")),
        ]
        good = [
            # Strays first (another call's subject, a subject no call has),
            # then the answer: the call gets its own.
            ("strays then the answer", lambda req, to: [
                (to.rsplit(".", 1)[0] + ".999", frame(1, 999, None, {})),
                (to.rsplit(".", 1)[0] + ".x", b"junk"),
                (to, frame(1, req[1], None, {"version": "rogue"}))]),
            ("a refusal with msgid 0", reply(lambda m: frame(
                1, 0, [4, "limit_exceeded: the request is 9 bytes, over rpc.max_message_bytes "
                          "(8)"], None))),
        ]
        clients = self.rogue([answer for _, answer in bad + good])
        c = self.client("rogue", call_timeout=EVENT_TIMEOUT_S)
        for what, _ in bad:
            started = time.monotonic()
            with self.assertRaises(Internal, msg=what) as refused:
                c.ping()
            self.assertLess(time.monotonic() - started, EVENT_TIMEOUT_S / 3, what)
            self.assertRegex(refused.exception.message,
                             r"^internal: a malformed answer on _INBOX\.\w+\.\d+ to a request on "
                             r"vigil\.rogue\.rpc: ", what)
            self.assertEqual(refused.exception.method, "ping")
        self.assertEqual(c.ping(), {"version": "rogue"})
        with self.assertRaisesRegex(LimitExceeded, "over rpc.max_message_bytes"):
            c.ping()
        self.assertEqual(c.nats.counters["malformed"], len(bad))
        self.assertEqual(c.nats.counters["stray"], 2)
        self.assertIsNone(c.closed)
        # One Vigil-Client id for every request of the client.
        self.assertEqual(set(clients), {c.nats.client_id})
        self.assertTrue(c.nats.client_id.startswith("vigil-py-"))


class Broker(RpcCase):
    def test_a_broker_that_goes_away_fails_calls_and_reconnect_resumes(self):
        c = self.client()
        s = c.session("kept")
        flag = self.flag("never")
        mon = s.monitor_start(argv=["sh", "-c", UNTIL_FILE % flag])
        failed = []

        def waiting():
            try:
                s.monitor_wait(mon["monitor_id"], timeout_ms=int(EVENT_TIMEOUT_S * 1000))
            except BaseException as e:     # what the test asserts
                failed.append(e)

        waiter = threading.Thread(target=waiting)
        waiter.start()
        self.addCleanup(waiter.join, EVENT_TIMEOUT_S)
        # session_open, monitor_start, then the monitor_wait (rpc_info is
        # asked over the engine's socket, so it adds none).
        wait_for("the monitor_wait reaches the engine",
                 lambda: self.engine.rpc_info()["requests"] >= 3)
        started = time.monotonic()
        self.server.stop()
        waiter.join(EVENT_TIMEOUT_S)
        self.assertFalse(waiter.is_alive(), "the pending call did not fail")
        self.assertLess(time.monotonic() - started, EVENT_TIMEOUT_S / 2)
        self.assertIsInstance(failed[0], ConnectionClosed)
        self.assertIn("NATS server", str(failed[0]))
        with self.assertRaises(ConnectionClosed):
            c.ping()
        self.server.start()
        # Back: the server first, then the engine subscribes again, then
        # the session is opened again; reconnect waits for all of it.
        c.reconnect(wait_s=EVENT_TIMEOUT_S)
        self.assertEqual(c.ping()["api_level"], 1)
        self.assertEqual([m["monitor_id"] for m in s.monitor_list()["monitors"]],
                         [mon["monitor_id"]])
        open(flag, "w").close()


class Idle(RpcCase):
    nats_settings = {"client_idle_ms": 1000}

    def test_a_session_is_opened_again_after_the_engine_closed_an_idle_client(self):
        c = self.client()
        s = c.session("lasting")
        mon = s.monitor_start(argv=["sh", "-c", "sleep 60"])
        wait_for("the engine closes the idle virtual connection",
                 lambda: self.engine.rpc_info()["clients_idle_closed"] >= 1)
        # The session lingers in the engine; the client opens it again on
        # its own and the call is carried out.
        self.assertEqual([m["monitor_id"] for m in s.monitor_list()["monitors"]],
                         [mon["monitor_id"]])
        self.assertTrue(s.resumed)
        # A session closed through the client is not opened behind its back.
        s.monitor_stop(mon["monitor_id"])
        s.session_close()
        with self.assertRaisesRegex(VigilError, "^not_found: session"):
            s.monitor_list()


# docs/fleet.md section 5, with an inbox prefix of alice's own: the engine
# answers into it through allow_responses (its publish list names only the
# default inbox), and bob may not send requests at all.
ACCOUNTS = """
accounts {
  FLEET {
    jetstream: enabled
    users: [
      {user: e1, password: e1pw, permissions: {
        publish: {allow: ["vigil.e1.>", "$JS.API.STREAM.INFO.VIGIL",
                          "$JS.API.STREAM.CREATE.VIGIL", "_INBOX.>"]}
        subscribe: {allow: ["_INBOX.>", "vigil.e1.rpc", "vigil.e1.*.rpc"]}
        allow_responses: true
      }}
      {user: alice, password: alicepw, permissions: {
        publish: {allow: ["vigil.e1.rpc"]}
        subscribe: {allow: ["_INBOX_alice.>"]}
      }}
      {user: bob, password: bobpw, permissions: {
        publish: {allow: ["vigil.e1.other.rpc"]}
        subscribe: {allow: ["_INBOX.>"]}
      }}
    ]
  }
}
"""


class Permissions(RpcCase):
    server_config = ACCOUNTS

    def engine_url(self):
        return self.server.url_for("e1", "e1pw")

    def test_an_inbox_prefix_of_the_users_own(self):
        alice = self.server.url_for("alice", "alicepw")
        with self.assertRaises(NatsPermissionError) as refused:
            Client.connect_nats(alice, ENGINE)
        self.assertEqual(refused.exception.operation, "subscribe")
        self.assertIn("give inbox_prefix=", str(refused.exception))
        c = self.client(url=alice, inbox_prefix="_INBOX_alice")
        self.assertTrue(c.nats.inbox.startswith("_INBOX_alice."))
        self.assertEqual(c.ping()["api_level"], 1)

    def test_a_user_who_may_not_send_is_refused_by_name(self):
        c = self.client(url=self.server.url_for("bob", "bobpw"))
        started = time.monotonic()
        with self.assertRaises(NatsPermissionError) as refused:
            c.ping()
        self.assertLess(time.monotonic() - started, EVENT_TIMEOUT_S / 3)
        self.assertEqual((refused.exception.operation, refused.exception.subject),
                         ("publish", "vigil.e1.rpc"))
        self.assertEqual(c.nats.counters["refused"], 1)
        self.assertIsNone(c.closed)         # the connection stays usable


class Asyncio(RpcCase):
    def test_the_asyncio_client_over_nats(self):
        flag = self.flag("go")

        async def main():
            c = await AsyncClient.connect_nats(self.server.url, ENGINE,
                                               call_timeout=EVENT_TIMEOUT_S)
            try:
                self.assertEqual((await c.ping())["api_level"], 1)
                s = await c.session("aio")
                mon = await s.monitor_start(argv=["sh", "-c", UNTIL_FILE % flag])
                waiting = asyncio.ensure_future(
                    s.monitor_wait(mon["monitor_id"], timeout_ms=int(EVENT_TIMEOUT_S * 1000)))
                # Other calls are answered while the wait is pending.
                listed = await s.monitor_list()
                self.assertEqual(len(listed["monitors"]), 1)
                self.assertFalse(waiting.done())
                open(flag, "w").close()
                waited = await waiting
                self.assertEqual(waited["state"], "exited")
                # A new NATS connection, the same session opened again.
                await c.reconnect(wait_s=EVENT_TIMEOUT_S)
                self.assertEqual([m["monitor_id"] for m in (await s.monitor_list(
                    include_exited=True))["monitors"]], [mon["monitor_id"]])
                with self.assertRaisesRegex(RuntimeError, "FleetSubscriber"):
                    await s.wait(0)
            finally:
                await c.close()
            gone = await AsyncClient.connect_nats(self.server.url, "nobody",
                                                  call_timeout=EVENT_TIMEOUT_S)
            try:
                with self.assertRaises(EngineUnavailable):
                    await gone.ping()
            finally:
                await gone.close()

        asyncio.run(asyncio.wait_for(main(), EVENT_TIMEOUT_S * 2))


if __name__ == "__main__":
    unittest.main()
