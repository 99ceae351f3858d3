#!/usr/bin/env python3
"""Issue 26, point 1's ports and point 3 (core/proc/ports.c,
core/monitor/monitor_quiet.c).

Ports: monitor_status and monitor_list name the TCP ports a monitor's
processes listen on, found from /proc (the sockets of its cgroup's members,
or without a cgroup of its descendants), the child's own and a
descendant's, with the cgroups this machine offers and with none.

Stalls: `quiet_after_ms` tells once when a monitor has printed no line for
that long (a `quiet` event, an output notification whose reason says so and
whose line is the last one printed), says nothing more while it stays quiet,
and tells once when it prints again (`resumed`); it never stops anything.
It carries on after an engine restart (the keeper's spec keeps it).

Every wait is on an event with a generous bound."""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from test_restart import BOUND_S, kill_engine, restart_on
from vigiltest import RpcError, run_tests, socket_only, wait_for

# A server that binds an ephemeral port on loopback, says which, and waits.
SERVER = ("import socket,time\n"
          "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n"
          "print('port=%d' % s.getsockname()[1], flush=True)\n"
          "time.sleep(600)\n")


def start_server(c, descendant=False):
    """A monitor running SERVER (as its child, or as a grandchild behind a
    shell that waits), and the port it printed."""
    py = "python3 -c \"$SERVER\""
    script = ("%s & wait" % py) if descendant else ("exec %s" % py)
    mid = c.call("monitor_start", argv=["sh", "-c", script], env={"SERVER": SERVER},
                 patterns=["^port="], notify="matches", label="server")["monitor_id"]
    n = c.wait_notification(lambda n: n["monitor_id"] == mid and n["type"] == "output",
                            timeout=BOUND_S, what="the server's port line")
    [line] = [l["text"] for l in n["lines"] if l["text"].startswith("port=")]
    return mid, int(line.split("=")[1])


def ports_of(entry):
    return [p["port"] for p in entry["ports"]]


def check_ports(e, descendant):
    c = e.main
    mid, port = start_server(c, descendant)
    st = c.call("monitor_status", monitor_id=mid)
    assert st["ports"] == [{"port": port, "address": "127.0.0.1"}], st["ports"]
    [m] = [m for m in c.call("monitor_list")["monitors"] if m["monitor_id"] == mid]
    assert ports_of(m) == [port], m["ports"]
    # A monitor that listens on nothing has none; an ended one too.
    other = c.call("monitor_start", argv=["sleep", "600"])["monitor_id"]
    assert c.call("monitor_status", monitor_id=other)["ports"] == []
    c.call("monitor_stop", monitor_id=mid)
    assert c.call("monitor_status", monitor_id=mid)["ports"] == []
    c.call("monitor_stop", monitor_id=other)


def test_the_port_a_server_listens_on_is_in_status_and_list(e):
    check_ports(e, descendant=False)


def test_the_port_a_descendant_listens_on_is_the_monitors(e):
    check_ports(e, descendant=True)


# A monitor that prints, then nothing until the file go exists, then prints.
QUIET = ('echo "hello <b>"; echo "last \\033[31m line"; '
         'while [ ! -e "$GO" ]; do sleep 0.05; done; echo back; exec sleep 600')


def mine(notes, mid):
    return [n for n in notes if n.get("monitor_id") == mid]


def events(c, mid):
    return [ev["type"] for ev in c.call("monitor_events", monitor_id=mid)["events"]]


