"""What a command started through the CLI gets of the caller's environment
(issue 24, item 3): by default nothing, only the engine's (what
monitor.env_inherit passes) and --env; --pass-env NAME or PREFIX* passes
the caller's variables on, monitor.env_deny still judging them;
--pass-env-all passes the whole environment but what monitor.env_deny
refuses, which is left out and named in a note; --caller-path
finds the program in the caller's PATH (a venv's python) and starts that
absolute path, which the allowlist must allow, while the child keeps the
engine's PATH."""

import atexit
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import default_config, run_tests, socket_only
from test_cli import client_env, vigil

# A directory only the caller has on its PATH (a venv's bin/), with a tool
# the allowlist allows by its absolute path, and one it does not.
TOOLS = tempfile.mkdtemp(prefix="vigil-ft-callerpath-")
atexit.register(shutil.rmtree, TOOLS, True)
for name in ("venvtool", "othertool"):
    with open(os.path.join(TOOLS, name), "w") as f:
        f.write('#!/bin/sh\necho "ran $0 with PATH=$PATH"\n')
    os.chmod(os.path.join(TOOLS, name), 0o755)
ALLOWED = os.path.join(TOOLS, "venvtool")


def config():
    cfg = default_config()
    cfg["monitor"]["allowed_commands"] = cfg["monitor"]["allowed_commands"] + [ALLOWED, "python3"]
    return cfg


SHOW = ["--", "sh", "-c", 'echo "FOO=${FOO-unset} VT_A=${VT_A-unset} VT_B=${VT_B-unset}"']


@socket_only
def test_the_callers_variables_pass_only_when_named(e):
    env = client_env(FOO="bar", VT_A="a", VT_B="b")
    # By default the child has none of them (the shell's FOO=bar vigil run).
    p = vigil(e, "run", *SHOW, env=env)
    assert p.returncode == 0 and p.stdout == "FOO=unset VT_A=unset VT_B=unset\n", p
    p = vigil(e, "run", "--pass-env", "FOO", *SHOW, env=env)
    assert p.stdout == "FOO=bar VT_A=unset VT_B=unset\n", p
    p = vigil(e, "run", "--pass-env", "VT_*", *SHOW, env=env)
    assert p.stdout == "FOO=unset VT_A=a VT_B=b\n", p
    # An explicit --env wins over the caller's value.
    p = vigil(e, "run", "--pass-env", "FOO", "--env", "FOO=mine", *SHOW, env=env)
    assert p.stdout == "FOO=mine VT_A=unset VT_B=unset\n", p
    # The engine's deny list still judges what is passed: PATH is refused,
    # by name, and nothing runs.
    p = vigil(e, "run", "--pass-env", "PATH", *SHOW, env=env)
    assert p.returncode == 126 and '"PATH" is refused by monitor.env_deny' in p.stderr, p
    # A pattern that is not a name is a usage error naming it.
    p = vigil(e, "run", "--pass-env", "A=B", *SHOW, env=env)
    assert p.returncode == 2 and '--pass-env: "A=B"' in p.stderr, p
    # Said in the help.
    assert "not your shell's variables" in vigil(e, "run", "--help").stdout


test_the_callers_variables_pass_only_when_named.config = config


# What the child sees of FOO and PYTHONPATH, printed by Python.
PY_SHOW = ["--", "python3", "-c",
           'import os; print(os.environ.get("FOO"), os.environ.get("PYTHONPATH"))']


def small_env(**extra):
    """The client's environment cut to what it needs (so a note's names are
    known): PATH, HOME, its state directory, the sanitizers' options."""
    env = {k: v for k, v in client_env().items()
           if k in ("PATH", "HOME", "XDG_STATE_HOME", "VIGIL_TEST_RUN") or
           k.endswith("SAN_OPTIONS")}
    env.update(extra)
    return env


def note_lines(p):
    return [l for l in p.stderr.splitlines() if l.startswith("vigil: note: env: left out")]


