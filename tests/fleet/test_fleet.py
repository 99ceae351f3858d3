"""The fleet over NATS JetStream, end to end (docs/fleet.md, issue 28).

A real nats-server with JetStream on a temporary directory and a loopback
port (Debian's, from scripts/install-deps.sh), real vigild engines
publishing with --nats, and gateways reading with the Python client's
FleetSubscriber (tests/fleet/gateway.py). What is asserted is what a
gateway author would notice: every notification reaches the gateway's
"model" exactly once and in seq order per session, through a gateway
killed and replaced, an engine SIGKILLed and restarted, and the broker
restarted; a server that refuses stops the engine's start with its reason;
an unreachable one is waited for; a forged message id is found out.

Every wait is on an event (a count reached, a line logged) with a generous
bound; every process started here is stopped, nats-server included.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "functional"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python", "tests"))

import msgpack  # noqa: E402
import vigiltest  # noqa: E402
from natsfixture import NatsServer, free_port  # noqa: E402
from vigil_client.client import Client  # noqa: E402
from vigil_client.fleet import FleetPermissionError, FleetSubscriber  # noqa: E402
from vigil_client.jetstream import JetStream  # noqa: E402
from vigil_client.nats_wire import NatsConnection  # noqa: E402

PYTHON = sys.executable


def fleet_config(**overrides):
    """A config for the fleet's engines: sh allowed, each error line a
    notification of its own (no coalescing, a rate limit out of the way),
    sessions that outlive their hosts for the whole test."""
    cfg = vigiltest.default_config(
        rate_limit={"max_notifications": 1000},
        incident={"coalesce_ms": 0},
        session={"linger_ms": 600000},
        nats={"ack_timeout_ms": 2000, "retry_max_ms": 1000},
    )
    for group, values in overrides.items():
        cfg.setdefault(group, {}).update(values)
    return cfg


class FleetEngine:
    """One vigild with --nats, on a socket and a state directory of its own,
    that can be SIGKILLed and started again on the same directory."""

    def __init__(self, tmp, name, url, config=None, extra=()):
        self.name = name
        self.dir = os.path.join(tmp, name)
        os.makedirs(os.path.join(self.dir, "run"), exist_ok=True)
        self.config_path = os.path.join(self.dir, "config.lua")
        with open(self.config_path, "w") as f:
            f.write("return " + vigiltest.lua_value(config or fleet_config()) + "\n")
        self.socket_path = os.path.join(self.dir, "run", "vigil.sock")
        self.args = [vigiltest.VIGILD, "--config", self.config_path, "--listen",
                     self.socket_path, "--state-dir", os.path.join(self.dir, "state"),
                     "--nats", url, "--nats-engine", name] + list(extra)
        self.log_path = os.path.join(self.dir, "vigild.log")
        self.proc = None
        self.conns = []

    def start(self, wait=True):
        log = open(self.log_path, "ab")
        env = dict(os.environ, VIGIL_LOG="info")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=log, env=env)
        log.close()
        if wait:
            vigiltest.wait_for(lambda: self._listening(), "%s to listen" % self.name, 30)
        return self

    def _listening(self):
        if self.proc.poll() is not None:
            raise AssertionError("%s exited %s:\n%s" % (self.name, self.proc.returncode,
                                                        self.log()[-3000:]))
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(self.socket_path)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def connect(self):
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.socket_path)
        c = vigiltest.Connection(s.makefile("rb", buffering=0), s.makefile("wb", buffering=0),
                                 self.name)
        c.sock = s
        self.conns.append(c)
        return c

    def nats(self):
        c = self.connect()
        try:
            return c.call("api_info")["nats"]
        finally:
            c.close()

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def kill(self):
        for c in self.conns:
            c.close()
        self.conns = []
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        for c in self.conns:
            c.close()
        self.conns = []
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        reports = [line for line in self.log().splitlines()
                   if "ERROR: AddressSanitizer" in line or "ERROR: LeakSanitizer" in line
                   or "runtime error:" in line]
        assert not reports, "%s's sanitizer reported:\n%s" % (self.name, "\n".join(reports))


def crash_loop(count, gap="0.15", word="crash"):
    """A monitor's program: count distinct error lines, then an exit."""
    return ["sh", "-c", 'i=0; while [ $i -lt %d ]; do i=$((i+1)); echo "Error: %s $i"; '
            'sleep %s; done' % (count, word, gap)]


def start_monitor(conn, session, argv, label):
    return conn.call("monitor_start", session=session, argv=argv, patterns=["Error"],
                     label=label)["monitor_id"]


