"""Parsing a notification map: every protocol key to its field, lines and
incidents typed, and keys a newer engine adds kept rather than dropped."""

import unittest

import support  # noqa: F401  (puts this checkout's package first on the path)
from vigil_client import Incident, Line, Notification


class Parsing(unittest.TestCase):
    def test_known_keys_typed_unknown_kept(self):
        m = {"session": "gw", "seq": 7, "type": "exit", "mode": "live_safe", "monitor_id": "mon_x",
             "label": "web", "lines": [{"seq": 4, "stream": "stderr", "text": "panic: x",
                                        "pattern": 1, "truncated": False, "colour": "red"}],
             "incidents": [{"id": 2, "kind": "crash", "fingerprint": "ab", "repeats": 3}],
             "state": "exited", "exit_code": 2, "epoch": "00ff", "text": "<<<...>>>\n",
             "from_the_future": {"a": 1}}
        n = Notification.from_map(m)
        self.assertEqual((n.session, n.seq, n.type, n.mode, n.exit_code), ("gw", 7, "exit", "live_safe", 2))
        self.assertTrue(n.is_ending and n.is_live_safe)
        self.assertEqual(n.lines, [Line(4, "stderr", "panic: x", 1, False, {"colour": "red"})])
        self.assertEqual(n.incidents[0], Incident(id=2, kind="crash", fingerprint="ab", repeats=3))
        self.assertEqual(n.extra, {"from_the_future": {"a": 1}})
        self.assertEqual(n.raw, m)

    def test_a_malformed_field_does_not_break_parsing(self):
        n = Notification.from_map({"seq": 1, "type": "output", "lines": "not a list"})
        self.assertEqual((n.seq, n.lines), (1, []))


if __name__ == "__main__":
    unittest.main()
