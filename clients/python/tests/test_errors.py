"""The engine's refusals surface as VigilError with the protocol's code,
name and message, as the subclass of that code, and change nothing."""

import unittest

from support import EVENT_TIMEOUT_S, workdir, config, spawn

import vigil_client
from vigil_client import ERROR_CODES, VigilError


class Errors(unittest.TestCase):
    def setUp(self):
        allowed = config()["monitor"]["allowed_commands"] + ["/nonexistent/program"]
        self.work = workdir(self, config(allowed_commands=allowed))
        self.engine = spawn(self.work)
        self.addCleanup(self.engine.close)

    def refused(self, name, cls, fn, *args, **kwargs):
        with self.assertRaises(VigilError) as cm:
            fn(*args, **kwargs)
        err = cm.exception
        self.assertIsInstance(err, cls)
        self.assertEqual((err.code, err.name), (ERROR_CODES[name], name))
        self.assertEqual(cls.code, ERROR_CODES[name])
        self.assertTrue(err.message.startswith(name + ": "), err.message)
        self.assertEqual(str(err), err.message)
        return err

    def test_each_code(self):
        e = self.engine
        err = self.refused("invalid_params", vigil_client.InvalidParams, e.monitor_start,
                           argv=["sh"], timeout_ms=0)
        self.assertEqual(err.method, "monitor_start")
        self.assertIn("timeout_ms must be 1..", err.message)
        self.refused("not_found", vigil_client.NotFound, e.monitor_status, "mon_zzzzzzzzzzzz")
        self.refused("denied", vigil_client.Denied, e.monitor_start, argv=["rm", "-rf", "/nope"])
        self.refused("invalid_pattern", vigil_client.InvalidPattern, e.monitor_start,
                     argv=["sh"], patterns=["(unclosed"])
        self.refused("command_not_found", vigil_client.CommandNotFound, e.monitor_start,
                     argv=["/nonexistent/program"])
        self.refused("unknown_method", vigil_client.UnknownMethod, e.call, "no_such_method")
        self.refused("limit_exceeded", vigil_client.LimitExceeded, e.monitor_start,
                     argv=["sh"], patterns=["x"] * 33)
        done = e.monitor_start(argv=["sh", "-c", "exit 3"])
        e.monitor_wait(done["monitor_id"], timeout_ms=int(EVENT_TIMEOUT_S * 1000))
        self.refused("already_exited", vigil_client.AlreadyExited, e.monitor_stop,
                     done["monitor_id"])
        # None of the refusals started anything.
        listed = e.monitor_list(include_exited=True)
        self.assertEqual([m["monitor_id"] for m in listed["monitors"]], [done["monitor_id"]])
        # The connection is still good.
        self.assertEqual(e.ping()["api_level"], 1)

    def test_a_call_sent_as_notification_reports_through_engine_errors(self):
        self.engine.notify("no_such_method")
        self.engine.ping()      # answered after the notification was handled
        err = self.engine.engine_errors.popleft()
        self.assertIsInstance(err, vigil_client.UnknownMethod)
        self.assertIsNone(err.method)

    def test_client_side_bounds_name_the_argument(self):
        with self.assertRaises(ValueError) as cm:
            self.engine.session("gw", last_seq=-1)
        self.assertIn("last_seq must be 0..9007199254740991, got -1", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