def stream_messages(url, subject):
    """Every message the stream holds on subject, oldest first, read
    directly by stream sequence (no consumer): (headers, payload map)."""
    conn = NatsConnection.connect(url)
    try:
        js = JetStream(conn)
        info = js.stream_info("VIGIL")
        out = []
        for seq in range(info["state"]["first_seq"], info["state"]["last_seq"] + 1):
            got = js.api("STREAM.MSG.GET.VIGIL", {"seq": seq})
            msg = got.get("message")
            if not msg or msg["subject"] != subject:
                continue
            import base64
            hdrs = base64.b64decode(msg.get("hdrs", "")).decode()
            raw = base64.b64decode(msg["data"])
            try:
                data = msgpack.unpackb(raw, raw=False)
            except ValueError:
                data = raw  # not the engine's: a forgery, say
            out.append((hdrs, data))
            continue
        return out
    finally:
        conn.close()


# --- tests --------------------------------------------------------------


def test_notifications_land_in_the_stream_as_the_socket_carries_them(tmp):
    with NatsServer() as ns:
        e = FleetEngine(tmp, "e1", ns.url).start()
        try:
            c = e.connect()
            c.call("session_open", session="build.prod")
            mid = start_monitor(c, "build.prod", crash_loop(3), "web")
            ending = c.wait_notification(lambda n: n["type"] == "exit", what="the exit")
            seen = [n for n in c.drain() if n["session"] == "build.prod"] + [ending]
            last = seen[-1]["seq"]
            vigiltest.wait_for(lambda: e.nats()["acknowledged"] >= last,
                               "the engine's notifications acknowledged", 30)
            msgs = stream_messages(ns.url, "vigil.e1.build%2Eprod.n")
            assert [m[1]["seq"] for m in msgs] == [n["seq"] for n in seen], (msgs, seen)
            for (hdrs, data), n in zip(msgs, seen):
                assert data == n, (data, n)
                assert "Nats-Msg-Id: %s:build.prod:%d" % (n["epoch"], n["seq"]) in hdrs, hdrs
                assert "Vigil-Engine: e1" in hdrs and "Vigil-Session: build.prod" in hdrs
                assert "Vigil-Seq: %d" % n["seq"] in hdrs and "Vigil-Epoch: %s" % n["epoch"] in hdrs
            info = e.nats()
            assert info["state"] == "connected" and info["engine"] == "e1", info
            assert info["published"] == len(seen) and info["retries"] == 0, info
            # A gateway reads them typed, in order.
            sub = FleetSubscriber(ns.url, "t1", engine="e1", session="build.prod")
            got = []
            while len(got) < len(seen):
                n = sub.next(timeout=10)
                assert n is not None, "the gateway got %d of %d" % (len(got), len(seen))
                got.append((n.seq, n.text))
                n.ack()
            sub.close()
            assert got == [(n["seq"], n["text"]) for n in seen]
        finally:
            e.stop()


def test_a_server_that_refuses_stops_the_start(tmp):
    # No JetStream.
    with NatsServer(jetstream=False) as ns:
        e = FleetEngine(tmp, "nojs", ns.url).start(wait=False)
        rc = e.proc.wait(60)
        assert rc == 1, (rc, e.log()[-2000:])
        assert "has no JetStream" in e.log(), e.log()[-2000:]
    # A stream of that name that does not take the engines' subjects.
    with NatsServer() as ns:
        conn = NatsConnection.connect(ns.url)
        JetStream(conn).stream_create("VIGIL", ["other.>"])
        conn.close()
        e = FleetEngine(tmp, "wrong", ns.url).start(wait=False)
        rc = e.proc.wait(60)
        log = e.log()
        assert rc == 1, (rc, log[-2000:])
        assert "the stream VIGIL exists" in log and "other.>" in log and "vigil.*.*.n" in log, \
            log[-2000:]


def test_an_unreachable_server_is_waited_for(tmp):
    port = free_port()
    url = "nats://127.0.0.1:%d" % port
    e = FleetEngine(tmp, "e1", url, config=fleet_config(nats={"connect_timeout_ms": 200})).start()
    ns = None
    try:
        info = e.nats()
        assert info["state"] == "disconnected" and info["last_error"], info
        c = e.connect()
        c.call("session_open", session="s1")
        start_monitor(c, "s1", crash_loop(3), "web")
        last = c.wait_notification(lambda n: n["type"] == "exit", what="the exit")["seq"]
        assert e.nats()["acknowledged"] == 0
        ns = NatsServer()
        ns.port = port  # the port the engine was told, free until now
        ns.start()
        vigiltest.wait_for(lambda: e.nats()["acknowledged"] >= last,
                           "the waiting notifications published once the server is up", 60)
        msgs = stream_messages(url, "vigil.e1.s1.n")
        assert [m[1]["seq"] for m in msgs] == list(range(1, last + 1)), msgs
    finally:
        e.stop()
        if ns:
            ns.remove()


