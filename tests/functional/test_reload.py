"""Reloading the configuration and the policies (config_reload and SIGHUP):
atomic, running monitors untouched, a bad file refused with the reason and
the old configuration left in force."""

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (default_config, expect_error, lua_value, run_tests, socket_only)


def write_config(e, cfg):
    with open(e.config_path, "w") as f:
        f.write("return " + lua_value(cfg) + "\n")


def test_reload_applies_to_new_monitors_and_keeps_running_ones(e):
    running = e.call("monitor_start", command="sleep 30")["monitor_id"]
    cfg = default_config()
    cfg["monitor"]["allowed_commands"] = ["sleep"]  # echo no longer allowed
    write_config(e, cfg)
    r = e.call("config_reload")
    assert r["reloaded"] is True and "envelope" in r["policies"], r
    err = expect_error("denied", e.call, "monitor_start", command="echo hi")
    assert '"echo"' in err.message
    assert e.call("monitor_status", monitor_id=running)["state"] == "running"
    assert "config_reload" in e.call("api_info")["methods"]


def test_a_bad_file_is_refused_and_the_old_config_stays(e):
    with open(e.config_path, "w") as f:
        f.write("return {\n  monitor = { max_monitors_per_session = 99 },\n}\n")
    err = expect_error("invalid_params", e.call, "config_reload")
    assert "monitor.max_monitors_per_session must be 1..16, got 99" in err.message
    assert e.config_path in err.message
    with open(e.config_path, "w") as f:
        f.write("return {\n  monitor = {\n")
    err = expect_error("invalid_params", e.call, "config_reload")
    assert e.config_path + ":" in err.message
    # The old configuration is in force: echo is still allowed.
    r = e.call("monitor_start", command="echo still")
    e.main.wait_ending(r["monitor_id"])


def test_a_bad_policy_is_refused_and_the_old_config_stays(e):
    plugins = os.path.join(e.dir, "policies")
    os.makedirs(plugins)
    with open(os.path.join(plugins, "broken.lua"), "w") as f:
        f.write("return {\n  format = function(n) return 'x' end,\n  route = = 1,\n}\n")
    cfg = default_config()
    cfg["policy"] = "broken"
    cfg["plugin_paths"] = [plugins]
    write_config(e, cfg)
    err = expect_error("invalid_params", e.call, "config_reload")
    assert "broken.lua:3" in err.message, err.message
    r = e.call("monitor_start", command="echo fine")
    end = e.main.wait_ending(r["monitor_id"])
    assert "stream_policy: untrusted_observation" in end["text"]


def test_a_policy_with_a_syntax_error_is_refused_at_start(e):
    import subprocess
    from vigiltest import VIGILD
    plugins = os.path.join(e.dir, "start-policies")
    os.makedirs(plugins)
    with open(os.path.join(plugins, "bad.lua"), "w") as f:
        f.write("return {\n  format = function(n)\n    return x y\n  end,\n}\n")
    cfg = default_config()
    cfg["policy"] = "bad"
    cfg["plugin_paths"] = [plugins]
    path = os.path.join(e.dir, "start.lua")
    with open(path, "w") as f:
        f.write("return " + lua_value(cfg) + "\n")
    for args in (["--check-config", path], ["--stdio", "--config", path]):
        p = subprocess.run([VIGILD] + args, input=b"", capture_output=True, timeout=20)
        assert p.returncode == 1, (args, p)
        assert b"bad.lua:3:" in p.stderr and b'policy "bad"' in p.stderr, p.stderr


@socket_only
def test_sighup_reloads(e):
    cfg = default_config()
    cfg["monitor"]["allowed_commands"] = ["sleep"]
    write_config(e, cfg)
    e.proc.send_signal(signal.SIGHUP)
    # The reload is logged; wait for that line (bounded), then use it.
    e.wait_log("reloaded " + e.config_path)
    expect_error("denied", e.call, "monitor_start", command="echo hi")
    # A bad file on SIGHUP is refused, logged, and changes nothing.
    with open(e.config_path, "w") as f:
        f.write("return 42\n")
    e.proc.send_signal(signal.SIGHUP)
    e.wait_log("reload refused")
    assert e.call("monitor_start", command="sleep 5")["monitor_id"]


if __name__ == "__main__":
    sys.exit(run_tests([
        test_reload_applies_to_new_monitors_and_keeps_running_ones,
        test_a_bad_file_is_refused_and_the_old_config_stays,
        test_a_bad_policy_is_refused_and_the_old_config_stays,
        test_a_policy_with_a_syntax_error_is_refused_at_start,
        test_sighup_reloads,
    ]))
