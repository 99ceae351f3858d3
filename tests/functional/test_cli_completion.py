"""The shell completions in completions/ (bash, zsh, fish) for `vigil` and
`vigild`: bash's script is loaded and asked what it completes, as bash would
ask it when Tab is pressed (subcommands, options, option values, and monitor
ids and labels from a real vigild through `vigil __complete-ids`); every
option `vigil COMMAND --help` lists is completed; zsh's and fish's scripts
are checked for syntax, and fish's asked too (scripts/install-deps.sh installs
both shells; a missing one fails the test, naming it)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import VIGIL, VIGILD, run_tests, socket_only
from test_cli import client_env, start, vigil, vigil_ok

COMPLETIONS = os.path.join(os.path.dirname(__file__), "..", "..", "completions")
BASH_SCRIPT = os.path.join(COMPLETIONS, "vigil.bash")
COMMANDS = ["start", "list", "ps", "ls", "status", "output", "logs", "events", "wait", "stop",
            "restart", "run", "watch", "sessions", "up", "down", "groups", "ignore", "ignored", "unignore", "setup", "reload",
            "policy", "engine", "shutdown", "mcp", "hook"]


def bash_complete(words, env=None):
    """What the bash completion offers for the last of words (the word being
    typed; "" for a new one)."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
              '_vigil; printf "%s\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", BASH_SCRIPT] + words,
                       capture_output=True, text=True, timeout=30, env=env or client_env())
    assert r.returncode == 0 and r.stderr == "", (words, r.returncode, r.stderr)
    return sorted(set(l for l in r.stdout.splitlines() if l))


def help_options(cmd):
    """The long and short options `vigil CMD --help` lists, without the
    common ones."""
    out = subprocess.run([VIGIL, cmd, "--help"], capture_output=True, text=True, timeout=30,
                         env=client_env()).stdout
    own = out.split("\nOptions:\n", 1)[1].split("\nCommon options", 1)[0] if "\nOptions:\n" in out else ""
    pairs = re.findall(r"^  (?:(-\w), |    )(--[\w-]+)", own, re.M)
    return {o for pair in pairs for o in pair if o}


@socket_only
def test_bash_completes_commands_options_and_values(e):
    assert bash_complete(["vigil", "st"]) == ["start", "status", "stop"]
    assert bash_complete(["vigil", "re"]) == ["reload", "restart"]
    assert bash_complete(["vigil", "start", "--ti"]) == ["--timeout"]
    assert bash_complete(["vigil", "start", "--wait-"]) == ["--wait-for", "--wait-for-ready",
                                                           "--wait-timeout"]
    assert bash_complete(["vigil", "--socket", "/x", "wait", "m", "--for", ""]) == ["exit", "match"]
    assert bash_complete(["vigil", "start", "--notify", "l"]) == ["lines"]
    assert "--session" in bash_complete(["vigil", "list", "--se"])
    assert bash_complete(["vigil", "help", "wa"]) == ["wait", "watch"]
    assert bash_complete(["vigil", "se"]) == ["sessions", "setup"]
    assert bash_complete(["vigil", "setup", "c"]) == ["claude-code", "codex", "cursor"]
    # After "--": the command to run, not vigil's options.
    assert "--timeout" not in bash_complete(["vigil", "start", "--", "--ti"])


@socket_only
def test_bash_completes_every_option_the_help_lists(e):
    script = 'source "$1"; _vigil_options "$2"'
    for cmd in COMMANDS:
        r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", BASH_SCRIPT, cmd],
                           capture_output=True, text=True, timeout=30)
        completed = set(r.stdout.split())
        missing = help_options(cmd) - completed
        assert not missing, (cmd, missing)
    for path in (os.path.join(COMPLETIONS, "_vigil"), os.path.join(COMPLETIONS, "vigil.fish")):
        text = open(path).read()
        for cmd in COMMANDS:
            for opt in help_options(cmd):
                if opt.startswith("--"):
                    name = opt[2:]
                    assert re.search(r"(--|-l )%s\b" % re.escape(name), text), (path, cmd, opt)


def vigild_help_options():
    """The long options `vigild --help` names (its usage lines and its
    option list)."""
    out = subprocess.run([VIGILD, "--help"], capture_output=True, text=True, timeout=30).stdout
    return set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", out.split("\nLogs go to", 1)[0]))


