// The Client of a remote engine through NATS (Client.connectNats,
// docs/fleet.md section 6) against a real nats-server with JetStream and
// this build's `vigild --nats URL --nats-engine NAME`: every call goes
// through the broker, as a gateway on another machine would make it.
//
// One server and one engine (e1) for the file; the idle test has an engine
// of its own (a short nats.client_idle_ms), the rogue test plays an engine
// that answers garbage, and the last test takes the server away and brings
// it back. Waits are on events (an answer, an error, a status change, a
// counter seen through api_info) bounded by WAIT_MS.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { decode, encode } from '@msgpack/msgpack';
import { connect } from 'nats';
import {
  Client, ERROR_CODES, NatsClient, VigilConnectionError, VigilError, VigilFleetError, VigilTimeoutError, ownWaitMs,
} from '../index.js';
import {
  Gate, SocketEngine, TEST_TIMEOUT, WAIT_MS, removeTempDirs, sh, tempDir, testConfig, waitNoneLeft, within,
} from './helpers.mjs';
import { NatsServer } from './natsserver.mjs';

let server;
const engines = [];
const clients = [];

/** vigild serving requests for engine name through the shared server (or url). */
async function startEngine(name, nats = {}, url = server.url) {
  const e = await SocketEngine.start({
    config: { ...testConfig(), nats },
    args: ['--nats', url, '--nats-engine', name],
  });
  engines.push(e);
  await within(e.logLine(/serving requests on/, 1), WAIT_MS, `vigild ${name} to serve requests`)
    .catch((err) => { throw new Error(`${err.message}; its log:\n${e.log}`); });
  return e;
}

/** A client of engine through the shared server, closed after the file. */
async function remote(options) {
  const c = await Client.connectNats({ servers: server.url, ...options });
  clients.push(c);
  return c;
}

/** Polls check (an async predicate) until it holds, bounded by WAIT_MS.
 * For what no event announces (a counter of the engine's). */
async function until(check, what) {
  const deadline = Date.now() + WAIT_MS;
  while (!(await check())) {
    if (Date.now() >= deadline) throw new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  server = await NatsServer.start();
  await startEngine('e1');
});

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  for (const e of engines) await e.stop().catch(() => {});
  await server?.stop();
  const left = await waitNoneLeft();
  removeTempDirs();
  assert.deepEqual(left, [], 'processes of this file still alive');
});

test('every call goes through the broker: ping, api_info, a monitor started, waited for, read and stopped', { timeout: TEST_TIMEOUT }, async () => {
  const client = await remote({ engine: 'e1' });
  assert.ok(client instanceof NatsClient);
  assert.equal(client.subject, 'vigil.e1.rpc');
  const pong = await client.ping();
  assert.equal(pong.api_level, 1);
  assert.equal(typeof pong.version, 'string');
  const info = await client.apiInfo();
  assert.equal(info.nats.engine, 'e1');
  assert.equal(info.nats.rpc.serving, true);

  // A session named with a dot: its name, not its token, on every call.
  const s = await client.session('build.prod');
  assert.equal(s.name, 'build.prod');
  const gate = new Gate(tempDir('gate'), 'one');
  const { monitor_id: id } = await s.monitorStart({ command: sh(`echo hello; ${gate.until}; echo bye`), label: 'web' });
  // Deferred: the process cannot exit before the gate opens, so this
  // answer comes later, to the reply subject of its request.
  const exited = s.monitorWait({ monitor_id: id, for: 'exit', timeout_ms: WAIT_MS });
  const first = await s.monitorWait({ monitor_id: id, for: 'output', timeout_ms: WAIT_MS });
  assert.equal(first.timed_out, false);
  const listed = await s.monitorList();
  assert.deepEqual(listed.monitors.map((m) => m.monitor_id), [id], 'the session stays open between requests');
  gate.open();
  const end = await exited;
  assert.equal(end.timed_out, false);
  assert.equal(end.event.type, 'exited');
  const out = await s.monitorOutput({ monitor_id: id });
  assert.deepEqual(out.lines.map((l) => l.text), ['hello', 'bye']);

  const { monitor_id: sleeper } = await s.monitorStart({ command: 'sleep 60' });
  const stopped = await s.monitorStop({ monitor_id: sleeper });
  assert.equal(stopped.status, 'stopped');
  assert.equal(stopped.signal, 'SIGTERM');

  // One virtual connection for all of this client's calls (its Vigil-Client).
  const before = (await client.apiInfo()).nats.rpc.clients;
  const other = await remote({ engine: 'e1' });
  await other.ping();
  await other.ping();
  assert.equal((await client.apiInfo()).nats.rpc.clients, before + 1);

  // Notifications come from JetStream, and the client says so.
  await assert.rejects(client.wait({ timeoutMs: 10 }), /FleetSubscriber/);
  await assert.rejects(s.wait(), /FleetSubscriber/);
  assert.equal(client.counters.malformed, 0);
});

