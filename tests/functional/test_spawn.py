"""What a start runs, with what environment and where, through the real
vigild (issue 7, points 2, 3, 5 and 16):

- a bare program name is resolved through the engine's search path
  (monitor.path, else the engine's own PATH without relative entries), never
  through the caller's env.PATH; the resolved path is shown as `program`;
- caller-given environment variables that are loader or interpreter
  start-up hooks are refused (monitor.env_deny, monitor.env_allow), and a
  child inherits only monitor.env_inherit of the engine's environment;
- the cwd that is checked against workspace_roots is the one the child
  runs in, even while a symlink on its path flips;
- vigild --check-config refuses a boot monitor exactly as the start would;
- an engine started with a low soft descriptor limit raises it for itself
  (two pipes per monitor) and its children get the limit it was given.
"""

import atexit
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (ERROR_CODES, VIGILD, Engine, RpcError, default_config, expect_error,
                       lua_value, run_tests, stdio_only, with_config)

PLANTED = "#!/bin/sh\necho PLANTED\n"


def script(path, text):
    """Writes an executable file at path holding text; returns the path."""
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def plant(directory, name):
    """Writes an executable `name` in directory that prints PLANTED."""
    return script(os.path.join(directory, name), PLANTED)


def real_program(name):
    """Where the engine's own PATH (absolute entries) finds name."""
    path = ":".join(p for p in os.environ.get("PATH", "").split(":") if p.startswith("/"))
    found = shutil.which(name, path=path or "/usr/local/bin:/usr/bin:/bin")
    assert found, name
    return found


# A deployment that lets a start set PATH (monitor.env_allow): the program is
# still found through the engine's search path.
@with_config(monitor={"env_allow": ["PATH"]})
def test_the_callers_path_never_decides_what_runs(e):
    tmp = tempfile.mkdtemp(prefix="vigil-ft-path-")
    try:
        evilbin = os.path.join(tmp, "evilbin")
        os.mkdir(evilbin)
        plant(evilbin, "echo")
        plant(tmp, "echo")  # in the cwd, for PATH "" and "."
        for env, cwd in (({"PATH": evilbin}, None), ({"PATH": ""}, tmp), ({"PATH": "."}, tmp),
                         ({"PATH": "evilbin"}, tmp), ({"PATH": ":/nonexistent"}, tmp)):
            args = {"argv": ["echo", "the real one"], "env": env}
            if cwd:
                args["cwd"] = cwd
            r = e.call("process_run", **args)
            assert r["stdout_summary"] == "the real one", (env, cwd, r)
            status = e.call("monitor_status", monitor_id=r["process_id"])
            assert status["program"] == real_program("echo"), status
        # The caller's PATH still reaches the child's environment.
        r = e.call("process_run", argv=["sh", "-c", 'echo "$PATH"'], env={"PATH": evilbin})
        assert r["stdout_summary"] == evilbin, r
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_program_is_listed_resolved_and_the_command_is_not(e):
    mid = e.call("monitor_start", argv=["sleep", "30"], label="napper")["monitor_id"]
    listed = e.call("monitor_list")["monitors"][0]
    assert listed["program"] == real_program("sleep"), listed
    # The path only: no argument of the command is shown.
    assert "command" not in listed and "argv" not in listed
    assert not any(v == "30" or (isinstance(v, str) and v.endswith(" 30"))
                   for v in listed.values()), listed
    e.call("monitor_stop", monitor_id=mid, grace_ms=0)
    # An explicit path is shown as given; shell mode runs /bin/sh.
    r = e.call("process_run", argv=["/bin/sh", "-c", "exit 0"])
    assert e.call("monitor_status", monitor_id=r["process_id"])["program"] == "/bin/sh"
    r = e.call("process_run", command="echo hi", shell=True)
    assert e.call("monitor_status", monitor_id=r["process_id"])["program"] == "/bin/sh"
    # The engine's log names what it ran.
    e.wait_log(real_program("sleep"))