@socket_only
def test_vigild_and_the_value_lists_are_completed(e):
    # Every vigild option its --help names, in the three shells (bash asked
    # as it would be on Tab, zsh and fish read).
    wanted = vigild_help_options()
    assert {"--daemon", "--log-file", "--log-max-bytes"} <= wanted, wanted
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
              '_vigild; printf "%s\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", BASH_SCRIPT,
                        "vigild", "--"], capture_output=True, text=True, timeout=30)
    missing = wanted - set(r.stdout.split())
    assert not missing, ("bash", missing)
    for path in (os.path.join(COMPLETIONS, "_vigil"), os.path.join(COMPLETIONS, "vigild.fish")):
        text = open(path).read()
        missing = {o for o in wanted if not re.search(r"(--|-l )%s\b" % re.escape(o[2:]), text)}
        assert not missing, (path, missing)
    # The values of the options that take one of a few words.
    assert bash_complete(["vigil", "mcp", "--profile", ""]) == sorted(
        ["vigil", "watch_process", "process", "monitor", "hermes"])
    assert bash_complete(["vigil", "mcp", "--delivery", ""]) == sorted(
        ["auto", "channel", "piggyback", "poll"])
    assert bash_complete(["vigil", "start", "--mode", ""]) == ["idle", "live_safe"]
    assert bash_complete(["vigil", "start", "--notify", ""]) == sorted(
        ["auto", "matches", "lines", "exit", "none"])


@socket_only
def test_bash_completes_monitor_ids_and_labels_from_the_engine(e):
    mid = start(e, "--label", "webserver", "--", "sleep", "30")
    got = bash_complete([VIGIL, "--socket", e.socket_path, "stop", ""])
    assert mid in got and "webserver" in got, got
    assert bash_complete([VIGIL, "--socket", e.socket_path, "status", "web"]) == ["webserver"]
    vigil_ok(e, "stop", mid, "--grace", "0")
    # No engine: nothing offered, nothing printed into the command line.
    missing = os.path.join(e.dir, "nothing.sock")
    assert bash_complete([VIGIL, "--socket", missing, "stop", ""]) == []
    r = subprocess.run([VIGIL, "--socket", missing, "__complete-ids"], capture_output=True,
                       text=True, timeout=30, env=client_env())
    assert r.returncode != 0 and r.stdout == "" and r.stderr == "", r
    # Not a command a person is shown.
    assert "__complete" not in vigil_ok(e, "--help").stdout


@socket_only
def test_zsh_and_fish_scripts_parse(e):
    zsh, fish = shutil.which("zsh"), shutil.which("fish")
    # scripts/install-deps.sh installs both: a missing one fails, naming it.
    assert zsh, "zsh is not installed (scripts/install-deps.sh installs it)"
    assert fish, "fish is not installed (scripts/install-deps.sh installs it)"
    r = subprocess.run([zsh, "-n", os.path.join(COMPLETIONS, "_vigil")], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    for name in ("vigil.fish", "vigild.fish"):
        r = subprocess.run([fish, "-n", os.path.join(COMPLETIONS, name)], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, (name, r.stderr)
    home = tempfile.mkdtemp(prefix="vigil-fish-")
    try:
        def fish_complete(line, script=os.path.join(COMPLETIONS, "vigil.fish")):
            r = subprocess.run([fish, "--no-config", "-c", 'source $argv[1]; complete -C $argv[2]',
                                script, line], capture_output=True, text=True, timeout=30,
                               env=dict(client_env(), HOME=home, XDG_CONFIG_HOME=home))
            assert r.returncode == 0, r.stderr
            return [l.split("\t")[0] for l in r.stdout.splitlines()]
        assert fish_complete("vigil st") == ["start", "status", "stop"]
        assert fish_complete("vigil start --no-l") == ["--no-line-buffer"]
        # vigild's own file (fish loads a command's completions by its name),
        # and vigil's holds none of vigild's.
        assert fish_complete("vigild --d", os.path.join(COMPLETIONS, "vigild.fish")) == ["--daemon"]
        assert "complete -c vigild" not in open(os.path.join(COMPLETIONS, "vigil.fish")).read()
        assert sorted(fish_complete("vigil mcp --delivery ")) == sorted(
            ["auto", "channel", "piggyback", "poll"])
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run_tests([
        test_bash_completes_commands_options_and_values,
        test_bash_completes_every_option_the_help_lists,
        test_vigild_and_the_value_lists_are_completed,
        test_bash_completes_monitor_ids_and_labels_from_the_engine,
        test_zsh_and_fish_scripts_parse,
    ]))
