#!/usr/bin/env python3
"""Fingerprints the agent can silence (docs/incidents.md section 10,
docs/protocol.md "incident_ignore").

What a user notices: once a known, benign incident is ignored, its later
occurrences never wake the agent, yet they are logged, counted and listed;
the ignore outlives an engine killed and restarted on the same state
directory; it ends at its expiry; and every bad argument, or a damaged
ignore file in the state directory, is refused with an error that names
what was wrong while the engine goes on.

Time is made deterministic by the bound, not by sleeping and hoping: the
expiry test waits until the wall clock is past the expiry the engine
reported, then starts the incident.
"""
import datetime
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_restart import kill_engine, restart_on, state_dir  # noqa: E402
from vigiltest import (default_config, expect_error, run_tests, socket_only,  # noqa: E402
                       with_config)

ABORT = "Error: request aborted (client closed the connection)"
STAGE = {"quiet_ms": 500, "max_open_ms": 5000}


def outputs(notes, mid):
    return [n for n in notes if n["monitor_id"] == mid and n["type"] == "output"]


def run_to_end(e, script, label="api"):
    """Starts script (sh) in the connection's session and waits for its
    ending; returns (monitor id, its output notifications, its ending)."""
    mid = e.call("monitor_start", command=script, shell=True, label=label)["monitor_id"]
    end = e.main.wait_ending(mid)
    return mid, outputs(e.main.drain(), mid), end


def first_abort(e):
    """Runs a program that prints the client-abort line once: returns its
    monitor id and the incident it was notified as."""
    mid, outs, _ = run_to_end(e, "echo '%s'" % ABORT, label="first")
    incs = [i for n in outs for i in n["incidents"]]
    assert len(incs) == 1 and incs[0]["lines"][0]["text"] == ABORT, outs
    return mid, incs[0]


def abort_three_times_then_crash(e):
    script = ("for i in 1 2 3; do echo '%s'; echo 'GET / 200'; sleep 0.7; done;"
              " echo 'TypeError: boom' >&2" % ABORT)
    return run_to_end(e, script, label="again")


@with_config(incident=STAGE)
def test_an_ignored_fingerprint_recurs_logged_counted_listed_never_notified(e):
    e.call("session_open", session="proj")
    first, inc = first_abort(e)
    got = e.call("incident_ignore", monitor_id=first, incident=inc["id"],
                 reason="benign: the client went away")
    assert got["ignored"]["fingerprint"] == inc["fingerprint"] and got["ignored"]["expires_at"] is not None, got
    mid, outs, end = abort_three_times_then_crash(e)
    # Only the TypeError woke the agent.
    texts = [i["lines"][0]["text"] for n in outs for i in n["incidents"]]
    assert texts == ["TypeError: boom"], [n["text"] for n in outs]
    assert all(ABORT not in n["text"] for n in outs)
    # (The ending's tail may quote the last lines, as for any exit; it
    # holds no incident of the ignored fingerprint.)
    assert inc["fingerprint"] not in [i["fingerprint"] for i in end["incidents"]], end["text"]
    counters = e.call("monitor_status", monitor_id=mid)["counters"]
    assert counters["ignored"] == 3 and counters["incidents"] == 4, counters
    # Logged: the event log and the incident history have them.
    events = [x for x in e.call("monitor_events", monitor_id=mid)["events"]
              if x["type"] == "incident" and x["reason"] == "ignored"]
    assert len(events) == 3 and all(x["fingerprint"] == inc["fingerprint"] for x in events), events
    rec = e.call("monitor_output", monitor_id=mid, incident=events[0]["incident"])
    assert rec["incident"]["fingerprint"] == inc["fingerprint"], rec
    # Listed, with its hits.
    listed = e.call("incident_ignored")["ignored"]
    assert [(x["fingerprint"], x["reason"], x["hits"]) for x in listed] == [
        (inc["fingerprint"], "benign: the client went away", 3)], listed
    assert listed[0]["last_hit_at"] is not None
    assert e.call("api_info")["counters"]["ignored"] >= 3
    # Un-ignored, it wakes the agent again.
    assert e.call("incident_unignore", fingerprint=inc["fingerprint"])["removed"] is True
    assert e.call("incident_ignored")["ignored"] == []
    _, outs, _ = run_to_end(e, "echo '%s'" % ABORT, label="after")
    assert [i["fingerprint"] for n in outs for i in n["incidents"]] == [inc["fingerprint"]]