def _odd_dir_config():
    cfg = default_config()
    cfg["monitor"]["allowed_commands"].append("./vigil-prog")
    return cfg


def test_program_from_an_odd_directory_name_is_escaped(e):
    # The directory's name is the caller's: a newline, an escape and a byte
    # that is not UTF-8 must reach neither a client's decoder nor a log raw.
    tmp = tempfile.mkdtemp(prefix="vigil-ft-odd-").encode()
    odd = os.path.join(tmp, b"odd\n\x1b[31m\xff")
    try:
        os.mkdir(odd)
        prog = os.path.join(odd, b"vigil-prog")
        with open(prog, "w") as f:
            f.write("#!/bin/sh\necho ran\n")
        os.chmod(prog, 0o755)
        r = e.call("process_run", argv=["./vigil-prog"], cwd=odd)
        assert r["stdout_summary"] == "ran", r
        program = e.call("monitor_status", monitor_id=r["process_id"])["program"]
        assert program == tmp.decode() + "/odd\\n\\e[31m\\xff/./vigil-prog", program
        assert "\n" not in program and "\x1b" not in program
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


test_program_from_an_odd_directory_name_is_escaped.config = _odd_dir_config


PATH_DIR = tempfile.mkdtemp(prefix="vigil-ft-mpath-")
atexit.register(shutil.rmtree, PATH_DIR, ignore_errors=True)
HELLO = script(os.path.join(PATH_DIR, "vigil-hello"),
               "#!/bin/sh\necho hello from monitor.path\n")
# Where a caller keeps a program monitor.path does not have.
ELSEWHERE = os.path.join(PATH_DIR, "elsewhere")
os.mkdir(ELSEWHERE)
plant(ELSEWHERE, "vigil-hello-2")


def test_monitor_path_is_where_bare_names_are_found(e):
    r = e.call("process_run", argv=["vigil-hello"], env={"PATH": "/nonexistent"})
    assert r["stdout_summary"] == "hello from monitor.path", r
    assert e.call("monitor_status", monitor_id=r["process_id"])["program"] == HELLO
    # A name monitor.path does not have is not found, even where the
    # caller's PATH has it.
    err = expect_error("command_not_found", e.call, "process_run", argv=["vigil-hello-2"],
                       env={"PATH": ELSEWHERE})
    assert "vigil-hello-2" in err.message


test_monitor_path_is_where_bare_names_are_found.config = lambda: default_config(
    monitor={"path": PATH_DIR + ":/usr/bin:/bin", "env_allow": ["PATH"],
             "allowed_commands": ["vigil-hello", "vigil-hello-2", "echo"]})


def check_config(cfg):
    """vigild --check-config on cfg (a dict): (exit status, output, path)."""
    d = tempfile.mkdtemp(prefix="vigil-ft-cfg-")
    path = os.path.join(d, "c.lua")
    try:
        with open(path, "w") as f:
            f.write("return " + lua_value(cfg) + "\n")
        p = subprocess.run([VIGILD, "--check-config", path], capture_output=True, text=True,
                           timeout=30)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return p.returncode, p.stdout + p.stderr, path


@stdio_only
def test_monitor_path_entries_must_be_absolute(e):
    for bad, entry in (("bin:/usr/bin", '"bin"'), ("/usr/bin::/bin", '""'),
                       (".", '"."'), ("", '""')):
        rc, out, _ = check_config(default_config(monitor={"path": bad}))
        assert rc == 1 and "monitor.path" in out and entry in out, (bad, out)
        assert "absolute" in out, out
    rc, out, _ = check_config(default_config(monitor={"path": "/usr/bin:/bin"}))
    assert rc == 0, out


# --- the environment -------------------------------------------------------

