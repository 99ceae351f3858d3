#!/usr/bin/env python3
"""TLS on the fleet's NATS connections (docs/fleet.md section 5): vigild's
nats.tls_ca, nats.tls_cert and nats.tls_key (and --nats-tls-*), the CLI's
$VIGIL_NATS_CA, $VIGIL_NATS_CERT and $VIGIL_NATS_KEY, and a tls:// URL.

Each test makes a private CA, a server certificate for 127.0.0.1 and a
client certificate with the openssl command in its temporary directory,
starts a nats-server with JetStream and a `tls {}` block (test_fleet_rpc's
starter, stopped however the test ends), and asserts what a person sees:
an engine that trusts the CA publishes and answers, and `vigil --nats ...
list` and `vigil watch --nats` reach it; without the CA the engine does not
start and the CLI fails, each naming the certificate problem and the
setting that would help; with a server that asks for client certificates
(verify: true) the certificate and key get in and their absence does not.
"""

import json
import os
import queue
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_fleet_rpc import NatsServer  # noqa: E402  (the nats-server starter)
from vigiltest import VIGIL, VIGILD, Engine, default_config, run_plain_tests  # noqa: E402

DEADLINE = 60  # seconds: CI is a loaded 2-core machine
# OpenSSL's words for a server certificate signed by a CA not trusted.
UNTRUSTED = "unable to get local issuer certificate"


def openssl(tmp, *args):
    p = subprocess.run(["openssl", *args], cwd=tmp, capture_output=True, text=True,
                       timeout=DEADLINE)
    assert p.returncode == 0, ("openssl", args, p.stderr)


