"""The NATS connection of the Python client proving who it is (an nkey
seed, a creds file) and who the server is (TLS), against a real nats-server
(Debian's 2.9), as docs/fleet.md section 5 sets a fleet up:

- a user the server knows by its nkey connects with its seed file; a wrong
  seed is refused with NatsAuthError, and so is a client with none;
- in operator mode (operator, account and user JWTs made and signed here,
  natsidentity.py), a vigild --nats with a creds file of its own serves a
  gateway whose creds file and TLS reach it: Client.connect_nats calls it
  and fleet_subscriber reads the session's notifications; the file is read
  again at a reconnect; a user signed by an account the operator never
  signed, or whose JWT expired, is refused saying which;
- TLS with certificates made here (tlscerts.py): the test's CA verifies the
  server; without it, or with another CA, or for another host name, a
  certificate error that says so; tls:// to a plain server refused; a
  server that verifies clients takes the client certificate and refuses
  its absence; one thread reading while two others send over one TLS
  connection;
- hostile creds and seed files (cut short, oversized, a bad checksum, an
  account's seed, two users' halves, a FIFO...), or the secret given where
  its path belongs: each a ValueError naming the file and never the seed,
  and no connection is even opened; a server's nonce that is no challenge
  is not signed;
- without the cryptography package, a clear ImportError naming the Debian
  package, and importing the package does not load it.

Every process a test starts is stopped by it, even on failure; every wait
is on an event, with a generous deadline."""

import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from natsfixture import NatsServer
from natsidentity import Nkey, OperatorAccounts, creds_text, user_jwt, write_private
from support import EVENT_TIMEOUT_S, PACKAGE_ROOT, PYTHON, read_until_ending, workdir
from test_fleet_rpc import ENGINE, NatsEngine
from tlscerts import Certificates
from test_fleet import FakeServer
from vigil_client import (Client, FleetSubscriber, NatsAuthError, NatsConnection,
                          NatsConnectionError, NatsProtocolError, NatsTLSError)
from vigil_client.nats_auth import CREDS_FILE_MAX_BYTES


class Listener:
    """A loopback port that listens and never accepts: a connection made to
    it waits in the backlog, where select sees it. A client that opens none
    has sent nothing."""

    def __init__(self, test):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        test.addCleanup(self.sock.close)
        self.url = "nats://127.0.0.1:%d" % self.sock.getsockname()[1]

    def was_connected(self):
        readable, _, _ = select.select([self.sock], [], [], 0)
        return bool(readable)


class NkeyUser(unittest.TestCase):
    def setUp(self):
        self.work = workdir(self)
        self.user = Nkey("user")
        self.server = NatsServer.for_test(
            self, "authorization { users: [ { nkey: %s } ] }\n" % self.user.public,
            jetstream=False)

    def seed_file(self, name, seed):
        return write_private(os.path.join(self.work.path, name), seed + "\n")

    def test_a_seed_proves_the_user_and_a_wrong_one_is_refused(self):
        conn = NatsConnection.connect(self.server.url, nkey_seed=self.seed_file("u.nk",
                                                                                self.user.seed))
        self.addCleanup(conn.close)
        sid = conn.subscribe("hello")
        conn.publish("hello", b"from an nkey user")
        self.assertEqual(conn.next_msg(sid, EVENT_TIMEOUT_S).data, b"from an nkey user")

        other = Nkey("user")
        wrong = self.seed_file("other.nk", other.seed)
        with self.assertRaises(NatsAuthError) as refused:
            NatsConnection.connect(self.server.url, nkey_seed=wrong)
        message = str(refused.exception)
        self.assertIn("Authorization Violation", message)
        self.assertIn("nkey_seed file %s, user %s" % (wrong, other.public), message)
        self.assertNotIn(other.seed[2:20], message)

        with self.assertRaisesRegex(NatsAuthError, "the server asked for an nkey signature: "
                                                   "give creds= or nkey_seed="):
            NatsConnection.connect(self.server.url)