def test_a_quiet_monitor_is_told_once_and_again_when_it_resumes(e):
    c = e.main
    go = os.path.join(e.dir, "go")
    mid = c.call("monitor_start", argv=["sh", "-c", QUIET], env={"GO": go},
                 quiet_after_ms=400, patterns=[], label="quiet")["monitor_id"]
    q = c.wait_notification(lambda n: n["monitor_id"] == mid and n["type"] == "output"
                            and (n.get("reason") or "").startswith("no output for"),
                            timeout=BOUND_S, what="the quiet notification")
    assert q["reason"] == "no output for 400ms", q["reason"]
    # The last line is process text, cleaned as every line is (its escape
    # sequence gone) and inside the frame of untrusted output.
    assert [l["text"] for l in q["lines"]] == ["last  line"], q["lines"]
    assert "[stdout seq=2] last  line" in q["text"], q["text"]
    assert "reason: no output for 400ms" in q["text"], q["text"]
    st = c.call("monitor_status", monitor_id=mid)
    assert st["quiet_since"] is not None and st["state"] == "running", st
    [m] = [m for m in c.call("monitor_list")["monitors"] if m["monitor_id"] == mid]
    assert m["quiet_since"] == st["quiet_since"], m
    # Quiet for several times quiet_after_ms: nothing more is said (this
    # wait proves an absence; the next event is then awaited).
    import time
    time.sleep(1.5)
    open(go, "w").close()
    r = c.wait_notification(lambda n: n["monitor_id"] == mid and n["type"] == "output"
                            and (n.get("reason") or "").startswith("output resumed after"),
                            timeout=BOUND_S, what="the resumed notification")
    assert "output resumed after" in r["text"], r["text"]
    notes = mine(c.drain(), mid) + [q, r]
    said = [n["reason"] for n in notes if n.get("reason")]
    assert len([s for s in said if s.startswith("no output")]) == 1, said
    assert len([s for s in said if s.startswith("output resumed")]) == 1, said
    types = events(c, mid)
    assert types.count("quiet") == 1 and types.count("resumed") == 1, types
    assert types.index("quiet") < types.index("resumed"), types
    text = c.call("monitor_events", monitor_id=mid)["text"]
    assert " quiet no output for 400ms; last line: last  line\n" in text, text
    assert re.search(r" resumed output resumed after \d", text), text
    st = c.call("monitor_status", monitor_id=mid)
    assert st["quiet_since"] is None and st["state"] == "running", st
    c.call("monitor_stop", monitor_id=mid)


def test_quiet_after_ms_carries_on_across_a_restart_of_the_program(e):
    c = e.main
    go = os.path.join(e.dir, "go")
    # The first run prints, goes quiet, and fails when go exists; the second
    # prints (which ends the quiet) and goes quiet again.
    script = ('echo run; if [ -e "$GO" ]; then exec sleep 600; fi; '
              'while [ ! -e "$GO" ]; do sleep 0.05; done; exit 1')
    mid = c.call("monitor_start", argv=["sh", "-c", script], env={"GO": go}, patterns=[],
                 quiet_after_ms=300, restart="on-failure", restart_backoff_ms=50)["monitor_id"]

    def reason(prefix):
        return c.wait_notification(lambda n: n["monitor_id"] == mid and (n.get("reason") or "")
                                   .startswith(prefix), timeout=BOUND_S, what=prefix)
    reason("no output for 300ms")
    open(go, "w").close()
    reason("exited with code 1")
    reason("output resumed after")
    reason("no output for 300ms")  # the second run's own period
    types = [t for t in events(c, mid) if t in ("quiet", "resumed", "restart", "started")]
    assert types == ["started", "quiet", "restart", "started", "resumed", "quiet"], types
    c.call("monitor_stop", monitor_id=mid)


def test_a_silent_second_run_is_told_quiet(e):
    # The first run prints and fails at once; the second prints nothing: its
    # period starts when it starts, so it is told quiet with the first
    # run's last line.
    c = e.main
    flag = os.path.join(e.dir, "flag")
    script = 'if [ ! -e "$FLAG" ]; then : > "$FLAG"; echo first run; exit 1; fi; exec sleep 600'
    mid = c.call("monitor_start", argv=["sh", "-c", script], env={"FLAG": flag}, patterns=[],
                 quiet_after_ms=300, restart="on-failure", restart_backoff_ms=50)["monitor_id"]
    c.wait_notification(lambda n: n["monitor_id"] == mid and (n.get("reason") or "")
                        .startswith("exited with code 1"), timeout=BOUND_S, what="the restart")
    q = c.wait_notification(lambda n: n["monitor_id"] == mid and (n.get("reason") or "")
                            .startswith("no output for"), timeout=BOUND_S, what="quiet")
    assert [l["text"] for l in q["lines"]] == ["first run"], q["lines"]
    types = events(c, mid)
    assert types.index("quiet") > types.index("restart"), types
    c.call("monitor_stop", monitor_id=mid)


