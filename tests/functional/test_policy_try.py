#!/usr/bin/env python3
"""`vigil policy try` and `vigil policy test` (docs/policies.md section 15):
what a policy makes of a notification, offline, through the engine's own
policy code.

What a person writing a policy notices: the text `policy try` prints for a
notification is, nonce aside, the text the engine sends an agent for it (the
tests start monitors and feed their notifications back); a sample is a
notification the engine really makes; a policy that fails says which file
and line, and the agent's fallback is shown; a bad --notification is refused
naming the key; `policy test` runs the examples a policy carries and fails,
naming the example, when one does not hold; and every bundled policy passes
its own examples.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vigiltest import VIGIL, run_plain_tests, run_tests, socket_only  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
PLUGINS = os.path.join(ROOT, "plugins")
BUNDLED = ["envelope", "xml", "system_message", "events", "errors_live"]
NONCE = re.compile(r"<<<VIGIL OBSERVATION [0-9a-f]{32} (BEGIN|END)>>>")

# The crash the `crash` sample is: a Flask app's two start lines on stdout,
# then a KeyError traceback on stderr.
CRASH_SCRIPT = (
    "echo ' * Serving Flask app \"api\"'; echo ' * Running on http://127.0.0.1:5000';"
    " printf 'Traceback (most recent call last):\\n  File \"/app/api.py\", line 12, in handler\\n"
    "    return users[user_id]\\nKeyError: '\"'\"'user_id'\"'\"'\\n' >&2; sleep 0.2")
SAMPLE_CRASH_ID = "mon_sample0crash"
# Keys the engine adds when it queues a notification, which a policy never sees.
QUEUE_KEYS = ("session", "seq", "epoch", "text")


def policy(*args, stdin=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_") or k in (
        "VIGIL_TEST_RUN",)}
    return subprocess.run([VIGIL, "policy"] + list(args), capture_output=True, text=True,
                          timeout=60, env=env, input=stdin)


def unnonced(text):
    return NONCE.sub(r"<<<VIGIL OBSERVATION N \1>>>", text)


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def crash_notifications(e, policy_name):
    mid = e.call("monitor_start", command=CRASH_SCRIPT, shell=True, label="api",
                 policy=policy_name)["monitor_id"]
    end = e.main.wait_ending(mid)
    outs = [n for n in e.main.drain() if n["monitor_id"] == mid and n["type"] == "output"]
    assert len(outs) == 1, outs
    return mid, outs[0], end


@socket_only
def test_try_prints_what_the_engine_sends_for_the_same_notification(e):
    # For every bundled policy: a crash and its exit, as the engine worded
    # them, given back to `policy try` as JSON, read the same, nonce aside.
    for name in BUNDLED:
        _, out, end = crash_notifications(e, name)
        for n in (out, end):
            given = {k: v for k, v in n.items() if k not in QUEUE_KEYS}
            p = policy("try", os.path.join(PLUGINS, name + ".lua"), "--notification",
                       json.dumps(given))
            assert p.returncode == 0, (name, p.returncode, p.stderr)
            assert unnonced(p.stdout) == unnonced(n["text"]), (name, p.stdout, n["text"])
            assert NONCE.search(p.stdout), p.stdout


@socket_only
def test_try_escapes_a_given_line_as_the_engine_does(e):
    # A tab, a backslash, an ANSI colour and a bidi override: given back as
    # the wire has them (raw), each is escaped once, as the engine did.
    script = "printf 'tab\\there back\\\\slash \\033[31mred\\033[0m \\342\\200\\256x\\n'"
    for name in ("envelope", "xml", "system_message"):
        mid = e.call("monitor_start", command=script, shell=True, label="esc", notify="lines",
                     policy=name)["monitor_id"]
        e.main.wait_ending(mid)
        out = [n for n in e.main.drain() if n["monitor_id"] == mid and n["type"] == "output"][0]
        assert "\\t" in out["text"] and "\\u{202e}" in out["text"], out["text"]
        given = {k: v for k, v in out.items() if k not in QUEUE_KEYS}
        p = policy("try", os.path.join(PLUGINS, name + ".lua"), "--notification",
                   json.dumps(given))
        assert p.returncode == 0, (name, p.stderr)
        assert unnonced(p.stdout) == unnonced(out["text"]), (name, p.stdout, out["text"])


@socket_only
def test_the_crash_sample_is_what_the_engine_makes_of_a_python_crash(e):
    # (events shows the notification's time, which differs: left out.)
    for name in [b for b in BUNDLED if b != "events"]:
        mid, out, _ = crash_notifications(e, name)
        p = policy("try", os.path.join(PLUGINS, name + ".lua"), "--sample", "crash")
        assert p.returncode == 0, (name, p.returncode, p.stderr)
        want = unnonced(out["text"]).replace(mid, SAMPLE_CRASH_ID)
        assert unnonced(p.stdout) == want, (name, p.stdout, want)


def test_every_sample_renders_through_the_default_policy(tmp):
    seen = set()
    for sample in ("crash", "loop", "exit", "lines", "overload"):
        p = policy("try", os.path.join(PLUGINS, "envelope.lua"), "--sample", sample)
        assert p.returncode == 0 and NONCE.search(p.stdout), (sample, p.stdout, p.stderr)
        seen.add(p.stdout)
    assert len(seen) == 5
    loop = policy("try", os.path.join(PLUGINS, "envelope.lua"), "--sample", "loop").stdout
    assert re.search(r"^incident \d+ repeated \d+ times", loop, re.M), loop
    over = policy("try", os.path.join(PLUGINS, "envelope.lua"), "--sample", "overload").stdout
    assert "event: overload" in over and "withheld by the rate limit" in over, over
    p = policy("try", os.path.join(PLUGINS, "envelope.lua"), "--sample", "boom")
    assert p.returncode == 2 and "--sample" in p.stderr and "overload" in p.stderr, p.stderr


def test_a_failing_policy_names_its_file_and_line_and_shows_the_fallback(tmp):
    path = write(tmp, "broken.lua", "local function format(n)\n  local t = nil\n"
                                    "  return t.field\nend\nreturn { format = format }\n")
    p = policy("try", path, "--sample", "lines")
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert path + ":3:" in p.stderr, p.stderr
    # The agent still reads the notification, in the built-in envelope, and
    # then the policy_error that says why.
    assert "event: output batch" in p.stdout and "event: policy_error" in p.stdout, p.stdout
    assert "policy broken failed; the built-in envelope was used" in p.stdout, p.stdout
    # A file that does not load: its syntax error, with the line.
    bad = write(tmp, "syntax.lua", "return {\n  format = function(n)\n    return 'x' +\n")
    p = policy("try", bad)
    assert p.returncode == 1 and bad + ":" in p.stderr and p.stdout == "", (p.stdout, p.stderr)
    assert re.search(re.escape(bad) + r":\d+:", p.stderr), p.stderr


def test_a_body_that_breaks_the_prefix_rule_falls_back_like_the_engine(tmp):
    path = write(tmp, "bare.lua", "return { format = function(n)\n"
                                  "  return 'last: ' .. n.lines[#n.lines].text end }\n")
    p = policy("try", path, "--sample", "lines")
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "without a [stdout seq=N] / [stderr seq=N] prefix" in p.stderr, p.stderr
    assert "event: policy_error" in p.stdout and "last: " not in p.stdout, p.stdout


def test_a_bad_notification_is_refused_naming_the_key(tmp):
    env = os.path.join(PLUGINS, "envelope.lua")
    cases = [
        ("{", "--notification"),
        ("[1]", "--notification"),
        ('{"type": "output", "lines": [{"seq": "x", "stream": "stdout", "text": "a"}]}',
         "lines[0].seq"),
        ('{"type": "boom"}', "type"),
        ('{"type": "output", "colour": 1}', "colour"),
        ('{"type": "exit", "signal": "SIGNOPE"}', "signal"),
        ('{"type": "output", "lines": [{"seq": 1, "stream": "stdout", "text": "a"}],'
         ' "incidents": [{"id": 1, "kind": "crash", "first_seq": 5, "last_seq": 9}]}',
         "incidents[0]"),
    ]
    for given, key in cases:
        p = policy("try", env, "--notification", given)
        assert p.returncode == 2 and key in p.stderr and p.stdout == "", (given, p.returncode,
                                                                         p.stdout, p.stderr)
    p = policy("try", env, "--sample", "crash", "--notification", '{"type": "output"}')
    assert p.returncode == 2 and "--sample" in p.stderr, p.stderr


def test_policy_test_fails_naming_the_example_that_does_not_hold(tmp):
    path = write(tmp, "shout.lua", """
