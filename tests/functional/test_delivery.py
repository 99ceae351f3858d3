"""Delivery at scale and the ways a monitor ends, through the real vigild:
50 concurrent monitors, a flood auto-stopped as overloaded, the idle timeout
and the runtime cap."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import HELPERS, run_tests, with_config

TICK = os.path.join(HELPERS, "child_tick")


@with_config(monitor={"max_monitors_per_session": 16})
def test_fifty_concurrent_monitors_each_deliver_their_exit(e):
    # 50 monitors over 4 sessions (the per-session cap is at most 16).
    ids = {}
    for i in range(50):
        session = "s%d" % (i % 4)
        if i < 4:
            e.call("session_open", session=session)
        # patterns=[]: no matching, every line delivered (what this test
        # counts), whatever the built-in crash patterns would match.
        r = e.main.call("monitor_start", session=session, patterns=[],
                        command="sh -c 'echo started %d; sleep 0.5; echo done %d'" % (i, i))
        ids[r["monitor_id"]] = i
    endings = {}
    for mid in ids:
        end = e.main.wait_ending(mid, timeout=60)
        endings[mid] = end
    assert len(endings) == 50
    assert all(n["type"] == "exit" and n["exit_code"] == 0 for n in endings.values())
    # Every monitor's output was delivered before its own ending.
    rest = e.main.drain()
    for mid, end in endings.items():
        outs = [n for n in rest if n["monitor_id"] == mid and n["type"] == "output"]
        texts = [l["text"] for n in outs for l in n["lines"]]
        assert texts == ["started %d" % ids[mid], "done %d" % ids[mid]], (mid, texts)
        assert all(n["seq"] < end["seq"] for n in outs)


@with_config(rate_limit={"max_notifications": 1, "window_ms": 1000, "overload_ms": 3000},
             monitor={"flush_interval_ms": 50})
def test_flood_is_auto_stopped_as_overloaded(e):
    # incidents=False: the subject is the rate limit's overload rule for
    # matching lines. With incidents on, "tick 1", "tick 2", ... share one
    # fingerprint (the numbers are normalised), so every tick after the first
    # is a coalesced repeat, which by design never spends the rate limit's
    # budget, and the flood would never overload (docs/incidents.md section 3).
    mid = e.call("monitor_start", argv=[TICK, "20"], patterns=["^tick"],
                 incidents=False)["monitor_id"]
    end = e.main.wait_ending(mid, timeout=60)
    assert end["type"] == "overload" and end["state"] == "overloaded", end
    assert end["suppressed"] > 0 and "withheld" in end["reason"]
    outputs = [n for n in e.main.drain() if n["monitor_id"] == mid and n["type"] == "output"]
    assert 1 <= len(outputs) <= 5  # 1 per second for about 3 s
    status = e.call("monitor_status", monitor_id=mid)
    assert status["state"] == "overloaded" and status["counters"]["suppressed"] > 0
    events = [x["type"] for x in e.call("monitor_events", monitor_id=mid)["events"]]
    assert events[-1] == "overload" and "exited" not in events


def test_idle_timeout_and_runtime_cap(e):
    idle = e.call("monitor_start", command="sh -c 'echo hi; exec sleep 60'",
                  idle_timeout_ms=300)["monitor_id"]
    capped = e.call("monitor_start", command="sh -c 'echo hi; exec sleep 60'",
                    timeout_ms=400)["monitor_id"]
    a = e.main.wait_ending(idle)
    b = e.main.wait_ending(capped)
    assert a["type"] == "idle_timeout" and a["state"] == "idle_timeout"
    assert "no output for 300 ms" in a["reason"]
    assert b["type"] == "timed_out" and b["state"] == "timed_out"
    assert "400 ms" in b["reason"]
    assert "idle timeout" in a["text"] or "idle_timeout" in a["text"]


if __name__ == "__main__":
    sys.exit(run_tests([
        test_fifty_concurrent_monitors_each_deliver_their_exit,
        test_flood_is_auto_stopped_as_overloaded,
        test_idle_timeout_and_runtime_cap,
    ]))