def test_quiet_after_ms_is_off_by_default_and_bounded(e):
    c = e.main
    for bad, msg in ((50, "quiet_after_ms must be 0 or 100..86400000, got 50"),
                     (86400001, "quiet_after_ms must be 0..86400000, got 86400001")):
        try:
            c.call("monitor_start", argv=["true"], quiet_after_ms=bad)
            raise AssertionError("accepted %d" % bad)
        except RpcError as err:
            assert err.message == "invalid_params: " + msg, err.message
    assert c.call("monitor_list")["monitors"] == []
    mid = c.call("monitor_start", argv=["sleep", "600"])["monitor_id"]
    st = c.call("monitor_status", monitor_id=mid, include_start=True)
    assert st["quiet_since"] is None and st["start"]["quiet_after_ms"] == 0, st
    c.call("monitor_stop", monitor_id=mid)


def resumes_once_after_the_take_over(c, mid, go):
    """Lets the monitor print again (go), waits for its one resumed notice,
    and checks that the new engine told no quiet: one quiet event in all
    (the one before the resume), one resumed."""
    open(go, "w").close()
    c.wait_notification(
        lambda n: n["monitor_id"] == mid and (n.get("reason") or "").startswith("output resumed"),
        timeout=BOUND_S, what="the resumed notification after the take-over")
    said = [n["reason"] for n in mine(c.drain(), mid) if n.get("reason")]
    assert not [s for s in said if s.startswith("no output")], said
    types = events(c, mid)
    assert types.count("quiet") == 1 and types.count("resumed") == 1, types