def test_a_forged_message_id_is_found_out(tmp):
    with NatsServer() as ns:
        e = FleetEngine(tmp, "e1", ns.url).start()
        try:
            c = e.connect()
            c.call("session_open", session="s1")
            epoch = c.call("api_info")["epoch"]
            # Someone else publishes seq 1's id first.
            conn = NatsConnection.connect(ns.url)
            ack = JetStream(conn).publish("vigil.e1.s1.n", b"forged",
                                          headers={"Nats-Msg-Id": "%s:s1:1" % epoch})
            conn.close()
            assert ack.seq >= 1
            start_monitor(c, "s1", crash_loop(1), "web")
            last = c.wait_notification(lambda n: n["type"] == "exit", what="the exit")["seq"]
            vigiltest.wait_for(lambda: e.nats()["acknowledged"] >= last, "acknowledged", 30)
            info = e.nats()
            assert info["foreign_ids"] == 1, info
            e_log = e.log()
            assert "published by someone else" in e_log, e_log[-2000:]
            seqs = [m[1]["seq"] for m in stream_messages(ns.url, "vigil.e1.s1.n")
                    if isinstance(m[1], dict)]
            # Every real one is in the stream once. Seq 1, sent again under
            # a new id, lands behind those its session's window had sent
            # meanwhile (docs/fleet.md section 2): readers put it first.
            assert sorted(seqs) == list(range(1, last + 1)), seqs
        finally:
            e.stop()


def test_a_sessions_window_goes_out_at_once_and_again_in_order(tmp):
    """docs/fleet.md section 2: a session's notifications go out without
    waiting for the acknowledgment of the one before (up to
    nats.max_in_flight), one at a time with 1, and a window not
    acknowledged in time goes again in order, its copies dropped."""
    with NatsServer() as ns:
        patient = {"ack_timeout_ms": 600000}
        engines = [
            FleetEngine(tmp, "wide", ns.url, config=fleet_config(nats=patient)),
            FleetEngine(tmp, "narrow", ns.url,
                        config=fleet_config(nats=dict(patient, max_in_flight=1))),
            FleetEngine(tmp, "hasty", ns.url, config=fleet_config(
                nats={"ack_timeout_ms": 300, "retry_min_ms": 50, "retry_max_ms": 200})),
        ]
        stopped = False
        try:
            for e in engines:
                e.start()
            # The server stops answering (its connections stay up): nothing
            # is acknowledged while each session gets five notifications.
            os.kill(ns.proc.pid, signal.SIGSTOP)
            stopped = True
            last = {}
            for e in engines:
                c = e.connect()
                c.call("session_open", session="s1")
                start_monitor(c, "s1", crash_loop(4, gap="0.3"), "web")
                last[e.name] = c.wait_notification(lambda n: n["type"] == "exit",
                                                   what="the exit")["seq"]
            assert last["wide"] == 5, last
            wide, narrow = engines[0], engines[1]
            vigiltest.wait_for(lambda: wide.nats()["published"] == last["wide"],
                               "the whole window sent without an acknowledgment", 30)
            info = wide.nats()
            assert info["in_flight"] == last["wide"] and info["acknowledged"] == 0, info
            info = narrow.nats()
            assert info["published"] == 1 and info["in_flight"] == 1, info
            hasty = engines[2]
            vigiltest.wait_for(lambda: hasty.nats()["timeouts"] >= 2,
                               "the hasty engine to time out and send its window again", 30)
            os.kill(ns.proc.pid, signal.SIGCONT)
            stopped = False
            for e in engines:
                try:
                    vigiltest.wait_for(lambda: e.nats()["acknowledged"] >= last[e.name],
                                       "%s's notifications acknowledged" % e.name, 60)
                except AssertionError as why:
                    raise AssertionError("%s: %s" % (why, e.nats())) from None
                seqs = [m[1]["seq"] for m in stream_messages(ns.url, "vigil.%s.s1.n" % e.name)]
                assert seqs == list(range(1, last[e.name] + 1)), (e.name, seqs)
            # Each send again is answered: a duplicate, or too late (its
            # first send's answer came first).
            vigiltest.wait_for(lambda: hasty.nats()["duplicates"] + hasty.nats()["stale_answers"]
                               == hasty.nats()["retries"], "every send again answered", 30)
            assert hasty.nats()["retries"] > 0, hasty.nats()
            assert wide.nats()["retries"] == 0 and narrow.nats()["retries"] == 0
        finally:
            if stopped:
                os.kill(ns.proc.pid, signal.SIGCONT)
            for e in engines:
                if e.proc:
                    e.stop()