@with_config(incident=STAGE)
def test_a_repeated_incident_says_how_to_silence_it_outside_the_frame(e):
    e.call("session_open", session="proj")
    # Once: no hint (nothing says it will come again).
    _, inc = first_abort(e)
    notes = e.main.drain()
    assert all("to silence" not in n["text"] for n in notes)
    # Three times: the summary of the repeats carries the hint, after the
    # frame's END marker (the engine speaking), naming the fingerprint only.
    script = "for i in 1 2 3; do echo '%s'; echo 'GET / 200'; sleep 0.7; done" % ABORT
    mid, outs, end = run_to_end(e, script, label="loop")
    hinted = [n for n in outs + [end] if "to silence" in n["text"]]
    assert hinted, [n["text"] for n in outs + [end]]
    for n in hinted:
        frame_end = n["text"].rindex(" END>>>")
        tail = n["text"][frame_end:].split("\n", 1)[1]
        assert tail == 'to silence incident %d: incident_ignore {fingerprint: "%s"}\n' % (
            [i for i in n["incidents"] if i["summary"] or i["repeats"]][0]["id"],
            inc["fingerprint"]), n["text"]
        assert "request aborted" not in tail


@socket_only
@with_config(incident=STAGE)
def test_ignores_are_per_session(e):
    e.call("session_open", session="proj")
    first, inc = first_abort(e)
    e.call("incident_ignore", fingerprint=inc["fingerprint"], **{"for": "always"})
    other = e.connect()
    other.call("session_open", session="elsewhere")
    assert other.call("incident_ignored", session="elsewhere")["ignored"] == []
    # Another session's monitor is not found from here.
    expect_error("not_found", other.call, "incident_ignore", session="elsewhere",
                 monitor_id=first, incident=inc["id"])


@socket_only
@with_config(incident=STAGE)
def test_an_ignore_outlives_a_sigkilled_engine(e):
    e.call("session_open", session="proj")
    _, inc = first_abort(e)
    e.call("incident_ignore", fingerprint=inc["fingerprint"], reason="known", **{"for": "always"})
    kill_engine(e)
    with restart_on(e, config=default_config(incident=STAGE)) as e2:
        e2.call("session_open", session="proj")
        listed = e2.call("incident_ignored")["ignored"]
        assert [(x["fingerprint"], x["reason"], x["expires_at"]) for x in listed] == [
            (inc["fingerprint"], "known", None)], listed
        mid, outs, _ = run_to_end(e2, "echo '%s'; echo 'RangeError: deep' >&2" % ABORT)
        texts = [i["lines"][0]["text"] for n in outs for i in n["incidents"]]
        assert texts == ["RangeError: deep"], texts
        assert e2.call("monitor_status", monitor_id=mid)["counters"]["ignored"] == 1


def parse_time(s):
    return datetime.datetime.fromisoformat(s).timestamp()


@with_config(incident=STAGE)
def test_an_ignore_ends_at_its_expiry(e):
    e.call("session_open", session="proj")
    _, inc = first_abort(e)
    got = e.call("incident_ignore", fingerprint=inc["fingerprint"], **{"for": 1000})
    expires = parse_time(got["ignored"]["expires_at"])
    # Wait for the bound the engine gave, not for a guess.
    while time.time() <= expires + 0.01:
        time.sleep(expires + 0.02 - time.time() if expires + 0.02 > time.time() else 0.01)
    _, outs, _ = run_to_end(e, "echo '%s'" % ABORT, label="late")
    assert [i["fingerprint"] for n in outs for i in n["incidents"]] == [inc["fingerprint"]], outs
    # Met after its expiry, the entry was dropped.
    assert e.call("incident_ignored")["ignored"] == []


@with_config(incident=STAGE)
def test_bad_ignores_are_refused_and_change_nothing(e):
    e.call("session_open", session="proj")
    first, inc = first_abort(e)
    fp = inc["fingerprint"]
    cases = [
        ({"fingerprint": "xyz"}, "fingerprint"),
        ({"fingerprint": fp[:-1]}, "fingerprint"),
        ({"fingerprint": fp, "reason": "x" * 300}, "reason"),
        ({"fingerprint": fp, "for": 31 * 86400 * 1000}, "for"),
        ({"fingerprint": fp, "for": 0}, "for"),
        ({"fingerprint": fp, "for": "sometimes"}, "for"),
        ({"monitor_id": first}, "incident"),
        ({}, "fingerprint"),
        ({"fingerprint": fp, "monitor_id": first, "incident": inc["id"]}, "fingerprint"),
    ]
    for args, named in cases:
        err = expect_error("invalid_params", e.call, "incident_ignore", **args)
        assert named in err.message, (args, err.message)
    expect_error("not_found", e.call, "incident_ignore", monitor_id="m-nope", incident=1)
    err = expect_error("not_found", e.call, "incident_ignore", monitor_id=first, incident=999999)
    assert "incident" in err.message, err.message
    expect_error("not_found", e.call, "incident_unignore", fingerprint=fp)
    assert e.call("incident_ignored")["ignored"] == []