class OperatorMode(unittest.TestCase):
    """nats-server in operator mode with an account FLEET that has
    JetStream, TLS offered (allow_non_tls: the engine connects in the
    clear, nats.c having no CA of the test's to verify with)."""

    def setUp(self):
        self.work = workdir(self)
        self.certs = Certificates(self.work.path)
        self.accounts = OperatorAccounts(self.work.path)
        self.server = NatsServer.for_test(
            self, self.accounts.config + "allow_non_tls: true\n" + self.certs.tls_block())

    def test_a_gateway_with_creds_over_tls_calls_the_engine_and_reads_its_notifications(self):
        NatsEngine(self, self.work, self.server.url,
                   nats_settings={"creds": self.accounts.creds("engine-e1")})
        gateway = self.accounts.creds("gw")
        c = Client.connect_nats(self.server.url, ENGINE, session="chat", creds=gateway,
                                tls_ca=self.certs.ca, call_timeout=EVENT_TIMEOUT_S)
        self.addCleanup(c.close)
        self.assertEqual(c.nats._conn.tls_version, "TLSv1.3")
        self.assertEqual(c.ping()["api_level"], 1)
        sub = c.fleet_subscriber("gw-chat")          # the same creds and tls_ca
        self.addCleanup(sub.close)
        self.assertEqual(sub._conn.tls_version, "TLSv1.3")
        mon = c.monitor_start(argv=["sh", "-c", "echo 'Error: out of cheese'"],
                              patterns=["^Error:"])
        seen = read_until_ending(sub)
        self.assertEqual({(n.engine, n.session, n.monitor_id) for n in seen},
                         {(ENGINE, "chat", mon["monitor_id"])})
        self.assertIn("Error: out of cheese", "".join(n.text for n in seen))
        # Another user for the reader: its creds replace the client's, and
        # the client's TLS options stay.
        other = c.fleet_subscriber("gw-other", creds=self.accounts.creds("gw-other"))
        self.addCleanup(other.close)
        self.assertEqual(other._conn.tls_version, "TLSv1.3")

        # The file is read again at each connect: a renewed one is used,
        # one of a user the operator does not know is refused.
        rogue = Nkey("account")
        user = Nkey("user")
        write_private(gateway, creds_text(user_jwt(rogue, user, "gw"), user.seed))
        with self.assertRaisesRegex(NatsAuthError, "signed by %s" % rogue.public):
            c.reconnect(wait_s=EVENT_TIMEOUT_S)
        os.replace(self.accounts.creds("gw-renewed"), gateway)
        c.reconnect(wait_s=EVENT_TIMEOUT_S)
        self.assertEqual(c.ping()["api_level"], 1)

    def test_users_the_operator_did_not_sign_or_whose_jwt_expired_are_refused(self):
        rogue = Nkey("account")
        stranger = self.accounts.creds("stranger", account=rogue)
        with self.assertRaises(NatsAuthError) as refused:
            NatsConnection.connect(self.server.url, creds=stranger)
        self.assertRegex(str(refused.exception),
                         r"refused the credentials: Authorization Violation \(creds file %s, "
                         r"user U[A-Z2-7]{55}, signed by %s\)" % (stranger, rogue.public))
        with self.assertRaises(NatsAuthError):
            FleetSubscriber(self.server.url, "gw", creds=stranger, tls_ca=self.certs.ca)
        expired = self.accounts.creds("expired", expires=int(time.time()) - 60)
        with self.assertRaisesRegex(NatsAuthError, "whose JWT expired at "):
            NatsConnection.connect(self.server.url, creds=expired)
        # The fleet's own users are let in.
        conn = NatsConnection.connect(self.server.url, creds=self.accounts.creds("gw"))
        self.addCleanup(conn.close)
        conn.flush(EVENT_TIMEOUT_S)