# The accounts of docs/fleet.md section 5: an engine's user, a gateway
# allowed to read session s1 of engine e1, and one allowed only s2.
ACCOUNTS = """
accounts: {
  FLEET: {
    jetstream: enabled
    users: [
      { user: e1, password: e1pw, permissions: {
          publish: ["vigil.e1.>", "$JS.API.STREAM.INFO.VIGIL", "$JS.API.STREAM.CREATE.VIGIL"],
          subscribe: ["_INBOX.>", "vigil.e1.rpc", "vigil.e1.*.rpc"],
          allow_responses: true } },
      { user: rqa, password: rqapw, permissions: {
          publish: ["vigil.e1.s1.rpc"], subscribe: ["_INBOX_rqa.>"] } },
      { user: gwa, password: gwapw, permissions: {
          publish: ["$JS.API.CONSUMER.CREATE.VIGIL.gwa.vigil.e1.s1.n",
                    "$JS.API.CONSUMER.INFO.VIGIL.gwa", "$JS.API.CONSUMER.MSG.NEXT.VIGIL.gwa",
                    "$JS.ACK.VIGIL.gwa.>"],
          subscribe: ["_INBOX_gwa.>"] } },
      { user: gwb, password: gwbpw, permissions: {
          publish: ["$JS.API.CONSUMER.CREATE.VIGIL.gwb.vigil.e1.s2.n",
                    "$JS.API.CONSUMER.INFO.VIGIL.gwb", "$JS.API.CONSUMER.MSG.NEXT.VIGIL.gwb",
                    "$JS.ACK.VIGIL.gwb.>"],
          subscribe: ["_INBOX_gwb.>"] } },
    ]
  }
}
"""


def test_a_user_without_rights_is_refused_a_sessions_subjects(tmp):
    with NatsServer(config=ACCOUNTS) as ns:
        e = FleetEngine(tmp, "e1", ns.url_for("e1", "e1pw")).start()
        try:
            c = e.connect()
            c.call("session_open", session="s1")
            start_monitor(c, "s1", crash_loop(2), "web")
            last = c.wait_notification(lambda n: n["type"] == "exit", what="the exit")["seq"]
            vigiltest.wait_for(lambda: e.nats()["acknowledged"] >= last, "acknowledged", 30)
            info = e.nats()
            assert "e1pw" not in info["url"], info
            assert "e1pw" not in e.log()
            # The gateway allowed s1 reads it.
            sub = FleetSubscriber(ns.url_for("gwa", "gwapw"), "gwa", engine="e1", session="s1",
                                  inbox_prefix="_INBOX_gwa")
            seqs = []
            while len(seqs) < last:
                n = sub.next(timeout=10)
                assert n is not None, "gwa got %s of %d" % (seqs, last)
                seqs.append(n.seq)
                n.ack()
            sub.close()
            assert seqs == list(range(1, last + 1)), seqs
            # The one allowed only s2 is refused s1, by the server.
            try:
                FleetSubscriber(ns.url_for("gwb", "gwbpw"), "gwb", engine="e1", session="s1",
                                inbox_prefix="_INBOX_gwb")
            except FleetPermissionError as err:
                assert "vigil.e1.s1.n" in str(err), err
            else:
                raise AssertionError("gwb was not refused session s1's subjects")
            # Nor listen where gwa's pulls deliver s1's messages.
            conn = NatsConnection.connect(ns.url_for("gwb", "gwbpw"), inbox_prefix="_INBOX_gwb.x")
            try:
                conn.subscribe("_INBOX_gwa.>")
                conn.flush(10)
            except Exception as err:
                assert "ermission" in str(err) and "_INBOX_gwa.>" in str(err), err
            else:
                raise AssertionError("gwb may subscribe to gwa's inbox")
            finally:
                conn.close()
            # And it may not publish into an engine's subjects either.
            conn = NatsConnection.connect(ns.url_for("gwb", "gwbpw"))
            try:
                JetStream(conn).publish("vigil.e1.s1.n", b"forged")
            except Exception as err:
                assert "ermission" in str(err) or "no reply" in str(err), err
            else:
                raise AssertionError("gwb published into engine e1's subjects")
            finally:
                conn.close()
            # A requester allowed s1's requests, with an inbox of its own:
            # the engine answers it (allow_responses), and only on s1.
            rq = Client.connect_nats(ns.url_for("rqa", "rqapw"), "e1", session="s1",
                                     inbox_prefix="_INBOX_rqa", call_timeout=30)
            try:
                mid = rq.call("monitor_start", argv=["sleep", "600"], label="remote")["monitor_id"]
                listed = c.call("monitor_list", session="s1")["monitors"]
                assert [m["label"] for m in listed if m["monitor_id"] == mid] == ["remote"], listed
                rq.call("monitor_stop", monitor_id=mid)
            finally:
                rq.close()
        finally:
            e.stop()


