// Framing (docs/protocol.md 2.3): msgpack values back to back with no
// length prefix, so the reader must take a message split over many reads,
// and many messages in one read, the same as one message a read. First the
// reader alone over every way of cutting a stream, then a whole Client
// against a stand-in engine that cuts its answers on purpose: half a
// message, then (after the client's next request) the rest; and fifty
// notifications and an answer in a single write.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { Client, encodeMessage, readMessages } from '../index.js';
import { TEST_TIMEOUT, WAIT_MS, removeTempDirs, tempDir } from './helpers.mjs';

after(removeTempDirs);

// Messages with every kind of value the engine sends: str (with multi-byte
// UTF-8), bin, nil, booleans, ints past 32 bits, nested maps and arrays.
const MESSAGES = [
  [1, 1, null, { version: '0.1.0', api_level: 1 }],
  [2, 'vigil.notification', [{ session: 'gw', seq: 4294967296 + 7, text: 'Fehler: Überlauf ✗ 🚨', lines: [
    { seq: 1, stream: 'stderr', text: 'x'.repeat(70000), pattern: 0, truncated: false }] }]],
  [1, 2, [3, 'denied: command: program "rm" is not in monitor.allowed_commands'], null],
  [1, 3, null, { stdout: new Uint8Array([0, 1, 2, 255, 0xc1]), stderr: null, more: false }],
  [2, 'vigil.error', [10, 'unknown_method: no method "x"']],
];

async function* chunksOf(bytes, size) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

// Byte arrays as plain Uint8Array: the decoder gives a Buffer or a
// Uint8Array (both are Uint8Arrays) depending on how the bytes came.
function plain(v) {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

async function decodeAll(chunks) {
  const out = [];
  for await (const m of readMessages(chunks)) out.push(plain(m));
  return out;
}

test('messages decode the same however the stream is cut', async () => {
  const whole = Buffer.concat(MESSAGES.map((m) => encodeMessage(m)));
  for (const size of [64, 4096, 65536, whole.length]) {
    assert.deepEqual(await decodeAll(chunksOf(whole, size)), MESSAGES, `chunks of ${size} bytes`);
  }
  // Byte by byte (without the 70000-byte line: the decoder copies what it
  // holds of an unfinished message at each read, so a long one read a byte
  // at a time costs its length squared).
  const small = MESSAGES.filter((_, i) => i !== 1);
  const smallBytes = Buffer.concat(small.map((m) => encodeMessage(m)));
  for (const size of [1, 2, 3, 5]) {
    assert.deepEqual(await decodeAll(chunksOf(smallBytes, size)), small, `chunks of ${size} bytes`);
  }
  // Cut exactly at, and one byte either side of, each message boundary.
  let at = 0;
  for (const m of MESSAGES.slice(0, -1)) {
    at += encodeMessage(m).length;
    for (const cut of [at - 1, at, at + 1]) {
      const parts = (async function* () { yield whole.subarray(0, cut); yield whole.subarray(cut); })();
      assert.deepEqual(await decodeAll(parts), MESSAGES, `cut at byte ${cut}`);
    }
  }
});

test('bytes that are not msgpack end the stream with an error', async () => {
  const bad = Buffer.concat([encodeMessage(MESSAGES[0]), Buffer.from([0xc1])]);
  const got = [];
  await assert.rejects(async () => {
    for await (const m of readMessages(chunksOf(bad, 3))) got.push(m);
  }, /0xc1|Unrecognized type byte/i);
  assert.deepEqual(got, [MESSAGES[0]], 'what came before the bad byte was delivered');
});

/** A stand-in engine on a socket in a private dir: calls onRequest(msg, socket) for each request. */
async function standIn(onRequest) {
  const sock = path.join(tempDir('standin'), 'vigil.sock');
  const server = net.createServer((c) => {
    (async () => {
      for await (const m of readMessages(c)) onRequest(m, c);
    })().catch(() => {});
  });
  await new Promise((resolve) => server.listen(sock, resolve));
  return { sock, server };
}

test('a Client takes an answer split across reads and fifty notifications in one read', { timeout: TEST_TIMEOUT }, async () => {
  let held = null;
  const { sock, server } = await standIn((m, c) => {
    const [, msgid, method] = m;
    if (method === 'ping') {
      // Half now; the rest only once the client has sent its next request.
      const bytes = encodeMessage([1, msgid, null, { version: '0.1.0', api_level: 1, pad: 'é'.repeat(1000) }]);
      const half = Math.floor(bytes.length / 2);
      c.write(bytes.subarray(0, half));
      held = bytes.subarray(half);
    } else if (method === 'session_list') {
      c.write(held);
      const burst = [];
      for (let seq = 1; seq <= 50; seq++) {
        burst.push(encodeMessage([2, 'vigil.notification', [{ session: 'anon-1', seq, type: 'output', text: `n${seq}` }]]));
      }
      burst.push(encodeMessage([1, msgid, null, { sessions: [] }]));
      c.write(Buffer.concat(burst));
    }
  });
  const client = await Client.connect(sock);
  try {
    const ping = client.ping();
    let pinged = false;
    ping.then(() => { pinged = true; });
    // The half answer cannot resolve the call; the session_list request
    // makes the stand-in send the rest.
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(pinged, false, 'half an answer is not an answer');
    const list = client.sessionList();
    const answer = await ping;
    assert.equal(answer.pad.length, 1000);
    assert.deepEqual(await list, { sessions: [] });
    const seqs = [];
    for (let i = 0; i < 50; i++) seqs.push((await client.wait({ timeoutMs: WAIT_MS })).seq);
    assert.deepEqual(seqs, Array.from({ length: 50 }, (_, i) => i + 1));
  } finally {
    await client.close();
    await new Promise((resolve) => server.close(resolve));
  }
});