DEFAULT_DENY = ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "GCONV_PATH",
                "PYTHONSTARTUP", "PYTHONPATH", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT",
                # what names a program, or where one is read from (issue 22)
                "PATH", "HOME", "EDITOR", "CC", "MAKEFLAGS", "GIT_SSH_COMMAND",
                "Npm_Config_Script_Shell", "PYTEST_ADDOPTS", "RUSTC_WRAPPER", "GOFLAGS"]


def test_loader_and_interpreter_hooks_in_env_are_refused(e):
    for key in DEFAULT_DENY:
        for method in ("process_run", "monitor_start"):
            err = expect_error("denied", e.call, method, argv=["true"],
                               env={"SAFE": "1", key: "/tmp/x/ev.so"})
            assert '"%s"' % key in err.message and "monitor.env_deny" in err.message, err.message
    # Nothing started.
    assert e.call("monitor_list", include_exited=True)["total"] == 0
    # Ordinary variables pass, and so do the harmless names of a denied
    # family (the default monitor.env_allow).
    r = e.call("process_run", argv=["sh", "-c", 'echo "$GREETING"'], env={"GREETING": "hi"})
    assert r["stdout_summary"] == "hi"
    r = e.call("process_run", argv=["sh", "-c", 'echo "$GIT_AUTHOR_NAME"'],
               env={"GIT_AUTHOR_NAME": "agent"})
    assert r["stdout_summary"] == "agent"


# An allowlisted script that finds its interpreter by name (#!/usr/bin/env sh,
# as npm, pyenv's shims and many tools do), and a directory of the caller's
# with an "sh" that leaves a marker (issue 22, point 2).
SHEBANG_DIR = tempfile.mkdtemp(prefix="vigil-ft-shebang-")
atexit.register(shutil.rmtree, SHEBANG_DIR, ignore_errors=True)
TOOL = script(os.path.join(SHEBANG_DIR, "tool"), "#!/usr/bin/env sh\necho the real tool\n")
EVIL_DIR = os.path.join(SHEBANG_DIR, "evil")
os.mkdir(EVIL_DIR)
MARKER = os.path.join(SHEBANG_DIR, "evil-ran")
script(os.path.join(EVIL_DIR, "sh"), "#!/bin/sh\necho ran > %s\necho the evil sh\n" % MARKER)


def test_a_request_path_cannot_choose_a_scripts_interpreter(e):
    for method in ("process_run", "monitor_start"):
        try:
            r = e.call(method, argv=[TOOL], env={"PATH": EVIL_DIR + ":/usr/bin:/bin"})
        except RpcError as err:
            assert err.message.startswith("denied: "), err.message
            assert '"PATH" is refused by monitor.env_deny (entry "PATH")' in err.message, \
                err.message
            continue
        if method == "monitor_start":
            e.main.wait_ending(r["monitor_id"])
        raise AssertionError("%s ran the tool with the caller's PATH (%r); the caller's sh %s"
                             % (method, r, "ran" if os.path.exists(MARKER) else "did not run"))
    assert not os.path.exists(MARKER), "the caller's sh ran"
    assert e.call("monitor_list", include_exited=True)["total"] == 0
    # Without a PATH of its own the tool runs, with the engine's sh.
    r = e.call("process_run", argv=[TOOL])
    assert r["stdout_summary"] == "the real tool", r
    assert not os.path.exists(MARKER), "the caller's sh ran"


test_a_request_path_cannot_choose_a_scripts_interpreter.config = lambda: default_config(
    monitor={"allowed_commands": [TOOL]})


@with_config(monitor={"env_allow": ["PYTHONPATH"], "env_deny": ["LD_*", "SECRET_*"]})
def test_env_deny_and_env_allow_are_the_configs(e):
    r = e.call("process_run", argv=["sh", "-c", 'echo "$PYTHONPATH"'], env={"PYTHONPATH": "/x"})
    assert r["stdout_summary"] == "/x", r
    err = expect_error("denied", e.call, "process_run", argv=["true"], env={"SECRET_TOKEN": "1"})
    assert '"SECRET_TOKEN"' in err.message and '"SECRET_*"' in err.message, err.message
    err = expect_error("denied", e.call, "process_run", argv=["true"], env={"LD_AUDIT": "x"})
    assert '"LD_*"' in err.message