@socket_only
def test_pass_env_all_passes_the_environment_but_the_deny_list(e):
    env = small_env(FOO="bar", PYTHONPATH="/tmp/vigil-ft-nowhere")
    # Without it nothing of the caller's passes, and there is no note.
    p = vigil(e, "run", *PY_SHOW, env=env)
    assert p.returncode == 0 and p.stdout == "None None\n" and not note_lines(p), p
    # With it FOO passes; PYTHONPATH (and PATH, HOME, XDG_STATE_HOME) are left
    # out, and a note on stderr names them.
    p = vigil(e, "run", "--pass-env-all", *PY_SHOW, env=env)
    assert p.returncode == 0 and p.stdout == "bar None\n", p
    notes = note_lines(p)
    assert len(notes) == 1 and '"PYTHONPATH"' in notes[0] and '"PATH"' in notes[0], p
    assert '"FOO"' not in notes[0] and "/tmp/vigil-ft-nowhere" not in notes[0], p
    # --env still wins, and --pass-env with it is redundant, not an error.
    p = vigil(e, "run", "--pass-env-all", "--pass-env", "FOO", "--env", "FOO=mine", *PY_SHOW,
              env=env)
    assert p.returncode == 0 and p.stdout == "mine None\n", p
    # start says the same note.
    p = vigil(e, "start", "--pass-env-all", *PY_SHOW, env=env)
    assert p.returncode == 0 and len(note_lines(p)) == 1, p
    # More variables than a start may hold: an error naming the bound and
    # the count, and nothing starts.
    big = dict(env, **{"VT_MANY_%04d" % i: "1" for i in range(1100)})
    p = vigil(e, "run", "--pass-env-all", *PY_SHOW, env=big)
    assert p.returncode == 2 and "--pass-env-all" in p.stderr and "1024" in p.stderr \
        and str(len(big)) in p.stderr, p
    # Said in the help.
    assert "--pass-env-all" in vigil(e, "run", "--help").stdout


test_pass_env_all_passes_the_environment_but_the_deny_list.config = config


@socket_only
def test_caller_path_finds_the_program_in_the_callers_path(e):
    env = client_env(PATH=TOOLS + os.pathsep + os.environ.get("PATH", ""))
    # Without it the bare name is what the allowlist judges (and the engine
    # would look in its own PATH, never the caller's): denied, not run.
    p = vigil(e, "run", "--", "venvtool", env=env)
    assert p.returncode == 126 and "ran " not in p.stdout, p
    # --caller-path does; the allowlist sees the absolute path, and the
    # child keeps the engine's PATH.
    p = vigil(e, "run", "--caller-path", "--", "venvtool", env=env)
    assert p.returncode == 0, p
    assert p.stdout.startswith("ran %s with PATH=" % ALLOWED), p
    assert TOOLS not in p.stdout.split("PATH=", 1)[1], p
    # A program the allowlist does not name by that path is denied, naming it.
    p = vigil(e, "run", "--caller-path", "--", "othertool", env=env)
    assert p.returncode == 126 and os.path.join(TOOLS, "othertool") in p.stderr, p
    # Not found in the caller's PATH either: a usage error that says so.
    p = vigil(e, "run", "--caller-path", "--", "no-such-tool-here", env=env)
    assert p.returncode == 2 and "not an executable file" in p.stderr, p
    p = vigil(e, "start", "--caller-path", "--shell", "--", "venvtool", env=env)
    assert p.returncode == 2 and "--caller-path: not with --shell" in p.stderr, p


test_caller_path_finds_the_program_in_the_callers_path.config = config


if __name__ == "__main__":
    sys.exit(run_tests([
        test_the_callers_variables_pass_only_when_named,
        test_pass_env_all_passes_the_environment_but_the_deny_list,
        test_caller_path_finds_the_program_in_the_callers_path,
    ]))