class Tls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        directory = tempfile.mkdtemp(prefix="vigil-py-tls-")
        cls.addClassCleanup(shutil.rmtree, directory, True)
        cls.certs = Certificates(directory)

    def server(self, config):
        return NatsServer.for_test(self, config, jetstream=False)

    def connect(self, url, **kwargs):
        conn = NatsConnection.connect(url, timeout=EVENT_TIMEOUT_S, **kwargs)
        self.addCleanup(conn.close)
        return conn

    def test_the_server_is_verified_against_the_given_ca(self):
        server = self.server(self.certs.tls_block())
        for url in (server.url, server.url.replace("nats://", "tls://"),
                    "tls://localhost:%d" % server.port):
            with self.subTest(url=url):
                conn = self.connect(url, tls_ca=self.certs.ca)
                self.assertEqual(conn.tls_version, "TLSv1.3")
                sid = conn.subscribe("big")
                payload = os.urandom(200 << 10)              # many TLS records
                conn.publish("big", payload)
                self.assertEqual(conn.next_msg(sid, EVENT_TIMEOUT_S).data, payload)

        with self.assertRaises(NatsTLSError) as untrusted:
            NatsConnection.connect(server.url, timeout=EVENT_TIMEOUT_S)
        self.assertRegex(str(untrusted.exception),
                         r"the server's certificate is not trusted: .* \(verified against the "
                         r"system's CAs; give tls_ca= the CA that signed it\)")
        with self.assertRaisesRegex(NatsTLSError, r"not trusted: .* \(verified against tls_ca "
                                    + re.escape(self.certs.other_ca)):
            NatsConnection.connect(server.url, tls_ca=self.certs.other_ca)

        elsewhere = self.server(self.certs.tls_block(cert="elsewhere"))
        with self.assertRaisesRegex(NatsTLSError, "the server's certificate is not for this "
                                                  "host .*127.0.0.1"):
            NatsConnection.connect(elsewhere.url, tls_ca=self.certs.ca)

    def test_tls_asked_of_a_plain_server_fails_clearly(self):
        plain = self.server(None)
        listener = Listener(self)
        tls_url = plain.url.replace("nats://", "tls://")
        with self.assertRaisesRegex(NatsTLSError, r"^tls://127.0.0.1:\d+ does not offer TLS, "
                                                  r"which the tls:// URL asks for"):
            NatsConnection.connect(tls_url)
        with self.assertRaisesRegex(NatsTLSError, "does not offer TLS, which tls_ca asks for"):
            NatsConnection.connect(plain.url, tls_ca=self.certs.ca)
        with self.assertRaisesRegex(ValueError, "tls_ca /nonexistent.pem cannot be loaded"):
            NatsConnection.connect(listener.url, tls_ca="/nonexistent.pem")
        with self.assertRaisesRegex(ValueError, "tls_key is given without tls_cert"):
            NatsConnection.connect(listener.url, tls_key=self.certs.client_key)
        self.assertFalse(listener.was_connected())

    def test_a_server_that_verifies_clients(self):
        server = self.server(self.certs.tls_block(verify=True))
        conn = self.connect(server.url, tls_ca=self.certs.ca, tls_cert=self.certs.client_cert,
                            tls_key=self.certs.client_key)
        conn.flush(EVENT_TIMEOUT_S)
        with self.assertRaisesRegex(NatsTLSError, "verifies its clients' certificates "
                                                  r"\(tls_verify\): give tls_cert= and tls_key="):
            NatsConnection.connect(server.url, tls_ca=self.certs.ca)
        # A certificate the server does not take (its own: not for a
        # client). TLS 1.3 refuses it after the client's side of the
        # handshake is done: the refusal, or the connection reset with it.
        with self.assertRaisesRegex(NatsConnectionError, "certificate"):
            NatsConnection.connect(server.url, tls_ca=self.certs.ca,
                                   tls_cert=self.certs.server_cert,
                                   tls_key=self.certs.server_key)

    def test_a_reader_and_two_senders_share_a_tls_connection(self):
        server = self.server(self.certs.tls_block())
        conn = self.connect(server.url, tls_ca=self.certs.ca)
        sid = conn.subscribe("load.*")
        conn.flush(EVENT_TIMEOUT_S)
        count = 300

        def send(name):
            for i in range(count):
                conn.publish("load." + name, b"%s %d " % (name.encode(), i) + b"x" * (i * 37))

        senders = [threading.Thread(target=send, args=(name,)) for name in ("a", "b")]
        for t in senders:
            t.start()
        got = {"a": [], "b": []}
        deadline = time.monotonic() + EVENT_TIMEOUT_S
        while len(got["a"]) + len(got["b"]) < 2 * count:
            left = deadline - time.monotonic()
            self.assertGreater(left, 0, "received %d and %d" % (len(got["a"]), len(got["b"])))
            msg = conn.next_msg(sid, left)
            if msg is not None:
                name, seq, rest = msg.data.split(b" ", 2)
                self.assertEqual(rest, b"x" * (int(seq) * 37))
                got[name.decode()].append(int(seq))
        for t in senders:
            t.join(EVENT_TIMEOUT_S)
        self.assertEqual(got, {"a": list(range(count)), "b": list(range(count))})


