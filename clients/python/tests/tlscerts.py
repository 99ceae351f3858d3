"""Certificates made for a test with the ``openssl`` command: a CA, a server
certificate for 127.0.0.1 and localhost signed by it, one for another host
(elsewhere.example), a client certificate (for a server that verifies its
clients), and a second CA that signed nothing here (to trust the wrong
one). EC P-256 keys: fast to make.

    certs = Certificates(directory)          # all made at once
    certs.ca, certs.server_cert, certs.server_key, certs.client_cert, ...
    certs.tls_block(verify=True)             # nats-server's tls { } for them
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import List

# The certificates' lifetime: a test's, with a margin for a slow machine's
# clock; they are made anew for every run.
DAYS = 2


def _openssl(args: List[str], cwd: str) -> None:
    program = shutil.which("openssl")
    if program is None:
        raise AssertionError("the openssl command is not installed (Debian: openssl)")
    done = subprocess.run([program] + args, cwd=cwd, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    if done.returncode != 0:
        raise AssertionError("openssl %s failed:\n%s" % (" ".join(args),
                                                          done.stdout.decode(errors="replace")))


class Certificates:
    """A CA and what it signed, in directory (absolute paths)."""

    def __init__(self, directory: str):
        self.dir = directory
        self.ca, self.ca_key = self._ca("vigil-test-ca")
        self.other_ca, _ = self._ca("vigil-test-other-ca")
        self.server_cert, self.server_key = self._leaf(
            "server", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            "extendedKeyUsage=serverAuth\n")
        self.elsewhere_cert, self.elsewhere_key = self._leaf(
            "elsewhere", "elsewhere.example", "subjectAltName=DNS:elsewhere.example\n"
            "extendedKeyUsage=serverAuth\n")
        self.client_cert, self.client_key = self._leaf(
            "client", "vigil-gateway", "extendedKeyUsage=clientAuth\n")

    def _path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def _ca(self, name: str):
        cert, key = self._path(name + ".pem"), self._path(name + ".key")
        _openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                  "-nodes", "-keyout", key, "-out", cert, "-days", str(DAYS),
                  "-subj", "/CN=" + name, "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,keyCertSign,cRLSign"], self.dir)
        return cert, key

    def _leaf(self, name: str, common_name: str, extensions: str):
        cert, key, csr = (self._path(name + ".pem"), self._path(name + ".key"),
                          self._path(name + ".csr"))
        ext = self._path(name + ".ext")
        with open(ext, "w") as f:
            f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                    "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n" + extensions)
        _openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                  "-keyout", key, "-out", csr, "-subj", "/CN=" + common_name], self.dir)
        _openssl(["x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key,
                  "-CAcreateserial", "-out", cert, "-days", str(DAYS), "-extfile", ext],
                 self.dir)
        return cert, key

    def tls_block(self, verify: bool = False, cert: str = "server") -> str:
        """nats-server's ``tls { }`` with the certificate of cert ("server"
        or "elsewhere"); with verify, clients must present a certificate
        the CA signed."""
        cert_file, key_file = getattr(self, cert + "_cert"), getattr(self, cert + "_key")
        lines = ['  cert_file: "%s"' % cert_file, '  key_file: "%s"' % key_file,
                 "  timeout: 10"]
        if verify:
            lines += ['  ca_file: "%s"' % self.ca, "  verify: true"]
        return "tls {\n%s\n}\n" % "\n".join(lines)
