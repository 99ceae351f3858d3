"""Named groups (issue 24, item 2): config monitors with a `group` are not
started at boot; `vigil up GROUP` / `vigil down GROUP` (group_up,
group_down) bring them up and down together, each in its entry's session,
through the same gate as boot; `vigil groups` (group_list) shows them. An
unknown group is a clear error, and a group with an entry the allowlist
refuses starts nothing."""

import json
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (default_config, expect_error, lua_value, run_tests, socket_only,
                       wait_for)
from test_cli import vigil, vigil_ok

SESSION = "stack"
MONITORS = [
    {"session": SESSION, "label": "api", "command": "sleep 600", "group": "web"},
    {"session": SESSION, "label": "db", "command": "sleep 601"},
    {"session": SESSION, "label": "worker", "command": "sleep 602", "group": "web"},
    # A group one of whose entries the allowlist refuses (env is not in it).
    {"session": "other", "label": "fine", "command": "sleep 603", "group": "broken"},
    {"session": "other", "label": "refused", "command": "env sleep 604", "group": "broken"},
    # Started at boot although it has a group.
    {"session": "other", "label": "early", "command": "sleep 605", "group": "tools",
     "autostart": True},
]


def config():
    return default_config(monitors=MONITORS)


def running(e, session):
    """The labels of session's running monitors, as `vigil list` shows them."""
    out = json.loads(vigil_ok(e, "--json", "--session", session, "list").stdout)
    return sorted(m["label"] for m in out["monitors"] if m["state"] == "running")


def group_list(conn):
    return {g["group"]: {m["label"]: m for m in g["monitors"]}
            for g in conn.call("group_list")["groups"]}


@socket_only
def test_up_and_down_bring_a_group_up_and_down(e):
    # At boot only the entries without a group (and the autostart one) run.
    assert running(e, SESSION) == ["db"]
    assert running(e, "other") == ["early"]

    up = vigil(e, "up", "web")
    assert up.returncode == 0, up
    lines = up.stdout.splitlines()
    assert len(lines) == 2, up.stdout
    assert re.match(r"^started api mon_[0-9a-z]+ \(session stack\)$", lines[0]), lines
    assert re.match(r"^started worker mon_[0-9a-z]+ \(session stack\)$", lines[1]), lines
    assert running(e, SESSION) == ["api", "db", "worker"]

    # A second up starts nothing and says they run.
    again = vigil(e, "up", "web")
    assert again.returncode == 0, again
    assert [l.split()[:3] for l in again.stdout.splitlines()] == [
        ["already", "running", "api"], ["already", "running", "worker"]], again.stdout
    assert running(e, SESSION) == ["api", "db", "worker"]

    shown = vigil_ok(e, "groups").stdout
    assert re.search(r"^web\s+api\s+stack\s+running\s+mon_", shown, re.M), shown
    assert re.search(r"^broken\s+refused\s+other\s+-\s+-$", shown, re.M), shown

    down = vigil(e, "down", "web")
    assert down.returncode == 0, down
    assert [l.split()[:2] for l in down.stdout.splitlines()] == [
        ["stopped", "api"], ["stopped", "worker"]], down.stdout
    wait_for(lambda: running(e, SESSION) == ["db"], "the group's monitors to end")
    # Down again: nothing is running, said so, exit 0.
    none = vigil(e, "down", "web")
    assert none.returncode == 0 and "nothing of group web is running" in none.stdout, none
    # And up starts them afresh.
    vigil_ok(e, "up", "web")
    assert running(e, SESSION) == ["api", "db", "worker"]
    vigil_ok(e, "down")  # every group
    wait_for(lambda: running(e, SESSION) == ["db"] and running(e, "other") == [],
             "every group's monitors to end")


