"""A client on the engine's socket: the connection and its checks, and the
point of sessions: a gateway that goes away and comes back (the same client
reconnecting, or a new process with the cursor it stored) gets exactly the
notifications it missed, in order, none twice."""

import os
import socket
import unittest

from support import EVENT_TIMEOUT_S, Daemon, workdir, take_until_ending

import vigil_client
from vigil_client import Client

# A child that prints "one", then blocks until the test writes a line into
# its fifo, then prints "two" and "three" and ends: what it prints after the
# gate is what a disconnected gateway misses.
GATED = "echo one; read go < \"$0\"; echo two; echo three"


class SocketClient(unittest.TestCase):
    def setUp(self):
        self.work = workdir(self)
        self.daemon = Daemon(self.work)
        self.addCleanup(self.daemon.stop)
        self.fifo = os.path.join(self.work.path, "gate")
        os.mkfifo(self.fifo)

    def connect(self) -> Client:
        c = Client.connect(self.daemon.socket, wait_s=EVENT_TIMEOUT_S)
        self.addCleanup(c.close)
        return c

    def open_gate(self):
        with open(self.fifo, "w") as f:    # blocks until the child opens its end
            f.write("go\n")

    def start_gated(self, ses) -> str:
        mon = ses.monitor_start(argv=["sh", "-c", GATED, self.fifo], patterns=[], label="gated")
        first = ses.wait(EVENT_TIMEOUT_S)
        self.assertEqual([l.text for l in first.lines], ["one"])
        return mon["monitor_id"]

    def missed_while_away(self, monitor_id):
        """Lets the child finish while the gateway is away, and returns once
        the engine has pushed everything (to an observer attached to the
        session, so that the resume replays what it keeps)."""
        observer = self.connect()
        watch = observer.session("gw")
        self.open_gate()
        seen = take_until_ending(watch, monitor_id)
        observer.close()
        return seen

    def check_resumed(self, ses, cursor, seen):
        got = take_until_ending(ses, seen[-1].monitor_id)
        self.assertEqual([n.seq for n in got], list(range(cursor + 1, seen[-1].seq + 1)))
        self.assertEqual([n.seq for n in got], [n.seq for n in seen])
        self.assertEqual([l.text for n in got if n.type == "output" for l in n.lines],
                         ["two", "three"])
        self.assertIsNone(ses.wait(0), "more than was missed")
        self.assertEqual(ses.last_seq, got[-1].seq)

    def test_a_start_runs_in_the_callers_directory(self):
        # The engine's working directory is the one the test began in; the
        # caller then moves to a project of its own, as a person's script
        # does: `make test` from a project must run in the project.
        engine_dir = os.path.realpath(os.getcwd())
        project = os.path.realpath(os.path.join(self.work.path, "project"))
        os.mkdir(project)
        os.chdir(project)
        self.addCleanup(os.chdir, engine_dir)
        c = self.connect()
        ses = c.session("cwd")
        ran = ses.process_run(argv=["sh", "-c", "pwd -P"])
        self.assertEqual(ran["stdout_summary"].strip(), project, ran)
        mon = ses.monitor_start(argv=["sh", "-c", "pwd -P"], patterns=[], label="where")
        said = [l.text for n in take_until_ending(ses, mon["monitor_id"]) for l in n.lines]
        self.assertIn(project, said)
        # "." asks for the engine's own.
        ran = ses.process_run(argv=["sh", "-c", "pwd -P"], cwd=".")
        self.assertEqual(ran["stdout_summary"].strip(), engine_dir, ran)

    def test_connect_default_path_and_server_check(self):
        os.environ["VIGIL_SOCKET"] = self.daemon.socket
        try:
            self.assertEqual(vigil_client.default_socket_path(), self.daemon.socket)
            c = Client.connect(wait_s=EVENT_TIMEOUT_S)
            self.addCleanup(c.close)
        finally:
            del os.environ["VIGIL_SOCKET"]
        self.assertEqual(c.ping()["version"], "0.1.0")
        self.assertEqual(vigil_client.endpoint.peer_uid(c._transport.sock), os.geteuid())
        with self.assertRaises(vigil_client.ConnectionClosed) as err:
            Client.connect(os.path.join(self.work.path, "nothing.sock"))
        self.assertIn("cannot connect to the engine at", str(err.exception))
        with self.assertRaises(ValueError) as err:
            Client.connect("/" + "x" * 200)
        self.assertIn("socket path must be 1..107 bytes, got 201", str(err.exception))

    def test_a_new_gateway_resumes_with_the_cursor_it_stored(self):
        first = self.connect()
        ses = first.session("gw")
        monitor_id = self.start_gated(ses)
        stored = ses.last_seq           # what a gateway would persist
        first.close()                   # the gateway goes away
        seen = self.missed_while_away(monitor_id)
        again = self.connect()          # a new gateway process
        resumed = again.session("gw", last_seq=stored)
        self.assertTrue(resumed.resumed)
        self.check_resumed(resumed, stored, seen)

    def test_reconnect_resumes_every_session(self):
        client = self.connect()
        ses = client.session("gw")
        monitor_id = self.start_gated(ses)
        cursor = ses.last_seq
        # The connection breaks under the client (as when the engine closes it).
        client._transport.sock.shutdown(socket.SHUT_RDWR)
        with self.assertRaises(vigil_client.ConnectionClosed):
            ses.wait(EVENT_TIMEOUT_S)
        seen = self.missed_while_away(monitor_id)
        client.reconnect(wait_s=EVENT_TIMEOUT_S)
        self.check_resumed(ses, cursor, seen)

    def test_without_auto_ack_what_was_not_acked_comes_again(self):
        client = self.connect()
        ses = client.session("gw", auto_ack=False)
        mon = ses.monitor_start(argv=["sh", "-c", "echo a; echo b >&2"], patterns=[],
                                incidents=False)
        got = take_until_ending(ses, mon["monitor_id"])
        self.assertIsNone(ses.last_seq)
        ses.ack(got[0])                 # only the first was handled
        client.reconnect(wait_s=EVENT_TIMEOUT_S)
        again = take_until_ending(ses, mon["monitor_id"])
        self.assertEqual([n.seq for n in again], [n.seq for n in got[1:]])

    def test_a_full_backlog_closes_the_connection_and_a_resume_loses_nothing(self):
        client = Client.connect(self.daemon.socket, wait_s=EVENT_TIMEOUT_S, max_backlog=3)
        self.addCleanup(client.close)
        ses = client.session("gw")
        ses.busy()
        for word in ("a", "b", "c"):        # each: an output and an exit notification
            mon = ses.monitor_start(argv=["echo", word], patterns=[])
            ses.monitor_wait(mon["monitor_id"], timeout_ms=int(EVENT_TIMEOUT_S * 1000))
        # Going idle releases all six at once, more than the client holds.
        with self.assertRaises(vigil_client.ConnectionClosed) as cm:
            ses.idle()
        self.assertIn("notifications were waiting to be taken (max_backlog 3)", str(cm.exception))
        taken = [ses.wait(0) for _ in range(3)]
        self.assertEqual([n.seq for n in taken], [1, 2, 3])
        with self.assertRaises(vigil_client.ConnectionClosed):
            ses.wait(0)
        client.reconnect(wait_s=EVENT_TIMEOUT_S)
        rest = take_until_ending(ses, mon["monitor_id"])
        self.assertEqual([n.seq for n in rest], [4, 5, 6])
        self.assertEqual([l.text for n in taken + rest if n.type == "output" for l in n.lines],
                         ["a", "b", "c"])


if __name__ == "__main__":
    unittest.main()