local envelope = require "vigil.envelope"
return {
  format = function(n) return "shout: " .. n.type:upper() .. "\\n" .. envelope.body(n) end,
  route = function(n) return "idle" end,
  examples = {
    { name = "a crash is shouted", sample = "crash", must = { "shout: OUTPUT", "KeyError" },
      must_not = { "shout: EXIT" }, route = "idle" },
    { name = "the exit is quiet", sample = "exit", must = { "exited with code 0" } },
    { name = "plain lines", notification = { type = "output", batch = 3,
        lines = { { seq = 7, stream = "stdout", text = "hello" } } },
      must = { "[stdout seq=7] hello", "batch 3" } },
  },
}
""")
    p = policy("test", path)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert re.search(r"^ok .*a crash is shouted", p.stdout, re.M), p.stdout
    assert re.search(r"^ok .*plain lines", p.stdout, re.M), p.stdout
    assert re.search(r"^FAIL .*the exit is quiet", p.stdout, re.M), p.stdout
    assert '"exited with code 0"' in p.stdout and "1 failed" in p.stdout, p.stdout
    fixed = write(tmp, "shout.lua", open(path).read().replace('"exited with code 0"',
                                                              '"exited with code 1"'))
    p = policy("test", fixed)
    assert p.returncode == 0 and "3 passed, 0 failed" in p.stdout, (p.stdout, p.stderr)


def test_policy_test_checks_the_examples_table_and_the_route(tmp):
    path = write(tmp, "routes.lua", """