@socket_only
def test_an_unknown_group_is_a_usage_error_naming_the_known_ones(e):
    for cmd in ("up", "down"):
        p = vigil(e, cmd, "nosuch")
        assert p.returncode == 2, p
        assert 'no group "nosuch"' in p.stderr and "broken, tools, web" in p.stderr, p.stderr
    p = vigil(e, "up", "bad/name")
    assert p.returncode == 2 and "group" in p.stderr and "bad/name" in p.stderr, p
    assert running(e, SESSION) == ["db"]


@socket_only
def test_a_group_with_a_refused_entry_starts_nothing(e):
    p = vigil(e, "up", "broken")
    assert p.returncode == 1, p
    assert 'monitors[5] (label "refused")' in p.stderr and '"env"' in p.stderr, p.stderr
    assert running(e, "other") == ["early"]
    # Up of every group is refused the same way, and starts nothing either.
    p = vigil(e, "up")
    assert p.returncode == 1 and "refused" in p.stderr, p
    assert running(e, SESSION) == ["db"] and running(e, "other") == ["early"]


def test_the_wire_methods(e):
    c = e.main
    up = c.call("group_up", group="web")
    assert sorted(up) == ["running", "started"], up
    assert [m["label"] for m in up["started"]] == ["api", "worker"] and up["running"] == [], up
    assert all(sorted(m) == ["label", "monitor_id", "session"] and m["session"] == SESSION
               for m in up["started"]), up
    ids = [m["monitor_id"] for m in up["started"]]
    again = c.call("group_up", group="web")
    assert again["started"] == [] and [m["monitor_id"] for m in again["running"]] == ids, again

    groups = group_list(c)
    assert sorted(groups) == ["broken", "tools", "web"], groups
    api, fine = groups["web"]["api"], groups["broken"]["fine"]
    assert api["state"] == "running" and api["monitor_id"] == ids[0], api
    assert fine["monitor_id"] is None and fine["state"] is None, fine
    assert groups["tools"]["early"]["state"] == "running", groups

    down = c.call("group_down", group="web")
    assert [m["monitor_id"] for m in down["stopped"]] == ids, down
    assert c.call("group_down", group="web")["stopped"] == []

    err = expect_error("invalid_params", c.call, "group_up", group="nosuch")
    assert 'group: no group "nosuch"' in err.message and "broken, tools, web" in err.message, err
    err = expect_error("invalid_params", c.call, "group_up", group="a b")
    assert "group must be 1..64 of" in err.message and '"a b"' in err.message, err
    expect_error("invalid_params", c.call, "group_down", group=7)
    expect_error("denied", c.call, "group_up", group="broken")
    assert group_list(c)["broken"]["fine"]["monitor_id"] is None
    # The config-only keys are refused on the wire, by name.
    for key, value in (("group", "web"), ("autostart", True)):
        err = expect_error("invalid_params", c.call, "monitor_start", command="sleep 1",
                           **{key: value})
        assert key in err.message, err


def test_a_reload_leaves_running_groups_to_group_down(e):
    c = e.main
    ids = [m["monitor_id"] for m in c.call("group_up", group="web")["started"]]
    # The new config keeps api in web, and drops worker and the group tools.
    kept = [m for m in MONITORS if m["label"] in ("api", "db", "fine", "refused")]
    with open(e.config_path, "w") as f:
        f.write("return " + lua_value(default_config(monitors=kept)) + "\n")
    c.call("config_reload")
    # api is still the entry's: up starts nothing and says it runs.
    again = c.call("group_up", group="web")
    assert again["started"] == [] and [m["monitor_id"] for m in again["running"]] == ids[:1], again
    assert list(group_list(c)["web"]) == ["api"]
    # tools is no longer in the config, but its running monitor still is its.
    down = c.call("group_down", group="tools")
    assert [m["label"] for m in down["stopped"]] == ["early"], down
    err = expect_error("invalid_params", c.call, "group_down", group="tools")
    assert "its groups: broken, web" in err.message, err
    # down web stops the dropped worker too: it was started for web.
    down = c.call("group_down", group="web")
    assert [m["monitor_id"] for m in down["stopped"]] == ids, down