@socket_only
def test_quiet_after_ms_carries_on_after_an_engine_restart(e):
    e.call("session_open", session="agent")
    stop, go = os.path.join(e.dir, "stop"), os.path.join(e.dir, "go")
    # Ticks (never quiet) until stop exists, then prints its last line and
    # is quiet until go exists.
    script = ('while [ ! -e "$STOP" ]; do echo tick; sleep 0.1; done; echo "the last line"; '
              'while [ ! -e "$GO" ]; do sleep 0.05; done; echo back; exec sleep 600')
    mid = e.call("monitor_start", argv=["sh", "-c", script], env={"STOP": stop, "GO": go},
                 quiet_after_ms=2000, patterns=[], label="ticker")["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    kill_engine(e)
    with restart_on(e) as e2:
        e2.wait_log("took over %s (ticker) in session agent, pid %d" % (mid, pid))
        e2.call("session_open", session="agent")
        open(stop, "w").close()
        q = e2.main.wait_notification(
            lambda n: n["monitor_id"] == mid and (n.get("reason") or "").startswith("no output"),
            timeout=BOUND_S, what="the quiet notification after the take-over")
        assert q["reason"] == "no output for 2.0s", q["reason"]
        assert [l["text"] for l in q["lines"]] == ["the last line"], q["lines"]
        resumes_once_after_the_take_over(e2.main, mid, go)
        e2.call("monitor_stop", monitor_id=mid)


def test_the_bundled_policies_name_a_quiet_notice_as_such(e):
    # events and system_message name an output notification's reason; a
    # stall notice is not called a restart.
    c = e.main
    for policy, quiet, resumed in (("events", "[quiet] ", "[resumed] "),
                                   ("system_message", "Quiet: no output for",
                                    "Resumed: output resumed after")):
        go = os.path.join(e.dir, "go-" + policy)
        mid = c.call("monitor_start", argv=["sh", "-c", QUIET], env={"GO": go},
                     quiet_after_ms=300, patterns=[], policy=policy)["monitor_id"]
        q = c.wait_notification(lambda n: n["monitor_id"] == mid and (n.get("reason") or "")
                                .startswith("no output"), timeout=BOUND_S, what="quiet")
        assert quiet in q["text"] and "restart" not in q["text"].lower(), q["text"]
        open(go, "w").close()
        r = c.wait_notification(lambda n: n["monitor_id"] == mid and (n.get("reason") or "")
                                .startswith("output resumed"), timeout=BOUND_S, what="resumed")
        assert resumed in r["text"] and "restart" not in r["text"].lower(), r["text"]
        c.call("monitor_stop", monitor_id=mid)


@socket_only
def test_vigil_list_and_status_show_the_port_and_vigil_start_takes_quiet_after(e):
    from test_cli import start, vigil, vigil_ok
    server = os.path.join(e.dir, "server.py")
    with open(server, "w") as f:
        f.write(SERVER)
    done = vigil_ok(e, "start", "--label", "web", "--wait-for", "^port=", "--", "sh", "-c",
                    "exec %s %s" % (sys.executable, server))
    mid = done.stdout.splitlines()[0].strip()
    port = int(re.search(r"is ready: .*port=(\d+)", done.stderr).group(1))
    lst = vigil_ok(e, "list").stdout.splitlines()
    header = lst[0]
    [row] = [l for l in lst[1:] if l.startswith(mid)]
    at = header.index("PORTS")
    assert row[at:].split()[0] == str(port), lst
    st = vigil_ok(e, "status", mid).stdout
    assert re.search(r"^  ports +%d on 127\.0\.0\.1$" % port, st, re.M), st
    # --quiet-after: bounded, and a quiet monitor's status says since when.
    bad = vigil(e, "start", "--quiet-after", "50ms", "--", "sleep", "600")
    assert bad.returncode == 2 and "--quiet-after" in bad.stderr and "100" in bad.stderr, bad
    quiet = vigil_ok(e, "start", "--quiet-after", "200ms", "--", "sh", "-c",
                     "echo only line; exec sleep 600").stdout.strip()
    wait_for(lambda: json.loads(vigil_ok(e, "--json", "status", quiet).stdout)["quiet_since"],
             "vigil status to say the monitor is quiet")
    st = vigil_ok(e, "status", quiet).stdout
    assert re.search(r"^  quiet since +\d{4}-", st, re.M), st
    vigil_ok(e, "stop", mid)
    vigil_ok(e, "stop", quiet)


@socket_only
def test_a_quiet_told_before_an_engine_restart_is_not_told_again(e):
    e.call("session_open", session="agent")
    go = os.path.join(e.dir, "go")
    mid = e.call("monitor_start", argv=["sh", "-c", QUIET], env={"GO": go}, patterns=[],
                 quiet_after_ms=300, label="sleepy")["monitor_id"]
    pid = e.call("monitor_status", monitor_id=mid)["pid"]
    e.main.wait_notification(lambda n: n["monitor_id"] == mid and (n.get("reason") or "")
                             .startswith("no output"), timeout=BOUND_S, what="quiet")
    kill_engine(e)
    with restart_on(e) as e2:
        e2.wait_log("took over %s (sleepy) in session agent, pid %d" % (mid, pid))
        e2.call("session_open", session="agent")
        st = e2.call("monitor_status", monitor_id=mid)
        assert st["quiet_since"] is not None, st
        # Still quiet for several times quiet_after_ms under the new engine
        # (this wait proves an absence): it says nothing more.
        import time
        time.sleep(1.5)
        resumes_once_after_the_take_over(e2.main, mid, go)
        assert e2.call("monitor_status", monitor_id=mid)["quiet_since"] is None
        e2.call("monitor_stop", monitor_id=mid)


TESTS = [
    test_the_port_a_server_listens_on_is_in_status_and_list,
    test_the_port_a_descendant_listens_on_is_the_monitors,
    test_a_quiet_monitor_is_told_once_and_again_when_it_resumes,
    test_quiet_after_ms_is_off_by_default_and_bounded,
    test_quiet_after_ms_carries_on_across_a_restart_of_the_program,
    test_a_silent_second_run_is_told_quiet,
    test_quiet_after_ms_carries_on_after_an_engine_restart,
    test_a_quiet_told_before_an_engine_restart_is_not_told_again,
    test_vigil_list_and_status_show_the_port_and_vigil_start_takes_quiet_after,
    test_the_bundled_policies_name_a_quiet_notice_as_such,
]

if __name__ == "__main__":
    status = run_tests(TESTS)
    # The ports again without cgroups: the descendants found from /proc.
    os.environ["VIGIL_CGROUP"] = "none"
    print("--- VIGIL_CGROUP=none", flush=True)
    status |= run_tests(TESTS[:2])
    sys.exit(status)
