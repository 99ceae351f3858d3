"""Denials that say how to fix them (docs/protocol.md, "Denials"): a start the
config refuses keeps its first words and code, then names the config file the
engine loaded, the line where the key is set, the exact entry to add and how
to reload (SIGHUP to the engine's pid). And api_info's "config": the file the
engine runs, with its real path and digest."""

import hashlib
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import VIGILD, Engine, expect_error, run_plain_tests

# A config written as a person would: one key a line, so each has its line.
CONFIG = """-- a config with comments, as people write them
-- allowed_commands = { "not", "this", "line" }
return {
  monitor = {
    allowed_commands = { "echo", "sh" },   -- line 5
    allow_shell = false,
    allow_persistent = false,
    env_allow = { "NODE_ENV" },
    kill_grace_ms = 500,
    env_inherit = { "PATH", "HOME", "VIGIL_TEST_RUN", "ASAN_OPTIONS", "UBSAN_OPTIONS",
                    "LSAN_OPTIONS" },
  },
}
"""


def engine_with(tmp, text):
    path = os.path.join(tmp, "my config.lua")
    with open(path, "w") as f:
        f.write(text)
    return Engine("stdio", config=False, extra_args=["--config", path]), path


def test_each_denial_names_the_file_the_line_the_entry_and_the_reload(tmp):
    e, path = engine_with(tmp, CONFIG)
    try:
        reload = "then reload the engine: kill -HUP %d (or vigil reload)" % e.proc.pid
        err = expect_error("denied", e.call, "monitor_start", argv=["seq", "3"])
        assert err.message.startswith(
            'denied: command: program "seq" is not in monitor.allowed_commands. To fix: add '
            '"seq" to monitor.allowed_commands in %s (set at line 5), %s' % (path, reload)), \
            err.message
        err = expect_error("denied", e.call, "monitor_start", command="echo hi", shell=True)
        assert ("shell: shell commands are not allowed (monitor.allow_shell is false). To fix: "
                "set monitor.allow_shell = true in %s (set at line 6), %s" % (path, reload)
                in err.message), err.message
        err = expect_error("denied", e.call, "monitor_start", command="echo hi", persistent=True)
        assert ("set monitor.allow_persistent = true in %s (set at line 7), %s" % (path, reload)
                in err.message), err.message
        err = expect_error("denied", e.call, "monitor_start", command="echo hi",
                           env={"LD_PRELOAD": "/tmp/x.so"})
        assert err.message.startswith('denied: env: "LD_PRELOAD" is refused by monitor.env_deny'), \
            err.message
        assert ('To fix: add "LD_PRELOAD" to monitor.env_allow in %s (set at line 8), %s'
                % (path, reload) in err.message), err.message

        # Doing what it says works: the entry added, SIGHUP to that pid.
        with open(path, "w") as f:
            f.write(CONFIG.replace('{ "echo", "sh" }', '{ "echo", "sh", "seq" }'))
        os.kill(e.proc.pid, signal.SIGHUP)
        e.wait_log("reloaded %s" % path)
        r = e.call("monitor_start", argv=["seq", "3"])
        assert r["monitor_id"].startswith("mon_"), r
    finally:
        assert e.close() == []


def test_a_key_the_file_does_not_set_says_where_to_add_it(tmp):
    e, path = engine_with(tmp, 'return { monitor = { allowed_commands = {"echo"} } }\n')
    try:
        err = expect_error("denied", e.call, "monitor_start", command="echo hi", shell=True)
        assert ("set monitor.allow_shell = true in %s (not set there: add it inside its "
                "monitor = { ... } table), then reload" % path in err.message), err.message
        err = expect_error("denied", e.call, "monitor_start", argv=["seq", "1"])
        assert '"seq" to monitor.allowed_commands in %s (set at line 1)' % path in err.message, \
            err.message
    finally:
        assert e.close() == []


def test_an_engine_without_a_config_says_it_has_none(tmp):
    e = Engine("stdio", config=False)
    try:
        err = expect_error("denied", e.call, "monitor_start", argv=["echo", "x"])
        assert err.message.startswith("denied: command: monitor.allowed_commands is empty, so "
                                      "every command is denied (fail closed). The engine runs "
                                      "with no config file"), err.message
        assert 'add "echo" to monitor.allowed_commands' in err.message, err.message
        assert "restart the engine with --config FILE" in err.message, err.message
        assert e.call("api_info")["config"] is None
    finally:
        assert e.close() == []


def test_api_info_reports_the_config_it_loaded_and_a_reload_updates_it(tmp):
    e, path = engine_with(tmp, CONFIG)
    try:
        link = os.path.join(tmp, "link.lua")
        os.symlink(path, link)
        cfg = e.call("api_info")["config"]
        assert cfg == {"path": path, "real_path": os.path.realpath(path),
                       "sha256": hashlib.sha256(CONFIG.encode()).hexdigest(),
                       "size": len(CONFIG.encode())}, cfg
        assert e.call("api_info")["pid"] == e.proc.pid
        changed = CONFIG.replace("kill_grace_ms = 500", "kill_grace_ms = 600")
        with open(path, "w") as f:
            f.write(changed)
        # Until the reload, the engine reports what it runs, not the file.
        assert e.call("api_info")["config"]["sha256"] == cfg["sha256"]
        e.call("config_reload")
        assert e.call("api_info")["config"]["sha256"] == hashlib.sha256(changed.encode()).hexdigest()
    finally:
        assert e.close() == []


def test_check_config_says_what_to_change_but_no_reload(tmp):
    # The config's own monitor is refused: the file is to fix, and no
    # running engine would take a reload (the checker's pid is no engine).
    path = os.path.join(tmp, "boot.lua")
    with open(path, "w") as f:
        f.write(CONFIG.replace("  },\n}", '  },\n  monitors = { { session = "s", command = "seq 3" } },\n}'))
    r = subprocess.run([VIGILD, "--check-config", path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert ('program "seq" is not in monitor.allowed_commands. To fix: add "seq" to '
            "monitor.allowed_commands in %s (set at line 5)\n" % path in r.stderr), r.stderr
    assert "kill -HUP" not in r.stderr and "reload" not in r.stderr, r.stderr


if __name__ == "__main__":
    sys.exit(run_plain_tests([
        test_each_denial_names_the_file_the_line_the_entry_and_the_reload,
        test_a_key_the_file_does_not_set_says_where_to_add_it,
        test_an_engine_without_a_config_says_it_has_none,
        test_api_info_reports_the_config_it_loaded_and_a_reload_updates_it,
        test_check_config_says_what_to_change_but_no_reload,
    ]))
