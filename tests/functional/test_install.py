"""The install, as a person or a package gets it: `cmake --install` of this
build into a temporary prefix, then the installed `vigild` and `vigil`
run against each other with nothing of the source tree or the build
directory in reach.

What a user would notice if it broke: a file missing from the layout
(packaging/CMakeLists.txt lists it), a systemd unit naming a vigild that
is not where the install put it, an engine that cannot find its bundled
policies once installed (or once the installed tree is moved: the data
directory is found relative to the executable, core/base/datadir.h), a keeper
that is not beside vigild, or a client that cannot talk to the engine it
was installed with.

Every wait is on an event with a generous bound (a process exiting, a
notification arriving): the CI machine is a loaded 2-core box."""

import gzip
import os
import select
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import BUILD, lua_value, run_plain_tests

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WAIT_S = 60


def sanitizer_reports(text):
    return [line for line in text.splitlines()
            if "ERROR: AddressSanitizer" in line or "ERROR: LeakSanitizer" in line
            or "runtime error:" in line]


def cache_value(name):
    """A variable of this build's CMakeCache.txt, or None."""
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return None


def install(prefix):
    p = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    assert p.returncode == 0, p.stdout.decode(errors="replace")[-3000:]


def clean_env(home):
    """An environment with nothing pointing back at the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_") or
           k in ("VIGIL_TEST_RUN",)}
    env["HOME"] = home
    env["XDG_CONFIG_HOME"] = os.path.join(home, ".config")
    env["PATH"] = "/usr/bin:/bin"
    return env


def test_the_layout_holds_every_file_a_user_needs(tmp):
    prefix = os.path.join(tmp, "usr")
    install(prefix)
    expected = [
        "bin/vigild", "bin/vigil", "bin/vigil-keeper",
        "share/vigil/vigil.lua", "share/vigil/lua/vigil/envelope.lua",
        "share/vigil/plugins/envelope.lua", "share/vigil/plugins/xml.lua",
        "share/vigil/examples/policies/gate.lua",
        "lib/systemd/user/vigild.socket", "lib/systemd/user/vigild.service",
        "share/doc/vigil/examples/systemd/vigild-system.service",
        "share/doc/vigil/LICENSE",
        # docs/ installed whole (the name split: the docs check reads paths)
        "share/doc/vigil/docs/" + "protocol.md",
    ]
    scdoc = cache_value("VIGIL_SCDOC")
    if scdoc and not scdoc.endswith("NOTFOUND"):
        for src in os.listdir(os.path.join(ROOT, "docs", "man")):
            if src.endswith(".scd"):
                page = src[:-len(".scd")]
                expected.append("share/man/man%s/%s.gz" % (page.rsplit(".", 1)[1], page))
    else:
        print("  (scdoc was not found at configure time: no man pages to check)")
    completions = {"vigil.bash": ["share/bash-completion/completions/vigil",
                                  "share/bash-completion/completions/vigild"],
                   "_vigil": ["share/zsh/vendor-completions/_vigil"],
                   "vigil.fish": ["share/fish/vendor_completions.d/vigil.fish"],
                   "vigild.fish": ["share/fish/vendor_completions.d/vigild.fish"]}
    for src, dests in completions.items():
        if os.path.exists(os.path.join(ROOT, "completions", src)):
            expected.extend(dests)
    missing = [f for f in expected if not os.path.isfile(os.path.join(prefix, f))]
    assert not missing, "missing from the install: %s" % missing
    for exe in ("bin/vigild", "bin/vigil", "bin/vigil-keeper"):
        assert os.access(os.path.join(prefix, exe), os.X_OK), exe
    # Man pages compressed as Debian wants them (gzip -9n: no name, no time).
    for page in [f for f in expected if f.startswith("share/man/")]:
        with open(os.path.join(prefix, page), "rb") as f:
            raw = f.read()
        assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0" and not raw[3] & 0x08, (
            "%s is not gzipped without a name and a time stamp" % page)
        assert b".TH" in gzip.decompress(raw)[:4096], "%s is not a man page" % page
    # The user unit starts the vigild just installed, with the bundled
    # config copied where it reads it.
    with open(os.path.join(prefix, "lib/systemd/user/vigild.service")) as f:
        unit = f.read()
    assert "ExecStart=%s/bin/vigild " % prefix in unit, unit
    assert "%s/share/vigil/vigil.lua" % prefix in unit, unit
    assert "KillMode=process" in unit, unit
    assert "@" not in unit.replace("user@", ""), "an unreplaced @VAR@ in the unit:\n" + unit


def test_installed_vigild_and_vigil_work_together_after_the_tree_moves(tmp):
    first = os.path.join(tmp, "opt", "vigil")
    install(first)
    # The whole tree moves (a package unpacked elsewhere, a relocated
    # prefix): the engine still finds its bundled policies beside itself.
    prefix = os.path.join(tmp, "elsewhere", "vigil")
    os.makedirs(os.path.dirname(prefix))
    shutil.move(first, prefix)
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    env = clean_env(home)
    run_dir = os.path.join(tmp, "run")
    sock = os.path.join(run_dir, "vigil.sock")
    config = os.path.join(tmp, "vigil.lua")
    with open(config, "w") as f:
        # A bundled policy other than the built-in envelope, so that
        # finding plugins/ is what the notification proves.
        f.write("return " + lua_value({
            "policy": "xml",
            "monitor": {"allowed_commands": ["sh"], "allow_shell": False,
                        "env_inherit": ["PATH", "HOME", "VIGIL_TEST_RUN"]},
        }) + "\n")
    log_path = os.path.join(tmp, "vigild.log")
    vigild = subprocess.Popen([os.path.join(prefix, "bin", "vigild"), "--listen", sock,
                               "--config", config, "--log-file", log_path],
                              env=env, cwd="/", stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    vigil = os.path.join(prefix, "bin", "vigil")
    watch = None

    def cli(*args):
        p = subprocess.run([vigil, "--socket", sock] + list(args), env=env, cwd="/",
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=WAIT_S)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

    def log():
        with open(log_path, errors="replace") as f:
            return f.read()

    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            rc, out, err = cli("list")
            if rc == 0:
                break
            assert vigild.poll() is None, "vigild exited: %s" % vigild.stderr.read().decode()
            assert time.monotonic() < deadline, err
            time.sleep(0.05)  # waiting for the engine to listen at start-up only
        # The log is written by a thread of its own: the line may land a
        # moment after the engine answers.
        found = "policies and Lua modules from %s/share/vigil (the install)" % prefix
        deadline = time.monotonic() + WAIT_S
        while found not in log():
            assert time.monotonic() < deadline, log()
            time.sleep(0.02)
        # The state directory (default: beside the socket) runs each
        # monitor under the keeper installed beside vigild.
        assert os.path.isdir(os.path.join(run_dir, "state")), os.listdir(run_dir)
        watch = subprocess.Popen([vigil, "--socket", sock, "watch", "--oneline"], env=env,
                                 cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        rc, out, err = cli("start", "--label", "web", "-e", "ready", "--", "sh", "-c",
                           "echo 'server ready on :3000'; exec sleep 120")
        assert rc == 0, err
        mid = out.strip().split()[-1]
        assert mid.startswith("mon_"), out
        line = b""
        deadline = time.monotonic() + WAIT_S
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0, "no notification in %ds; got %r; log:\n%s" % (WAIT_S, line, log())
            if select.select([watch.stdout], [], [], left)[0]:
                chunk = os.read(watch.stdout.fileno(), 4096)
                assert chunk, "watch ended: %s" % watch.stderr.read().decode()
                line += chunk
        text = line.decode(errors="replace")
        assert mid in text and "server ready on :3000" in text, text
        assert '<notification type=\\"monitor_line\\"' in text or \
            '<notification type="monitor_line"' in text, \
            "not worded by the installed xml policy: %s" % text
        keepers = subprocess.run(["pgrep", "-f", os.path.join(prefix, "bin", "vigil-keeper")],
                                 stdout=subprocess.PIPE).stdout.split()
        assert keepers, "no installed vigil-keeper runs the monitor"
        rc, out, err = cli("stop", mid)
        assert rc == 0, err
    finally:
        if watch is not None:
            watch.terminate()
            watch.wait(WAIT_S)
        if vigild.poll() is None:
            vigild.send_signal(signal.SIGTERM)
        status = vigild.wait(WAIT_S)
    err = vigild.stderr.read().decode(errors="replace")
    assert status == 0, "vigild exited %d: %s\n%s" % (status, err, log()[-3000:])
    assert not sanitizer_reports(log() + err), log()[-3000:]


TESTS = [
    test_the_layout_holds_every_file_a_user_needs,
    test_installed_vigild_and_vigil_work_together_after_the_tree_moves,
]


if __name__ == "__main__":
    sys.exit(run_plain_tests(TESTS, "vigil-install-"))