def read_model(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


class Gateway:
    def __init__(self, url, durable, model):
        self.proc = subprocess.Popen([PYTHON, os.path.join(HERE, "gateway.py"), url, durable,
                                      model], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.proc.stdout.readline()
        assert line.strip() == b"ready", (line, self.proc.stderr.read())

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def test_exactly_once_through_a_gateway_an_engine_and_the_broker_dying(tmp):
    model = os.path.join(tmp, "model.jsonl")
    open(model, "w").close()
    sessions = ["s1", "web.dev"]
    ns = NatsServer()
    ns.start()
    engines = [FleetEngine(tmp, "e%d" % i, ns.url) for i in (1, 2, 3)]
    gateways = []
    try:
        for e in engines:
            e.start()
            c = e.connect()
            for s in sessions:
                c.call("session_open", session=s)
                for m in range(2):
                    start_monitor(c, s, crash_loop(40, gap="0.1", word="%s-%d" % (e.name, m)),
                                  "m%d" % m)
        count = lambda: len(read_model(model))  # noqa: E731
        gateways.append(Gateway(ns.url, "gw", model))
        vigiltest.wait_for(lambda: count() >= 40, "the first gateway to inject 40", 60)
        # The first gateway dies mid-stream; a second takes the durable over.
        gateways[0].kill()
        gateways.append(Gateway(ns.url, "gw", model))
        at = count()
        vigiltest.wait_for(lambda: count() >= at + 30, "the second gateway to take over", 60)
        # An engine dies (SIGKILL) and comes back on its state directory.
        engines[1].kill()
        engines[1].start()
        at = count()
        vigiltest.wait_for(lambda: count() >= at + 20, "injection after the engine's restart", 60)
        # The broker restarts (same store).
        ns.restart()
        at = count()
        vigiltest.wait_for(lambda: count() >= at + 20, "injection after the broker's restart", 90)
        # The second gateway dies; the first comes back.
        gateways[1].kill()
        gateways.append(Gateway(ns.url, "gw", model))

        def everything_in():
            last = {}
            for e in engines:
                c = e.connect()
                try:
                    for s in sessions:
                        last[(e.name, s)] = c.call("session_open", session=s)["next_seq"] - 1
                        if c.call("monitor_list", session=s)["monitors"]:
                            return False
                finally:
                    c.close()
            have = {}
            for rec in read_model(model):
                have[(rec["engine"], rec["session"])] = rec["seq"]
            return all(have.get(k, 0) >= v for k, v in last.items()) and last

        vigiltest.wait_for(everything_in, "every notification of every session injected", 180)
        last = everything_in()
        recs = read_model(model)
        for (engine, s), top in last.items():
            seqs = [r["seq"] for r in recs if r["engine"] == engine and r["session"] == s]
            assert seqs == list(range(1, top + 1)), \
                "%s/%s: the model holds %s, want 1..%d once each, in order" % (engine, s, seqs, top)
            endings = [r for r in recs if r["engine"] == engine and r["session"] == s
                       and r["type"] != "output"]
            assert len(endings) == 2, (engine, s, endings)
        pids = {r["pid"] for r in recs}
        assert len(pids) == 3, "three gateway runs injected: %s" % pids
        print("  fault run: %d notifications, %d sessions, 0 lost, 0 twice; engine e2 "
              "retries %d, duplicates %d" % (len(recs), len(last), engines[1].nats()["retries"],
                                             engines[1].nats()["duplicates"]), flush=True)
    finally:
        for g in gateways:
            g.kill()
        for e in engines:
            try:
                e.stop()
            except Exception:
                pass
        ns.remove()


if __name__ == "__main__":
    sys.exit(vigiltest.run_plain_tests([
        test_notifications_land_in_the_stream_as_the_socket_carries_them,
        test_a_server_that_refuses_stops_the_start,
        test_an_unreachable_server_is_waited_for,
        test_a_forged_message_id_is_found_out,
        test_a_sessions_window_goes_out_at_once_and_again_in_order,
        test_a_user_without_rights_is_refused_a_sessions_subjects,
        test_exactly_once_through_a_gateway_an_engine_and_the_broker_dying,
    ], prefix="vigil-fleet-"))