test('a session-scoped client acts on its session alone; another session is refused denied', { timeout: TEST_TIMEOUT }, async () => {
  const scoped = await remote({ engine: 'e1', session: 's1' });
  assert.equal(scoped.subject, 'vigil.e1.s1.rpc');
  // No session_open first: the engine opens s1 for the subject's requests.
  const { monitor_id: id } = await scoped.monitorStart({ command: 'sleep 60' });
  const whole = await remote({ engine: 'e1' });
  const s1 = await whole.session('s1');
  assert.deepEqual((await s1.monitorList()).monitors.map((m) => m.monitor_id), [id]);

  await assert.rejects(scoped.monitorList({ session: 's2' }), (e) => e instanceof VigilError &&
    e.codeName === 'denied' && e.message.includes('vigil.e1.s1.rpc') && e.message.includes('"s2"'));
  await assert.rejects(scoped.sessionList(), (e) => e instanceof VigilError && e.codeName === 'denied' &&
    /session_list acts on more than one session/.test(e.message));
  await assert.rejects(scoped.session('s2'), (e) => e instanceof VigilError && e.codeName === 'denied');
  const stopped = await scoped.monitorStop({ monitor_id: id });
  assert.equal(stopped.status, 'stopped');
});

test('no engine on the subject: the call fails at once, naming the subject and the engine', { timeout: TEST_TIMEOUT }, async () => {
  const c = await remote({ engine: 'nobody', callTimeoutMs: 600000 });
  const t0 = performance.now();
  await assert.rejects(c.ping(), (e) => e instanceof VigilError && e.code === ERROR_CODES.internal &&
    e.message.includes('no engine answers on vigil.nobody.rpc') && e.message.includes('--nats-engine nobody'));
  // Far from callTimeoutMs: the server's "no responders" said it.
  assert.ok(performance.now() - t0 < WAIT_MS, `took ${performance.now() - t0} ms`);
  assert.equal(c.counters.noResponders, 1);
});

