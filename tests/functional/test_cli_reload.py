"""`vigil reload`: the engine reads its config again (config_reload), what
`vigil setup` tells a person to run after adding the project's commands to
their config. A bad file is refused with the engine's reason, status 1,
and the old config stays in force."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from test_cli import vigil, vigil_ok
from vigiltest import default_config, expect_error, lua_value, run_tests, socket_only


def write_config(e, cfg):
    with open(e.config_path, "w") as f:
        f.write("return " + lua_value(cfg) + "\n")


@socket_only
def test_reload_reads_the_config_again(e):
    cfg = default_config()
    cfg["monitor"]["allowed_commands"] = ["sleep"]   # echo no longer allowed
    write_config(e, cfg)
    out = vigil_ok(e, "reload").stdout
    assert "reloaded its config" in out and "envelope" in out, out
    err = expect_error("denied", e.call, "monitor_start", command="echo hi")
    assert '"echo"' in err.message, err.message
    js = json.loads(vigil_ok(e, "--json", "reload").stdout)
    assert js["reloaded"] is True and "envelope" in js["policies"], js


@socket_only
def test_reload_of_a_bad_file_fails_and_changes_nothing(e):
    with open(e.config_path, "w") as f:
        f.write("return {\n  monitor = {\n")
    p = vigil(e, "reload")
    assert p.returncode == 1 and p.stdout == "", (p.returncode, p.stdout)
    assert "invalid_params" in p.stderr and e.config_path + ":" in p.stderr, p.stderr
    # The old config is in force: echo is still allowed.
    e.call("monitor_start", command="echo still")


@socket_only
def test_reload_takes_no_argument(e):
    p = vigil(e, "reload", "now")
    assert p.returncode == 2 and "reload" in p.stderr, (p.returncode, p.stderr)
    assert "reload" in vigil_ok(e, "--help").stdout


if __name__ == "__main__":
    sys.exit(run_tests([
        test_reload_reads_the_config_again,
        test_reload_of_a_bad_file_fails_and_changes_nothing,
        test_reload_takes_no_argument,
    ]))