@with_config(incident=dict(STAGE, ignore_max=2))
def test_the_list_is_bounded_and_refusals_counted(e):
    e.call("session_open", session="proj")
    e.call("incident_ignore", fingerprint="0000000000000001")
    e.call("incident_ignore", fingerprint="0000000000000002")
    # The same one again replaces, never refused.
    e.call("incident_ignore", fingerprint="0000000000000002", reason="again")
    err = expect_error("limit_exceeded", e.call, "incident_ignore",
                       fingerprint="0000000000000003")
    assert "incident.ignore_max" in err.message and "2" in err.message, err.message
    got = e.call("incident_ignored")
    assert len(got["ignored"]) == 2 and got["refused"] == 1 and got["max"] == 2, got


@socket_only
@with_config(incident=STAGE)
def test_a_damaged_ignore_file_is_set_aside_and_the_engine_starts(e):
    e.call("session_open", session="proj")
    e.call("incident_ignore", fingerprint="00000000000000aa")
    path = os.path.join(state_dir(e), "sessions", "ignore.proj")
    assert os.path.exists(path), os.listdir(os.path.join(state_dir(e), "sessions"))
    with open(path, "r+b") as f:
        f.seek(30)
        f.write(b"\xff\xff\xff")
    kill_engine(e)
    with restart_on(e, config=default_config(incident=STAGE)) as e2:
        e2.call("session_open", session="proj")
        assert e2.call("incident_ignored")["ignored"] == []
        e2.wait_log("ignore.proj")
        assert os.listdir(os.path.join(state_dir(e), "aside")), "not set aside"
        # It still takes new ones.
        e2.call("incident_ignore", fingerprint="00000000000000bb")
        assert len(e2.call("incident_ignored")["ignored"]) == 1


@socket_only
@with_config(incident=STAGE)
def test_the_cli_ignores_lists_and_unignores_in_the_projects_session(e):
    from test_cli import vigil, vigil_ok
    e.call("session_open", session="proj")
    first, inc = first_abort(e)
    fp = inc["fingerprint"]
    # By MONITOR:INCIDENT (the label works as the id does), with a reason.
    out = vigil_ok(e, "--session", "proj", "ignore", "first:%d" % inc["id"], "--for", "2h",
                   "--reason", "client went away").stdout
    assert out.startswith("ignoring %s  until " % fp) and "client went away" in out, out
    listed = e.call("incident_ignored")["ignored"]
    assert [(x["fingerprint"], x["reason"]) for x in listed] == [(fp, "client went away")]
    # An ignored recurrence shows in `vigil ignored` with its hit.
    run_to_end(e, "echo '%s'" % ABORT, label="again")
    out = vigil_ok(e, "--session", "proj", "ignored").stdout
    assert out.startswith(fp) and "hits 1 (last " in out, out
    # --always, by fingerprint: replaces it.
    out = vigil_ok(e, "--session", "proj", "ignore", fp, "--always").stdout
    assert out.startswith("ignoring (replaced) %s  always" % fp), out
    # Bad input: exit 2 naming what was wrong, nothing changed.
    for args, named in [((fp, "--for", "40d"), "--for"), (("nothex",), "fingerprint"),
                        ((fp, "--for", "1h", "--always"), "--always"),
                        (("first:x",), "MONITOR:INCIDENT")]:
        p = vigil(e, "--session", "proj", "ignore", *args)
        assert p.returncode == 2 and named in p.stderr, (args, p.returncode, p.stderr)
    p = vigil(e, "--session", "proj", "ignore", "first:99999")
    assert p.returncode == 1 and "incident" in p.stderr, p.stderr
    assert len(e.call("incident_ignored")["ignored"]) == 1
    kept = os.path.join(state_dir(e), "sessions", "ignore.proj")
    assert os.path.exists(kept)
    vigil_ok(e, "--session", "proj", "unignore", fp)
    assert "no fingerprints ignored" in vigil_ok(e, "--session", "proj", "ignored").stdout
    # An empty list leaves no file behind.
    assert not os.path.exists(kept), os.listdir(os.path.dirname(kept))
    p = vigil(e, "--session", "proj", "unignore", fp)
    assert p.returncode == 1 and "does not ignore" in p.stderr, p.stderr


if __name__ == "__main__":
    sys.exit(run_tests([
        test_an_ignored_fingerprint_recurs_logged_counted_listed_never_notified,
        test_a_repeated_incident_says_how_to_silence_it_outside_the_frame,
        test_ignores_are_per_session,
        test_an_ignore_outlives_a_sigkilled_engine,
        test_an_ignore_ends_at_its_expiry,
        test_bad_ignores_are_refused_and_change_nothing,
        test_the_list_is_bounded_and_refusals_counted,
        test_a_damaged_ignore_file_is_set_aside_and_the_engine_starts,
        test_the_cli_ignores_lists_and_unignores_in_the_projects_session,
    ]))
