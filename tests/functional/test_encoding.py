"""Every string the engine sends is valid UTF-8 (issue 7, point 7): caller
bytes that are not UTF-8 come back escaped wherever an error message echoes
them, labels and descriptions that are not clean text are refused, and a
strict decoder on another connection of the same session never chokes.

The harness's reader decodes strictly (msgpack raw=False, unicode_errors
'strict'): one invalid string ends that connection's reader, so a request
whose answer is not valid UTF-8 gets no answer here."""

import os
import subprocess
import sys

import msgpack

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import (ERROR_CODES, RpcError, VIGILD, default_config, lua_value, run_tests,
                       scratch_dir,
                       socket_only)


def call_bytes(c, msgid, method, args):
    """Sends a request whose strings may hold any bytes: bytes are packed as
    msgpack str (use_bin_type=False), as a careless client would."""
    params = [] if args is None else [args]
    c.send_raw(msgpack.packb([0, msgid, method, params], use_bin_type=False))
    return c.wait_response(msgid, timeout=10)


def expect_bytes_error(c, msgid, code_name, method, args):
    try:
        call_bytes(c, msgid, method, args)
    except RpcError as err:
        assert err.code == ERROR_CODES[code_name], "%s %r: %s" % (method, args, err)
        assert err.message.startswith(code_name + ": "), err.message
        return err.message
    raise AssertionError("%s %r succeeded" % (method, args))


# (what is echoed, method, args, the error, a visible piece of the escaped echo)
ECHOES = [
    ("the method name", b"ping\xff", None, "unknown_method", 'no method "ping\\xff"'),
    ("an argument key", "ping", {b"colo\xffr": 1}, "invalid_params", '"colo\\xffr"'),
    ("a session name", "session_open", {"session": b"bad\xfe"}, "invalid_params", "bad\\xfe"),
    ("a session argument", "ping", {"session": b"no\xc3ne"}, "not_found", "no\\xc3ne"),
    ("a monitor_id", "monitor_status", {"monitor_id": b"mon_\xff\xfe"}, "not_found",
     "mon_\\xff\\xfe"),
    ("argv[0]", "monitor_start", {"argv": [b"prog\xff"]}, "denied", "prog\\xff"),
    ("command", "monitor_start", {"command": b"prog\xe2\x28 x"}, "denied", "prog\\xe2("),
    ("cwd", "monitor_start", {"argv": ["echo"], "cwd": b"/nonexistent\xff"}, "invalid_params",
     "/nonexistent\\xff"),
    ("a backslash next to a bad byte", "ping", {b"a\\x\xff": 1}, "invalid_params",
     '"a\\\\x\\xff"'),
]


def test_every_echo_of_caller_bytes_is_valid_utf8(e):
    c = e.main
    for i, (what, method, args, code, shown) in enumerate(ECHOES):
        try:
            message = expect_bytes_error(c, 900 + i, code, method, args)
        except TimeoutError:
            raise AssertionError("echoing %s: no strictly decodable answer (the reader "
                                 "stopped)" % what)
        assert shown in message, (what, message)
    assert c.call("ping")["api_level"] == 1


# (argument, value, what the message says)
BAD_TEXT = [
    (b"web\xff", "not valid UTF-8 at byte 3"),
    (b"\xc3", "not valid UTF-8 at byte 0"),
    (b"web\x1b[31m", "control character at byte 3"),
    (b"two\nlines", "control character at byte 3"),
    (b"del\x7f", "control character at byte 3"),
    ("c1\u0085".encode(), "control character at byte 2"),
]


def test_label_and_description_must_be_clean_text(e):
    c = e.main
    msgid = 1000
    for method, base in (("monitor_start", {"argv": ["echo", "hi"]}),
                         ("process_run", {"argv": ["echo", "hi"], "background": True})):
        for key in ("label", "description"):
            if method == "process_run" and key == "description":
                continue
            for value, says in BAD_TEXT:
                msgid += 1
                args = dict(base)
                args[key] = value
                try:
                    message = expect_bytes_error(c, msgid, "invalid_params", method, args)
                except TimeoutError:
                    raise AssertionError("%s %s=%r: no decodable answer" % (method, key, value))
                assert message.startswith("invalid_params: %s: " % key), message
                assert says in message, (key, value, message)
    # Nothing was started by any of them.
    assert c.call("monitor_list", include_exited=True)["total"] == 0
    # Clean text, non-ASCII included, is fine.
    r = c.call("monitor_start", argv=["echo", "hi"], label="café ☕", description="naïve")
    assert r["label"] == "café ☕"
    assert c.call("monitor_status", monitor_id=r["monitor_id"])["description"] == "naïve"


@socket_only
def test_a_bad_label_cannot_break_another_connection_of_the_session(e):
    a = e.connect()
    b = e.connect()
    a.call("session_open", session="shared")
    b.call("session_open", session="shared")
    try:
        call_bytes(a, 77, "monitor_start", {"argv": ["echo", "hi"], "label": b"web\xff",
                                            "notify": "lines"})
    except RpcError as err:
        assert err.code == ERROR_CODES["invalid_params"], err
    except TimeoutError:
        pass  # a's own reader choked; b is what this test is about
    mid = b.call("monitor_start", argv=["echo", "after"], label="web", notify="lines")["monitor_id"]
    end = b.wait_ending(mid, timeout=20)
    assert end["label"] == "web"
    assert not b.closed, "b's strict decoder was broken by another member's label"


def test_a_config_monitor_label_must_be_clean_text(e):
    d = scratch_dir("vigil-cfg-")
    cfg = default_config()
    path = os.path.join(d, "c.lua")
    for label, says in (('"web\\255"', "not valid UTF-8 at byte 3"),
                        ('"web\\27[31m"', "control character at byte 3")):
        text = ("local c = " + lua_value(cfg) + "\nc.monitors = {{session = \"boot\", label = "
                + label + ", command = \"echo hi\"}}\nreturn c\n")
        with open(path, "w") as f:
            f.write(text)
        p = subprocess.run([VIGILD, "--check-config", path], capture_output=True, timeout=20)
        out = (p.stdout + p.stderr).decode("utf-8")  # strict: the message itself is UTF-8
        assert p.returncode == 1, out
        assert "label" in out and says in out, out


test_a_config_monitor_label_must_be_clean_text.transports = ("stdio",)


if __name__ == "__main__":
    sys.exit(run_tests([
        test_every_echo_of_caller_bytes_is_valid_utf8,
        test_label_and_description_must_be_clean_text,
        test_a_bad_label_cannot_break_another_connection_of_the_session,
        test_a_config_monitor_label_must_be_clean_text,
    ]))
