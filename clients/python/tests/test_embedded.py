"""An embedded engine (Engine.spawn: vigild --stdio as a child): a start,
its notifications as typed objects, busy/idle holding, monitor_wait, and
closing the engine ending what it started."""

import os
import unittest

from support import EVENT_TIMEOUT_S, PYTHON, VIGILD, workdir, spawn, take_until_ending

import vigil_client
from vigil_client import Engine, Line, Notification


def alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class EmbeddedEngine(unittest.TestCase):
    def setUp(self):
        self.work = workdir(self)

    def test_start_notify_stop(self):
        with spawn(self.work) as engine:
            self.assertEqual(engine.ping()["api_level"], 1)
            ses = engine.session("embedded")
            self.assertEqual((ses.name, ses.resumed, ses.next_seq), ("embedded", False, 1))
            started = ses.monitor_start(
                argv=[PYTHON, "-c", "print('ready', flush=True); import sys; print('Error: boom', file=sys.stderr)"],
                label="app", patterns=["^Error:"], incidents=False)
            got = take_until_ending(ses, started["monitor_id"])
            self.assertEqual([n.type for n in got], ["output", "exit"])
            out, end = got
            self.assertIsInstance(out, Notification)
            self.assertEqual((out.session, out.seq, out.monitor_id, out.label, out.mode),
                             ("embedded", 1, started["monitor_id"], "app", "idle"))
            self.assertEqual(out.lines, [Line(seq=2, stream="stderr", text="Error: boom",
                                              pattern=0, truncated=False)])
            self.assertIn("[stderr seq=2] Error: boom", out.text)
            self.assertEqual((out.kind, out.delivery), ("output", "idle"))
            self.assertTrue(end.is_ending and not out.is_ending)
            self.assertEqual((end.seq, end.state, end.exit_code), (2, "exited", 0))
            self.assertEqual(end.epoch, ses.epoch)
            self.assertEqual(ses.last_seq, 2, "taking a notification acks it (auto_ack)")

            # A long runner, stopped: monitor_wait sees the ending.
            sleeper = ses.monitor_start(argv=["sh", "-c", "echo up; exec sleep 600"], patterns=[])
            self.assertEqual(ses.wait(EVENT_TIMEOUT_S).lines[0].text, "up")
            stopped = ses.monitor_stop(sleeper["monitor_id"])
            self.assertEqual((stopped["status"], stopped["state"]), ("stopped", "stopped"))
            waited = ses.monitor_wait(sleeper["monitor_id"], for_="exit", timeout_ms=10000)
            self.assertEqual((waited["timed_out"], waited["event"]["type"]), (False, "stopped"))
            self.assertEqual(ses.wait(EVENT_TIMEOUT_S).type, "stopped")
        self.assertEqual(engine.process.returncode, 0)

    def test_idle_notifications_wait_for_the_turn_to_end(self):
        with spawn(self.work) as engine:
            ses = engine.session("turns")
            self.assertEqual(ses.busy()["state"], "busy")
            mon = ses.monitor_start(argv=["echo", "built"], patterns=[])
            done = ses.monitor_wait(mon["monitor_id"], for_="exit", timeout_ms=int(EVENT_TIMEOUT_S * 1000))
            self.assertEqual(done["state"], "exited")
            self.assertIsNone(ses.wait(0), "an idle notification came during the turn")
            self.assertEqual(ses.idle()["delivered"], 2)
            # Released before the answer to session_state: already here.
            self.assertEqual([n.type for n in (ses.wait(0), ses.wait(0))], ["output", "exit"])

    def test_a_model_cursor_gives_each_notification_once(self):
        with spawn(self.work) as engine:
            ses = engine.session("cursors")
            mon = ses.monitor_start(argv=["echo", "built"], patterns=[])
            take_until_ending(ses, mon["monitor_id"])  # seqs 1 and 2
            took = ses.cursor_take("model", limit=1)
            self.assertEqual([n["seq"] for n in took["notifications"]], [1])
            self.assertIn("built", took["notifications"][0]["text"])
            self.assertEqual((took["cursor"], took["last_seq"], took["dropped"]), (1, 2, 0))
            self.assertEqual(ses.cursor_get("model"), {"cursor": 1, "last_seq": 2, "kept_from": 1})
            since = ses.notifications_since(0)
            self.assertEqual([n["seq"] for n in since["notifications"]], [1, 2])
            self.assertEqual(ses.cursor_advance("model", 2), {"cursor": 2})
            self.assertEqual(ses.cursor_take("model")["notifications"], [])
            # A take that waits is answered by the next notification.
            ses.monitor_start(argv=["echo", "again"], patterns=[])
            woken = ses.cursor_take("model", wait_ms=int(EVENT_TIMEOUT_S * 1000))
            self.assertEqual([n["seq"] for n in woken["notifications"]][:1], [3])
            with self.assertRaises(vigil_client.InvalidParams):
                ses.cursor_advance("model", 1 << 40)

    def test_closing_the_engine_ends_what_it_started(self):
        engine = spawn(self.work)
        mon = engine.monitor_start(argv=["sh", "-c", "echo up; exec sleep 600"], patterns=[])
        self.assertEqual(engine.wait(EVENT_TIMEOUT_S).lines[0].text, "up")
        self.assertTrue(alive(mon["pid"]))
        self.assertEqual(engine.close(), 0)
        self.assertFalse(alive(mon["pid"]), "the monitored process outlived its engine")
        with self.assertRaises(vigil_client.ConnectionClosed):
            engine.ping()

    def test_spawn_finds_vigild_on_path_and_reports_a_failed_start(self):
        env = dict(os.environ, PATH=os.path.dirname(VIGILD) + os.pathsep + os.environ["PATH"])
        env.pop("VIGIL_VIGILD", None)
        old = os.environ.copy()
        os.environ.clear()
        os.environ.update(env)
        try:
            self.assertEqual(vigil_client.find_vigild(), VIGILD)
        finally:
            os.environ.clear()
            os.environ.update(old)
        with self.assertRaises(FileNotFoundError) as err:
            vigil_client.find_vigild("vigild-not-installed-anywhere")
        self.assertIn("not found on PATH", str(err.exception))
        bad = os.path.join(self.work.path, "bad.lua")
        with open(bad, "w") as f:
            f.write("return { monitor = { max_patterns = 0 } }\n")
        with open(self.work.log_path, "ab") as log:
            with self.assertRaises(vigil_client.ConnectionClosed) as err:
                Engine.spawn(vigild=VIGILD, config=bad, stderr=log)
        self.assertIn("vigild exited with status 1", str(err.exception))


if __name__ == "__main__":
    unittest.main()