test('an answer that is not the engine\'s fails its call with a clear error; the client goes on', { timeout: TEST_TIMEOUT }, async () => {
  const rogue = await connect({ servers: server.url });
  try {
    // Each request is answered with the next of these, given its msgid.
    const answers = [
      () => new Uint8Array([0xc1]), // never used in msgpack
      () => encode('hello'),
      (msgid) => encode([1, msgid + 1, null, {}]),
      (msgid) => new Uint8Array([...encode([1, msgid, null, {}]), ...encode([1, msgid, null, {}])]),
      (msgid) => encode([1, msgid, 'oops', null]),
      (msgid) => encode([1, msgid, null, [1, 2]]),
      () => new Uint8Array(0),
      (msgid) => encode([1, msgid, null, { version: 'rogue', api_level: 1 }]),
    ];
    let n = 0;
    rogue.subscribe('vigil.rogue.rpc', {
      callback: (err, m) => {
        const [, msgid] = decode(m.data);
        if (n === answers.length - 1) rogue.publish(`${m.reply.slice(0, m.reply.lastIndexOf('.'))}.4000000`, encode([1, 4000000, null, {}]));
        m.respond(answers[n++](msgid));
      },
    });
    await rogue.flush();
    const c = await remote({ engine: 'rogue' });
    const problems = [
      /the answer that came to .* is not the engine's: its 1 bytes are not one msgpack value/,
      /not a msgpack-rpc response \[1, msgid, error, result\]: got "hello"/,
      /it answers msgid \d+, not \d+/,
      /its \d+ bytes are not one msgpack value \(Extra \d+ of \d+ byte/,
      /its error is not \[code, message, \.\.\.\]: got "oops"/,
      /its result is not a map: got an array of 2/,
      /the answer is empty \(0 bytes\)/,
    ];
    for (const p of problems) {
      await assert.rejects(c.ping(), (e) => e instanceof VigilError && e.code === ERROR_CODES.internal &&
        p.test(e.message) && e.message.includes('someone other than engine rogue answers on vigil.rogue.rpc'));
    }
    assert.deepEqual(await c.ping(), { version: 'rogue', api_level: 1 });
    assert.equal(c.counters.malformed, problems.length);
    assert.equal(c.counters.stray, 1, 'the answer to no call was dropped');
  } finally {
    await rogue.close();
  }
});

test('a request over the server\'s max_payload is refused before it is sent', { timeout: TEST_TIMEOUT }, async () => {
  const c = await remote({ engine: 'e1' });
  const requests = async () => (await c.apiInfo()).nats.rpc.requests;
  const r0 = await requests();
  await assert.rejects(c.processRun({ command: 'cat', stdin: 'x'.repeat(1 << 20) }), (e) => e instanceof VigilError &&
    e.codeName === 'limit_exceeded' && /process_run: the request is \d+ bytes .* over the max_payload of the NATS server at .* \(1048576\); nothing was sent/.test(e.message));
  assert.equal(await requests(), r0 + 1, 'the engine received only the api_info');
  assert.throws(() => c.notify('ping', { pad: 'x'.repeat(1 << 20) }), /over the max_payload/);
});

test('a call waits as long as its own arguments say, past callTimeoutMs; timeoutMs bounds it', { timeout: TEST_TIMEOUT }, async () => {
  const c = await remote({ engine: 'e1', callTimeoutMs: 1000 });
  const s = await c.session('patient');
  const { monitor_id: id } = await s.monitorStart({ command: 'sleep 60' });
  const t0 = performance.now();
  const waited = await s.monitorWait({ monitor_id: id, for: 'exit', timeout_ms: 2500 });
  assert.equal(waited.timed_out, true);
  assert.ok(performance.now() - t0 >= 2400, 'the answer came when the engine\'s own timeout passed');
  // A foreground process_run answers when the process ends (timeout_s bounds it).
  const ran = await s.processRun({ command: 'sleep 1.5', timeout_s: 20 });
  assert.equal(ran.state, 'exited');
  assert.equal(ran.exit_code, 0);
  assert.deepEqual([ownWaitMs('process_run', { timeout_s: 20 }), ownWaitMs('process_run', { background: true }),
    ownWaitMs('cursor_take', { wait_ms: 700 }), ownWaitMs('monitor_stop', {}), ownWaitMs('monitor_wait', {}),
    ownWaitMs('ping', {})], [20000, 0, 700, 2000, 30000, 0]);
  await assert.rejects(s.monitorWait({ monitor_id: id, for: 'exit', timeout_ms: 5000 }, { timeoutMs: 200 }),
    (e) => e instanceof VigilTimeoutError && /monitor_wait: no answer from engine e1 on vigil.e1.rpc within 200 ms/.test(e.message));
  await s.monitorStop({ monitor_id: id });
});

test('an idle virtual connection closed by the engine: a named session is opened again', { timeout: TEST_TIMEOUT }, async () => {
  await startEngine('idle1', { client_idle_ms: 1000 });
  const c = await remote({ engine: 'idle1' });
  const s = await c.session('keep');
  const { monitor_id: id } = await s.monitorStart({ command: 'sleep 60' });
  const reopened = new Promise((resolve) => c.once('sessionReopened', resolve));
  // An observer busy enough never to idle out itself sees c's go.
  const observer = await remote({ engine: 'idle1' });
  await until(async () => {
    const rpc = (await observer.apiInfo()).nats.rpc;
    return rpc.clients_idle_closed >= 1 && rpc.clients === 1;
  }, "the engine to close the client's idle virtual connection");
  // The named session lingered with its monitor; the client opens it again.
  const listed = await s.monitorList();
  assert.deepEqual(listed.monitors.map((m) => m.monitor_id), [id]);
  assert.equal(await within(reopened, WAIT_MS, 'sessionReopened'), 'keep');
  assert.equal(c.counters.sessionsReopened, 1);
  await s.monitorStop({ monitor_id: id });
});

test('a user allowed one session and an inbox prefix of its own: served there, refused elsewhere', { timeout: TEST_TIMEOUT }, async () => {
  // docs/fleet.md sections 5 and 6: alice may publish to session s1's
  // subjects of engine sec and read answers under _INBOX_alice alone.
  const secured = await NatsServer.start({
    config: `
accounts {
  FLEET {
    jetstream: enabled
    users [
      { user: engine, password: enginepw }
      { user: alice, password: alicepw, permissions: {
          publish: { allow: ["vigil.sec.s1.>"] }
          subscribe: { allow: ["_INBOX_alice.>"] } } }
    ]
  }
}`,
  });
  let engine = null;
  try {
    const port = new URL(secured.url).port;
    engine = await startEngine('sec', {}, `nats://engine:enginepw@127.0.0.1:${port}`);
    const alice = { servers: secured.url, engine: 'sec', user: 'alice', pass: 'alicepw' };

    // Without the prefix the answers' subscription is refused: said at connect.
    await assert.rejects(Client.connectNats({ ...alice, session: 's1' }), (e) => e instanceof VigilFleetError &&
      /refused the subscription to _INBOX\.\w+\.\*, where the answers come: .*Permissions Violation/.test(e.message) &&
      e.message.includes('give inboxPrefix'));

    const c = await Client.connectNats({ ...alice, session: 's1', inboxPrefix: '_INBOX_alice' });
    clients.push(c);
    const { monitor_id: id } = await c.monitorStart({ command: 'sleep 60' });
    assert.deepEqual((await c.monitorList()).monitors.map((m) => m.monitor_id), [id]);
    await c.monitorStop({ monitor_id: id });

    // The engine's subject is not alice's: the server refuses the publish,
    // and the call fails now, not at its deadline.
    const whole = await Client.connectNats({ ...alice, inboxPrefix: '_INBOX_alice', callTimeoutMs: 600000 });
    clients.push(whole);
    const t0 = performance.now();
    await assert.rejects(whole.sessionList(), (e) => e instanceof VigilFleetError &&
      /refused the request: Permissions Violation for Publish to "vigil.sec.rpc" \(this NATS user may not publish to vigil.sec.rpc/.test(e.message));
    assert.ok(performance.now() - t0 < WAIT_MS, `took ${performance.now() - t0} ms`);
  } finally {
    if (engine !== null) {
      engines.splice(engines.indexOf(engine), 1);
      await engine.stop().catch(() => {});
    }
    await secured.stop();
  }
});

test('the broker gone: a waiting call fails at once, so does a new one; back, calls work again', { timeout: TEST_TIMEOUT }, async () => {
  const c = await remote({ engine: 'e1' });
  const s = await c.session('weather');
  const { monitor_id: id } = await s.monitorStart({ command: 'sleep 120' });
  const waiting = s.monitorWait({ monitor_id: id, for: 'exit', timeout_ms: 600000 });
  waiting.catch(() => {});
  const gone = new Promise((resolve) => c.once('disconnect', resolve));
  const back = new Promise((resolve) => c.once('reconnect', resolve));
  await server.end();
  await within(gone, WAIT_MS, 'the disconnect event');
  await assert.rejects(within(waiting, WAIT_MS, 'the waiting call to fail'), (e) => e instanceof VigilConnectionError &&
    /lost the NATS server at .* while 1 call\(s\) waited for engine e1 on vigil.e1.rpc: their answers are lost/.test(e.message));
  await assert.rejects(c.ping(), (e) => e instanceof VigilConnectionError && /ping: not connected to the NATS server/.test(e.message));
  assert.equal(c.closed, false);

  server.launch();
  await server.ready;
  await within(back, WAIT_MS, 'the reconnect event');
  // The engine reconnects on its own schedule: until then, no responders.
  await until(() => c.ping().then(() => true, (e) => {
    if (e instanceof VigilError && /no engine answers/.test(e.message)) return false;
    throw e;
  }), 'the engine to serve requests again');
  const listed = await s.monitorList();
  assert.deepEqual(listed.monitors.map((m) => m.monitor_id), [id]);
  await s.monitorStop({ monitor_id: id });
  assert.equal(c.counters.lost, 1);
});