def test_env_names_are_checked(e):
    for bad in ("", "A=B"):
        err = expect_error("invalid_params", e.call, "process_run", argv=["true"], env={bad: "1"})
        assert "env" in err.message
    err = expect_error("invalid_params", e.call, "process_run", argv=["true"],
                       env={"A\x01=B": "1"})
    assert '"A\\x01=B"' in err.message, err.message  # the caller's bytes, escaped


# A start that shows what its child got of three variables, one allowed and
# two monitor.env_deny refuses.
SHOW_DENIED = ["sh", "-c",
               'echo "FOO=${FOO-unset} PP=${PYTHONPATH-unset} LD=${LD_PRELOAD-unset}"']
DENIED_ENV = {"FOO": "1", "LD_PRELOAD": "x", "PYTHONPATH": "/tmp/x"}
DROPPED_NOTE = ('env: left out 2 variables that monitor.env_deny refuses (env_denied "drop"): '
                '"LD_PRELOAD", "PYTHONPATH"')


def test_env_denied_drop_leaves_the_refused_names_out_and_says_which(e):
    # By default (and with "refuse") a denied name refuses the whole start.
    for extra in ({}, {"env_denied": "refuse"}):
        for method in ("process_run", "monitor_start"):
            err = expect_error("denied", e.call, method, argv=SHOW_DENIED, env=DENIED_ENV,
                               **extra)
            assert '"LD_PRELOAD" is refused by monitor.env_deny' in err.message, err.message
    assert e.call("monitor_list", include_exited=True)["total"] == 0
    # "drop": it starts, the child sees FOO and neither refused name, and the
    # result's note names them, sorted (the values are never shown).
    r = e.call("monitor_start", argv=SHOW_DENIED, env=DENIED_ENV, env_denied="drop",
               line_buffered=False, patterns=[])
    assert r["note"] == DROPPED_NOTE, r
    e.main.wait_ending(r["monitor_id"])
    out = e.call("monitor_output", monitor_id=r["monitor_id"])["lines"]
    assert [l["text"] for l in out] == ["FOO=1 PP=unset LD=unset"], out
    # The start map holds what passed: sent again with the default, it starts.
    start = e.call("monitor_status", monitor_id=r["monitor_id"], include_start=True,
                   reveal_env=True)["start"]
    assert start["env"] == {"FOO": "1"}, start
    e.main.wait_ending(e.call("monitor_start", **start)["monitor_id"])
    r = e.call("process_run", argv=SHOW_DENIED, env=DENIED_ENV, env_denied="drop",
               line_buffered=False)
    assert r["stdout_summary"] == "FOO=1 PP=unset LD=unset" and r["note"] == DROPPED_NOTE, r
    # Nothing to leave out: no note. With live_safe made idle too, both.
    r = e.call("process_run", argv=["true"], env={"FOO": "1"}, env_denied="drop")
    assert r["note"] is None, r
    r = e.call("monitor_start", argv=["true"], env=DENIED_ENV, env_denied="drop",
               mode="live_safe")
    assert r["note"] == DROPPED_NOTE + "; mode: live_safe needs monitor.live_mode_enabled; " \
        "started in idle mode", r
    e.main.wait_ending(r["monitor_id"])
    # The note names at most 16, then how many more.
    many = {"CARGO_V%02d" % i: "1" for i in range(20)}
    r = e.call("process_run", argv=["true"], env=many, env_denied="drop")
    assert r["note"].startswith('env: left out 20 variables that monitor.env_deny refuses '
                                '(env_denied "drop"): "CARGO_V00", "CARGO_V01", '), r
    assert r["note"].endswith('"CARGO_V15", and 4 more'), r
    # A malformed name is still refused, and a bad value names the argument
    # and what it may be.
    err = expect_error("invalid_params", e.call, "process_run", argv=["true"], env={"": "1"},
                       env_denied="drop")
    assert "env" in err.message, err.message
    for method in ("process_run", "monitor_start"):
        err = expect_error("invalid_params", e.call, method, argv=["true"], env_denied="keep")
        assert "env_denied" in err.message and '"refuse"' in err.message \
            and '"drop"' in err.message and '"keep"' in err.message, err.message