@socket_only
def test_a_group_survives_a_sigusr2_upgrade(e):
    """The group a monitor was started for is kept in its spec: after the
    documented upgrade (SIGUSR2: the engine runs itself again and takes its
    monitors over) up starts nothing more and down stops them."""
    c = e.main
    ids = sorted(m["monitor_id"] for m in c.call("group_up", group="web")["started"])
    assert len(ids) == 2, ids
    os.kill(e.proc.pid, signal.SIGUSR2)
    for mid in ids:
        e.wait_log("took over %s" % mid, timeout=60)
    c = e.connect()
    again = c.call("group_up", group="web")
    assert again["started"] == [], again
    assert sorted(m["monitor_id"] for m in again["running"]) == ids, again
    down = c.call("group_down", group="web")
    assert sorted(m["monitor_id"] for m in down["stopped"]) == ids, down


def test_config_errors():
    """Bad group keys are refused as the config loads, naming the field."""
    import subprocess
    import tempfile
    from vigiltest import VIGILD
    cases = [
        ({"session": "s", "command": "sleep 1", "group": "web"},
         "monitors[1].label is required with group"),
        ({"session": "s", "label": "a", "command": "sleep 1", "group": "no/slash"},
         'monitors[1].group must be 1..64 of A-Z a-z 0-9 . _ -, got "no/slash"'),
        ({"session": "s", "label": "a", "command": "sleep 1", "group": "x" * 65},
         "monitors[1].group must be 1..64 of"),
        ({"session": "s", "label": "a", "command": "sleep 1", "autostart": True},
         "monitors[1].autostart needs group"),
        ({"session": "s", "label": "a", "command": "sleep 1", "group": "web",
          "autostart": "yes"}, "monitors[1].autostart"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "c.lua")
        for entry, needle in cases:
            with open(path, "w") as f:
                f.write("return " + lua_value(default_config(monitors=[entry])) + "\n")
            p = subprocess.run([VIGILD, "--check-config", path], capture_output=True, text=True)
            assert p.returncode == 1 and needle in p.stderr, (entry, p.stderr)
        # --check-config checks a group's entries as group_up would: one the
        # allowlist refuses fails the check, naming it.
        with open(path, "w") as f:
            f.write("return " + lua_value(default_config(monitors=MONITORS)) + "\n")
        p = subprocess.run([VIGILD, "--check-config", path], capture_output=True, text=True)
        assert p.returncode == 1 and 'monitors[5] (label "refused")' in p.stderr, p.stderr
        ok = [m for m in MONITORS if m["label"] != "refused"]
        with open(path, "w") as f:
            f.write("return " + lua_value(default_config(monitors=ok)) + "\n")
        p = subprocess.run([VIGILD, "--check-config", path], capture_output=True, text=True)
        assert p.returncode == 0 and "5 monitors" in p.stdout, (p.stdout, p.stderr)
        # Two entries of one group with the same label are refused.
        dup = [{"session": "s", "label": "a", "command": "sleep 1", "group": "web"},
               {"session": "t", "label": "a", "command": "sleep 2", "group": "web"}]
        with open(path, "w") as f:
            f.write("return " + lua_value(default_config(monitors=dup)) + "\n")
        p = subprocess.run([VIGILD, "--check-config", path], capture_output=True, text=True)
        assert p.returncode == 1 and 'monitors[2].label "a" is already in group web' in p.stderr, \
            p.stderr


if __name__ == "__main__":
    test_config_errors()
    print("ok   test_config_errors")
    sys.exit(run_tests([
        test_up_and_down_bring_a_group_up_and_down,
        test_an_unknown_group_is_a_usage_error_naming_the_known_ones,
        test_a_group_with_a_refused_entry_starts_nothing,
        test_the_wire_methods,
        test_a_reload_leaves_running_groups_to_group_down,
        test_a_group_survives_a_sigusr2_upgrade,
    ], config=config))