return {
  route = function(n) return "live_safe" end,
  examples = { { name = "goes live", sample = "lines", route = "idle" },
               { sample = "crash", colour = "red" } },
}
""")
    p = policy("test", path)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "goes live" in p.stdout and '"live_safe"' in p.stdout, p.stdout
    assert "colour" in p.stdout + p.stderr, (p.stdout, p.stderr)
    none = write(tmp, "none.lua", "return {}\n")
    p = policy("test", none)
    assert p.returncode == 1 and "no examples" in p.stdout + p.stderr, (p.stdout, p.stderr)


def test_every_bundled_policy_passes_its_examples(tmp):
    names = sorted(f[:-4] for f in os.listdir(PLUGINS) if f.endswith(".lua"))
    assert set(BUNDLED) <= set(names), names
    for name in names:
        p = policy("test", os.path.join(PLUGINS, name + ".lua"))
        assert p.returncode == 0, (name, p.stdout, p.stderr)
        m = re.search(r"(\d+) passed, 0 failed", p.stdout)
        assert m and int(m.group(1)) >= 2, (name, p.stdout)


if __name__ == "__main__":
    rc = run_tests([
        test_try_prints_what_the_engine_sends_for_the_same_notification,
        test_try_escapes_a_given_line_as_the_engine_does,
        test_the_crash_sample_is_what_the_engine_makes_of_a_python_crash,
    ])
    rc |= run_plain_tests([
        test_every_sample_renders_through_the_default_policy,
        test_a_failing_policy_names_its_file_and_line_and_shows_the_fallback,
        test_a_body_that_breaks_the_prefix_rule_falls_back_like_the_engine,
        test_a_bad_notification_is_refused_naming_the_key,
        test_policy_test_fails_naming_the_example_that_does_not_hold,
        test_policy_test_checks_the_examples_table_and_the_route,
        test_every_bundled_policy_passes_its_examples,
    ])
    sys.exit(rc)