@stdio_only
def test_a_child_inherits_only_env_inherit(e):
    os.environ["VIGIL_TEST_GATEWAY_KEY"] = "sk-secret-of-the-gateway"
    os.environ["VIGIL_TEST_KEPT"] = "kept"
    try:
        cfg = default_config()
        cfg["monitor"]["env_inherit"] = cfg["monitor"]["env_inherit"] + ["VIGIL_TEST_KE*"]
        e2 = Engine(e.transport, cfg)
    finally:
        del os.environ["VIGIL_TEST_GATEWAY_KEY"]
        del os.environ["VIGIL_TEST_KEPT"]
    try:
        r = e2.call("process_run", argv=["sh", "-c",
                                         'echo "${VIGIL_TEST_GATEWAY_KEY-absent} $VIGIL_TEST_KEPT"'])
        assert r["stdout_summary"] == "absent kept", r
        r = e2.call("process_run", argv=["sh", "-c", "env"])
        assert "sk-secret-of-the-gateway" not in r["stdout_summary"], r
        # PATH and HOME are in the default list.
        r = e2.call("process_run", argv=["sh", "-c", 'echo "$PATH|$HOME"'])
        assert r["stdout_summary"] == "%s|%s" % (os.environ.get("PATH", ""),
                                                 os.environ.get("HOME", "")), r
    finally:
        e2.close()


@stdio_only
def test_env_lists_are_checked_at_load(e):
    for key, value, want in (("env_deny", ["LD_*", ""], "monitor.env_deny[2]"),
                             ("env_allow", ["A=B"], "monitor.env_allow[1]"),
                             ("env_inherit", ["*PATH"], "monitor.env_inherit[1]"),
                             ("env_inherit", ["A*B*"], "monitor.env_inherit[1]")):
        rc, out, _ = check_config(default_config(monitor={key: value}))
        assert rc == 1 and want in out, (key, value, out)


# --- cwd -------------------------------------------------------------------

def point_link(link, target):
    """Makes link a symlink to target, atomically (rename over the old one)."""
    tmp = link + ".tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, link)


def _roots_config():
    cfg = default_config()
    cfg["monitor"]["workspace_roots"] = [ROOT]
    cfg["monitor"]["max_monitors_per_session"] = 16
    return cfg


ROOT = os.path.realpath(tempfile.mkdtemp(prefix="vigil-ft-root-"))
atexit.register(shutil.rmtree, ROOT, ignore_errors=True)