class HostileFiles(unittest.TestCase):
    """Creds and seed files that are not what they claim: each refused
    before a connection is opened, naming the file, never the seed."""

    def setUp(self):
        self.work = workdir(self)
        self.listener = Listener(self)
        self.user = Nkey("user")
        self.jwt = user_jwt(Nkey("account"), self.user, "gw")
        self.good = creds_text(self.jwt, self.user.seed)

    def file(self, name, content):
        path = os.path.join(self.work.path, name)
        with open(path, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
        return path

    def refused(self, expected, path, argument="creds"):
        started = time.monotonic()
        with self.assertRaises(ValueError) as refused:
            NatsConnection.connect(self.listener.url, timeout=EVENT_TIMEOUT_S,
                                   **{argument: path})
        self.assertLess(time.monotonic() - started, EVENT_TIMEOUT_S / 3)
        message = str(refused.exception)
        self.assertRegex(message, expected)
        self.assertIn(path, message)
        for secret in (self.user.seed[2:20], self.user.seed[-20:]):
            self.assertNotIn(secret, message)
        self.assertFalse(self.listener.was_connected(), "a connection was opened")

    def test_bad_creds_files_are_named_and_nothing_is_sent(self):
        seed = self.user.seed
        damaged = seed[:20] + ("A" if seed[20] != "A" else "B") + seed[21:]
        account_seed = Nkey("account").seed
        another = Nkey("user")
        cases = [
            ("cut-in-seed", self.good[:self.good.index(seed) + 30],
             "the USER NKEY SEED block does not end with ------END USER NKEY SEED------"),
            ("short-seed", creds_text(self.jwt, seed[:40]),
             "the seed is not valid: it is not a seed: a seed is 58 characters of A-Z and "
             "2-7, this is 40"),
            ("cut-after-jwt", self.good[:self.good.index("****")],
             "has no line -----BEGIN USER NKEY SEED-----"),
            ("cut-in-jwt", self.good[:self.good.index(self.jwt) + 100],
             "the NATS USER JWT block does not end with ------END NATS USER JWT------"),
            ("oversized", self.good + "#" * CREDS_FILE_MAX_BYTES,
             "is over %d bytes \\(CREDS_FILE_MAX_BYTES\\)" % CREDS_FILE_MAX_BYTES),
            ("bad-crc", self.good.replace(seed, damaged),
             r"its checksum \(CRC-16\) does not match"),
            ("account-seed", creds_text(self.jwt, account_seed),
             "the seed is an account seed, not a user's"),
            ("two-users", creds_text(self.jwt, another.seed),
             "the JWT is for the user .*, but the seed is the key of %s" % another.public),
            ("two-jwts", self.good + self.good[:self.good.index("****")],
             "has 2 BEGIN NATS USER JWT blocks"),
            ("not-a-jwt", creds_text("not.a jwt.at-all", seed), "the JWT block is not a JWT"),
            ("empty", "", "has no line -----BEGIN NATS USER JWT-----"),
            ("binary", b"\xff\xfe" + self.good.encode(), "holds a byte that is not ASCII"),
        ]
        for name, content, expected in cases:
            with self.subTest(name):
                self.refused(expected, self.file(name + ".creds", content))
        with self.subTest("missing"):
            self.refused("cannot be opened: No such file", os.path.join(self.work.path, "none"))
        with self.subTest("directory"):
            self.refused("is not a regular file", self.work.path)
        with self.subTest("fifo"):
            fifo = os.path.join(self.work.path, "fifo.creds")
            os.mkfifo(fifo)
            self.refused("is not a regular file", fifo)

    def test_bad_seed_files_are_named_and_nothing_is_sent(self):
        operator = Nkey("operator")
        cases = [
            ("creds", self.good, "must hold one seed and nothing else"),
            ("public", self.user.public, "as a public nkey is: a seed is 58"),
            ("operator", operator.seed, "the seed is an operator seed, not a user's"),
        ]
        for name, content, expected in cases:
            with self.subTest(name):
                self.refused(expected, self.file(name + ".nk", content), "nkey_seed")

    def test_one_way_to_authenticate(self):
        path = self.file("gw.creds", self.good)
        with self.assertRaisesRegex(ValueError, "give one way to authenticate, not token and "
                                                "creds"):
            NatsConnection.connect(self.listener.url, token="t", creds=path)
        with self.assertRaisesRegex(ValueError, "creds file must be the path of a file"):
            NatsConnection.connect(self.listener.url, creds=b"\x00")
        self.assertFalse(self.listener.was_connected())

    def test_a_secret_given_for_its_path_is_not_repeated(self):
        for case, (argument, secret) in enumerate((("creds", self.good),
                                                   ("nkey_seed", self.user.seed),
                                                   ("nkey_seed", self.user.seed + "\n"))):
            with self.subTest(case=case, argument=argument):
                with self.assertRaises(ValueError) as refused:
                    NatsConnection.connect(self.listener.url, **{argument: secret})
                message = str(refused.exception)
                self.assertIn("looks like the secret itself", message)
                self.assertNotIn(self.user.seed[2:20], message)
        self.assertFalse(self.listener.was_connected())


class HostileServer(unittest.TestCase):
    def test_a_nonce_that_is_no_challenge_is_not_signed(self):
        work = workdir(self)
        user = Nkey("user")
        seed = write_private(os.path.join(work.path, "u.nk"), user.seed)
        for nonce in (b'"' + b"A" * 1000 + b'"', b'"two words"', b"12345"):
            with self.subTest(nonce=nonce[:20]):
                server = FakeServer(self, b"", info=b'INFO {"nonce": %s}\r\n' % nonce)
                with self.assertRaisesRegex(NatsProtocolError, "the server's nonce is not a "
                                                               "base64 string"):
                    NatsConnection.connect(server.url, nkey_seed=seed, timeout=EVENT_TIMEOUT_S)


class WithoutCryptography(unittest.TestCase):
    def test_a_clear_error_and_no_import_until_needed(self):
        work = workdir(self)
        user = Nkey("user")
        path = write_private(os.path.join(work.path, "gw.creds"),
                             creds_text(user_jwt(Nkey("account"), user, "gw"), user.seed))
        script = (
            "import sys\n"
            "sys.path.insert(0, %r)\n"
            "import vigil_client\n"
            "assert 'cryptography' not in sys.modules, 'imported with the package'\n"
            "for name in [m for m in sys.modules if m.startswith('cryptography')]:\n"
            "    del sys.modules[name]\n"
            "sys.modules['cryptography'] = None      # as if it were not installed\n"
            "try:\n"
            "    vigil_client.NatsConnection.connect('nats://127.0.0.1:1', creds=%r)\n"
            "except ImportError as e:\n"
            "    print(e)\n" % (PACKAGE_ROOT, path))
        done = subprocess.run([PYTHON, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=EVENT_TIMEOUT_S)
        output = done.stdout.decode(errors="replace")
        self.assertEqual(done.returncode, 0, output)
        self.assertIn("needs the cryptography package", output)
        self.assertIn("apt-get install python3-cryptography", output)


if __name__ == "__main__":
    unittest.main()
