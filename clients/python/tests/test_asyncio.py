"""The asyncio client does what the sync one does: an embedded engine,
the socket, typed notifications, errors with their code, and a resume."""

import asyncio
import os
import unittest

from support import EVENT_TIMEOUT_S, PYTHON, VIGILD, Daemon, workdir

import vigil_client
from vigil_client import AsyncClient, AsyncEngine


async def take_until_ending(session, monitor_id):
    got = []
    while True:
        n = await session.wait(EVENT_TIMEOUT_S)
        assert n is not None, "no notification within %.0f s" % EVENT_TIMEOUT_S
        got.append(n)
        if n.is_ending and n.monitor_id == monitor_id:
            return got


class AsyncFlow(unittest.TestCase):
    def setUp(self):
        self.work = workdir(self)

    def test_embedded_start_notify_stop(self):
        async def main():
            with open(self.work.log_path, "ab") as log:
                engine = await AsyncEngine.spawn(vigild=VIGILD, config=self.work.config, stderr=log)
            async with engine:
                ses = await engine.session("aio")
                self.assertEqual(ses.next_seq, 1)
                await ses.busy()
                mon = await ses.monitor_start(argv=[PYTHON, "-c", "print('Error: boom')"],
                                              patterns=["^Error:"], incidents=False)
                # A slow call does not hold up the others on the connection.
                waited, pong = await asyncio.gather(
                    ses.monitor_wait(mon["monitor_id"], timeout_ms=int(EVENT_TIMEOUT_S * 1000)),
                    ses.ping())
                self.assertEqual(pong["api_level"], 1)
                self.assertEqual(waited["state"], "exited")
                self.assertIsNone(await ses.wait(0), "pushed during the turn")
                self.assertEqual((await ses.idle())["delivered"], 2)
                got = await take_until_ending(ses, mon["monitor_id"])
                self.assertEqual([(n.seq, n.type) for n in got], [(1, "output"), (2, "exit")])
                self.assertEqual(got[0].lines[0].text, "Error: boom")
                self.assertEqual(ses.last_seq, 2)
                with self.assertRaises(vigil_client.Denied) as cm:
                    await engine.monitor_start(argv=["rm", "-rf", "/nope"])
                self.assertEqual(cm.exception.code, 3)
            self.assertEqual(engine.process.returncode, 0)
        asyncio.run(main())

    def test_socket_errors_and_resume(self):
        daemon = Daemon(self.work)
        self.addCleanup(daemon.stop)

        async def main():
            client = await AsyncClient.connect(daemon.socket, wait_s=EVENT_TIMEOUT_S)
            try:
                with self.assertRaises(vigil_client.NotFound) as cm:
                    await client.monitor_stop("mon_zzzzzzzzzzzz")
                self.assertEqual(cm.exception.code, 2)
                ses = await client.session("aio-gw")
                fifo = os.path.join(self.work.path, "gate")
                os.mkfifo(fifo)
                mon = await ses.monitor_start(
                    argv=["sh", "-c", "echo one; read go < \"$0\"; echo two", fifo], patterns=[])
                first = await ses.wait(EVENT_TIMEOUT_S)
                self.assertEqual(first.lines[0].text, "one")
                await client.close()
                self.assertIsNotNone(client.closed)
                # While the gateway is away the child goes on to its end,
                # which an observer on the session sees.
                observer = await AsyncClient.connect(daemon.socket)
                watch = await observer.session("aio-gw")
                await asyncio.get_running_loop().run_in_executor(None, open_gate, fifo)
                seen = await take_until_ending(watch, mon["monitor_id"])
                await observer.close()
                await client.reconnect(wait_s=EVENT_TIMEOUT_S)
                got = await take_until_ending(ses, mon["monitor_id"])
                self.assertEqual([n.seq for n in got], [n.seq for n in seen])
                self.assertEqual(got[0].seq, first.seq + 1)
                self.assertEqual([l.text for l in got[0].lines], ["two"])
            finally:
                await client.close()
        asyncio.run(main())


def open_gate(fifo):
    with open(fifo, "w") as f:
        f.write("go\n")


if __name__ == "__main__":
    unittest.main()