def test_cwd_checked_is_the_cwd_used_while_a_symlink_flips(e):
    # Each start is asked for with the link pointing inside the workspace;
    # after a delay the link is flipped to a directory outside. A flip before
    # the engine's check is a refusal, one after the child is in its
    # directory changes nothing; one in between must not move the child out.
    # The delay sweeps 0..4 ms in 25 us steps, twice, so some flips land in
    # that window whatever the machine's speed (the old code ran about a
    # third of the starts that passed the check outside).
    inside = os.path.join(ROOT, "inside")
    outside = os.path.realpath(tempfile.mkdtemp(prefix="vigil-ft-outside-"))
    os.makedirs(inside, exist_ok=True)
    link = os.path.join(ROOT, "link")
    ran_inside = ran_outside = denied = 0
    try:
        for attempt in range(320):
            point_link(link, inside)
            msgid = e.main.request("process_run", {"argv": ["/bin/sh", "-c", "pwd -P"],
                                                   "cwd": link})
            until = time.perf_counter() + (attempt % 160) * 25e-6
            while time.perf_counter() < until:
                pass  # a spin: a sleep this short is not kept on a loaded machine
            point_link(link, outside)
            try:
                r = e.main.wait_response(msgid)
            except RpcError as exc:
                assert exc.code == ERROR_CODES["denied"], exc
                assert "workspace_roots" in exc.message, exc
                denied += 1
                continue
            if r["stdout_summary"] == inside:
                ran_inside += 1
            else:
                ran_outside += 1
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    assert ran_outside == 0, "%d of %d starts ran outside the workspace (%d denied)" % (
        ran_outside, ran_inside + ran_outside, denied)
    # The flips really landed on both sides of the check.
    assert ran_inside > 0 and denied > 0, (ran_inside, denied)


test_cwd_checked_is_the_cwd_used_while_a_symlink_flips.config = _roots_config


def test_cwd_outside_the_roots_is_denied_and_inside_runs(e):
    inside = os.path.join(ROOT, "plain")
    os.makedirs(inside, exist_ok=True)
    r = e.call("process_run", argv=["/bin/sh", "-c", "pwd -P"], cwd=inside)
    assert r["stdout_summary"] == inside
    err = expect_error("denied", e.call, "process_run", argv=["true"], cwd="/")
    assert "workspace_roots" in err.message
    # A symlink inside the root that leads out is judged by where it leads.
    out_link = os.path.join(ROOT, "to-root")
    if not os.path.islink(out_link):
        os.symlink("/", out_link)
    err = expect_error("denied", e.call, "process_run", argv=["true"], cwd=out_link)
    assert "workspace_roots" in err.message


test_cwd_outside_the_roots_is_denied_and_inside_runs.config = _roots_config


# --- --check-config and the boot monitors ---------------------------------

def boot(cfg):
    """vigild --stdio with cfg's monitors: (exit status, stderr, path)."""
    d = tempfile.mkdtemp(prefix="vigil-ft-boot-")
    path = os.path.join(d, "c.lua")
    try:
        with open(path, "w") as f:
            f.write("return " + lua_value(cfg) + "\n")
        p = subprocess.run([VIGILD, "--stdio", "--config", path], input=b"",
                           capture_output=True, timeout=30)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return p.returncode, p.stderr.decode(errors="replace"), path


def monitors_config(*monitors, **monitor):
    cfg = default_config(monitor=monitor)
    cfg["monitors"] = list(monitors)
    return cfg


@stdio_only
def test_check_config_refuses_boot_monitors_the_start_would_refuse(e):
    outside = tempfile.mkdtemp(prefix="vigil-ft-out-")
    cases = [
        (monitors_config({"session": "b", "argv": ["echo", "x"], "patterns": ["ok", "(unclosed"]}),
         "invalid_pattern", "monitors[1]: patterns[1]"),
        (monitors_config({"session": "b", "command": "rm -rf /nothing"}),
         "denied", 'program "rm" is not in monitor.allowed_commands'),
        (monitors_config({"session": "b", "argv": ["echo"]},
                         {"session": "b", "argv": ["vigil-no-such-program"], "label": "ghost"},
                         allowed_commands=["echo", "vigil-no-such-program"]),
         "command_not_found", 'monitors[2] (label "ghost"): command: "vigil-no-such-program"'),
        (monitors_config({"session": "b", "argv": ["echo"], "env": {"LD_PRELOAD": "/x.so"}}),
         "denied", '"LD_PRELOAD" is refused by monitor.env_deny'),
        (monitors_config({"session": "b", "argv": ["echo"], "cwd": outside},
                         workspace_roots=[ROOT]),
         "denied", "outside monitor.workspace_roots"),
        (monitors_config({"session": "b", "argv": ["echo"], "cwd": "/no/such/dir"}),
         "invalid_params", '"/no/such/dir" does not exist'),
        (monitors_config({"session": "b", "command": "echo hi", "shell": True},
                         allow_shell=False),
         "denied", "monitor.allow_shell is false"),
        (monitors_config(*[{"session": "b", "argv": ["echo"]}] * 3, max_monitors_per_session=2),
         "limit_exceeded", "monitor.max_monitors_per_session is 2"),
    ]
    try:
        for cfg, code, want in cases:
            rc, out, path = check_config(cfg)
            assert rc == 1, (want, out)
            assert out.startswith("vigild: %s: %s: monitors[" % (code, path)), (want, out)
            assert want in out, (want, out)
            assert out.count(code + ":") == 1, out  # the code is said once
            # Booting it says the same and starts nothing.
            rc2, err, path2 = boot(cfg)
            assert rc2 == 1, (want, err)
            assert out.replace(path, path2).strip() in err, (out, err)
        # A good one passes, naming its monitors.
        rc, out, _ = check_config(monitors_config({"session": "b", "argv": ["echo", "x"],
                                                   "patterns": ["^x$"]}))
        assert rc == 0 and "1 monitors" in out, out
    finally:
        shutil.rmtree(outside, ignore_errors=True)