def make_pki(tmp):
    """A CA, a server certificate for 127.0.0.1 and a client certificate,
    all signed by the CA (P-256 keys: quick to make). Returns their paths."""
    pki = {name: os.path.join(tmp, name) for name in
           ("ca.pem", "ca.key", "server.pem", "server.key", "client.pem", "client.key")}
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl(tmp, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=vigil test CA")
    for who, cn, ext in (("server", "127.0.0.1",
                          "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
                         ("client", "vigil-test-client", "extendedKeyUsage=clientAuth\n")):
        with open(os.path.join(tmp, who + ".ext"), "w") as f:
            f.write(ext)
        openssl(tmp, "req", *ec, "-keyout", who + ".key", "-out", who + ".csr", "-subj",
                "/CN=" + cn)
        openssl(tmp, "x509", "-req", "-in", who + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-out", who + ".pem", "-extfile", who + ".ext")
    return pki


def tls_server(tmp, pki, verify=False):
    """A nats-server with JetStream that speaks only TLS, with the test
    CA's server certificate; verify: it asks for a client certificate
    signed by that CA. The handshake's timeout is generous (the default
    half second is short for a loaded machine and a sanitized client)."""
    config = "tls {\n  cert_file: %s\n  key_file: %s\n  ca_file: %s\n  timeout: 10\n%s}\n" % (
        json.dumps(pki["server.pem"]), json.dumps(pki["server.key"]), json.dumps(pki["ca.pem"]),
        "  verify: true\n" if verify else "")
    return NatsServer(tmp, config)


def tls_url(server):
    return "tls://127.0.0.1:%d" % server.port


def plain_url(server):
    return "nats://127.0.0.1:%d" % server.port


def cli_env(tmp, **tls):
    """The CLI's environment: no engine on a socket (everything goes
    through NATS), no TLS variable inherited, the given ones set."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIGIL_NATS_CA", "VIGIL_NATS_CERT", "VIGIL_NATS_KEY", "VIGIL_NATS_CREDS")}
    env["VIGIL_SOCKET"] = os.path.join(tmp, "no-engine-here.sock")
    env.update(tls)
    return env


def vigil(tmp, env, *args):
    p = subprocess.run([VIGIL, *args], capture_output=True, text=True, timeout=DEADLINE,
                       env=env, cwd=tmp)
    for report in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        assert report not in p.stderr, p.stderr
    return p


def engine_with(server, url, extra=(), **nats):
    """A vigild publishing to server as engine e1, nats.* from nats."""
    cfg = default_config(nats=nats) if nats else default_config()
    return Engine("socket", cfg, extra_args=["--nats", url, "--nats-engine", "e1", *extra])


def engine_fails(tmp, server, url, config_nats=None, extra=()):
    """Runs a vigild that should not start; returns its stderr."""
    path = os.path.join(tmp, "failing.lua")
    cfg = default_config(nats=config_nats) if config_nats else default_config()
    from vigiltest import lua_value
    with open(path, "w") as f:
        f.write("return " + lua_value(cfg) + "\n")
    p = subprocess.run([VIGILD, "--config", path, "--listen", os.path.join(tmp, "f.sock"),
                        "--no-state", "--nats", url, "--nats-engine", "e1", *extra],
                       capture_output=True, text=True, timeout=DEADLINE)
    assert p.returncode != 0, "vigild started: " + p.stderr
    for report in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        assert report not in p.stderr, p.stderr
    return p.stderr


def close_all(engine, server):
    """Stops what a test started; the engine's sanitizer reports fail it."""
    reports = []
    try:
        if engine is not None:
            reports = engine.close()
    finally:
        server.close()
    assert not reports, "vigild's sanitizer reported:\n" + "\n".join(reports)


class Watch:
    """`vigil watch --nats ... --json`, its stdout read by a thread so the
    test waits for a line with a deadline."""

    def __init__(self, tmp, env, url, session):
        self.proc = subprocess.Popen([VIGIL, "watch", "--nats", url, "--session", session,
                                      "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, cwd=tmp)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.decode("utf-8", "replace"))
        self.lines.put(None)

    def wait_for(self, text):
        """The first line holding text (fails past the deadline or at EOF)."""
        deadline = time.monotonic() + DEADLINE
        seen = []
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError("%r never came; lines: %r" % (text, seen))
            assert line is not None, "the watch ended: %r; stderr: %s" % (
                seen, self.proc.stderr.read().decode())
            if text in line:
                return line
            seen.append(line)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


# --- a server with a private CA ---------------------------------------------

def test_engine_and_cli_trust_the_private_ca(tmp):
    pki = make_pki(tmp)
    server = tls_server(tmp, pki)
    engine = watch = None
    try:
        # nats:// with nats.tls_ca: the setting alone asks for TLS.
        engine = engine_with(server, plain_url(server), tls_ca=pki["ca.pem"])
        info = engine.call("api_info")["nats"]
        assert info["tls"] is True and info["state"] == "connected", info
        env = cli_env(tmp, VIGIL_NATS_CA=pki["ca.pem"])
        watch = Watch(tmp, env, tls_url(server), "s1")
        engine.call("session_open", session="s1")
        mid = engine.call("monitor_start", session="s1",
                          argv=["sh", "-c", "echo Error over-tls-marker; sleep 60"],
                          patterns=["Error"])["monitor_id"]
        # A notification went engine -> broker -> watch, both ways TLS.
        note = json.loads(watch.wait_for("over-tls-marker"))
        assert note.get("monitor_id") == mid, note
        # A request: vigil --nats tls://... --engine e1 list.
        p = vigil(tmp, env, "--nats", tls_url(server), "--engine", "e1", "--session", "s1", "list")
        assert p.returncode == 0 and mid in p.stdout, (p.returncode, p.stdout, p.stderr)

        # Without the CA the CLI cannot verify the server, and says so,
        # naming the variable that would help.
        bare = cli_env(tmp)
        p = vigil(tmp, bare, "--nats", tls_url(server), "--engine", "e1", "--session", "s1",
                  "list")
        assert p.returncode == 1, (p.returncode, p.stderr)
        assert UNTRUSTED in p.stderr and "$VIGIL_NATS_CA" in p.stderr, p.stderr
        p = vigil(tmp, bare, "watch", "--nats", tls_url(server), "--session", "s1")
        assert p.returncode == 1, (p.returncode, p.stderr)
        assert UNTRUSTED in p.stderr and "$VIGIL_NATS_CA" in p.stderr, p.stderr
        # A CA file that is not there is named, before any connect.
        missing = os.path.join(tmp, "nope.pem")
        p = vigil(tmp, cli_env(tmp, VIGIL_NATS_CA=missing), "--nats", tls_url(server),
                  "--engine", "e1", "list")
        assert p.returncode == 1 and "$VIGIL_NATS_CA %s cannot be loaded" % missing in p.stderr, \
            p.stderr
        # A certificate without its key is refused as such.
        p = vigil(tmp, cli_env(tmp, VIGIL_NATS_CA=pki["ca.pem"], VIGIL_NATS_CERT=pki["client.pem"]),
                  "watch", "--nats", tls_url(server), "--session", "s1")
        assert p.returncode == 1 and "$VIGIL_NATS_CERT and $VIGIL_NATS_KEY go together" in \
            p.stderr, p.stderr
    finally:
        if watch is not None:
            watch.close()
        close_all(engine, server)


def test_engine_without_the_ca_does_not_start(tmp):
    pki = make_pki(tmp)
    server = tls_server(tmp, pki)
    try:
        # tls:// and no CA: the server's certificate does not verify.
        err = engine_fails(tmp, server, tls_url(server))
        assert UNTRUSTED in err and "nats.tls_ca" in err, err
        # A CA file that cannot be loaded stops the start, named.
        missing = os.path.join(tmp, "nope.pem")
        err = engine_fails(tmp, server, plain_url(server), {"tls_ca": missing})
        assert "nats.tls_ca %s cannot be loaded" % missing in err, err
        # The flag names it the same way.
        err = engine_fails(tmp, server, plain_url(server), extra=["--nats-tls-ca", missing])
        assert "nats.tls_ca %s cannot be loaded" % missing in err, err
    finally:
        server.close()
    # The config's checks: an absolute path; a certificate with its key.
    for nats, want in (({"tls_ca": "ca.pem"}, 'nats.tls_ca must be an absolute path, got "ca.pem"'),
                       ({"tls_cert": pki["client.pem"]},
                        "nats.tls_cert and nats.tls_key go together")):
        path = os.path.join(tmp, "check.lua")
        from vigiltest import lua_value
        with open(path, "w") as f:
            f.write("return " + lua_value(default_config(nats=nats)) + "\n")
        p = subprocess.run([VIGILD, "--check-config", path], capture_output=True, text=True,
                           timeout=DEADLINE)
        assert p.returncode == 1 and want in p.stderr + p.stdout, (p.stdout, p.stderr)
    p = subprocess.run([VIGILD, "--no-config", "--nats", "tls://127.0.0.1:1", "--nats-tls-key",
                        pki["client.key"]], capture_output=True, text=True, timeout=DEADLINE)
    assert p.returncode == 2 and "--nats-tls-cert and --nats-tls-key go together" in p.stderr, \
        p.stderr


# --- a server that asks for client certificates -----------------------------

def test_mutual_tls_lets_in_the_certificate_and_refuses_its_absence(tmp):
    pki = make_pki(tmp)
    server = tls_server(tmp, pki, verify=True)
    engine = None
    try:
        # The flags this time (the config's keys in the test above).
        engine = engine_with(server, tls_url(server), extra=[
            "--nats-tls-ca", pki["ca.pem"], "--nats-tls-cert", pki["client.pem"],
            "--nats-tls-key", pki["client.key"]])
        info = engine.call("api_info")["nats"]
        assert info["tls"] is True and info["state"] == "connected", info
        full = cli_env(tmp, VIGIL_NATS_CA=pki["ca.pem"], VIGIL_NATS_CERT=pki["client.pem"],
                       VIGIL_NATS_KEY=pki["client.key"])
        p = vigil(tmp, full, "--nats", tls_url(server), "--engine", "e1", "sessions")
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
        # Trusting the server is not enough: it wants a certificate.
        ca_only = cli_env(tmp, VIGIL_NATS_CA=pki["ca.pem"])
        p = vigil(tmp, ca_only, "--nats", tls_url(server), "--engine", "e1", "sessions")
        assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
        assert "does it ask for a client certificate? $VIGIL_NATS_CERT" in p.stderr, p.stderr
        err = engine_fails(tmp, server, tls_url(server), {"tls_ca": pki["ca.pem"]})
        assert "does it ask for a client certificate? nats.tls_cert" in err, err
    finally:
        close_all(engine, server)


if __name__ == "__main__":
    sys.exit(run_plain_tests([
        test_engine_and_cli_trust_the_private_ca,
        test_engine_without_the_ca_does_not_start,
        test_mutual_tls_lets_in_the_certificate_and_refuses_its_absence,
    ], prefix="vigil-tls-"))