@stdio_only
def test_start_up_error_names_its_code_once(e):
    rc, err, path = boot(monitors_config({"session": "b", "argv": ["echo"], "patterns": ["("]}))
    assert rc == 1 and "invalid_pattern" in err, err
    line = [l for l in err.splitlines() if "monitors[1]" in l][0]
    assert line.startswith("vigild: invalid_pattern: %s: monitors[1]: patterns[0]" % path), line
    assert line.count("invalid_pattern") == 1, line


@stdio_only
def test_more_monitors_than_the_inherited_descriptor_limit_allows(e):
    """Each running monitor holds two pipes in vigild. Started with a soft
    RLIMIT_NOFILE of 64, the engine still runs 40 monitors (80 pipes: with
    64 descriptors the 30th start or so was spawn_failed, "Too many open
    files"), and what it runs starts with the 64 it was given."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 256:
        print("  (skipped: the hard descriptor limit is %d)" % hard)
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
    try:
        e2 = Engine(e.transport)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        for s in range(3):
            e2.call("session_open", session="fd%d" % s)
        for i in range(40):
            e2.main.call("monitor_start", session="fd%d" % (i // 16), argv=["sleep", "30"],
                         patterns=[])
        r = e2.call("process_run", argv=["sh", "-c", "ulimit -Sn"])
        assert r["stdout_summary"] == "64", r
        assert "raised from 64" in e2.wait_log("descriptor limit (RLIMIT_NOFILE) raised")
    finally:
        e2.close()


if __name__ == "__main__":
    sys.exit(run_tests([
        test_the_callers_path_never_decides_what_runs,
        test_program_is_listed_resolved_and_the_command_is_not,
        test_program_from_an_odd_directory_name_is_escaped,
        test_monitor_path_is_where_bare_names_are_found,
        test_monitor_path_entries_must_be_absolute,
        test_loader_and_interpreter_hooks_in_env_are_refused,
        test_a_request_path_cannot_choose_a_scripts_interpreter,
        test_env_deny_and_env_allow_are_the_configs,
        test_env_names_are_checked,
        test_env_denied_drop_leaves_the_refused_names_out_and_says_which,
        test_a_child_inherits_only_env_inherit,
        test_env_lists_are_checked_at_load,
        test_cwd_checked_is_the_cwd_used_while_a_symlink_flips,
        test_cwd_outside_the_roots_is_denied_and_inside_runs,
        test_check_config_refuses_boot_monitors_the_start_would_refuse,
        test_start_up_error_names_its_code_once,
        test_more_monitors_than_the_inherited_descriptor_limit_allows,
    ]))
