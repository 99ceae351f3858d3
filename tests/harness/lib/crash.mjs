// The crash the issue-23 tests make and what they assert of its way to the
// model (wake.test.mjs, delivery.test.mjs): a dev server that crashes when
// the test opens its gate, an observer of the engine that waits until the
// crash's notification exists, and the check that no notification reached
// the model twice.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { sh } from '../../mcp/harness.mjs';
import { Client } from '../../../clients/node/index.js';
import { HARNESS_WAIT_MS } from './sandbox.mjs';
import { conversationText } from './fake/core.mjs';

/** A dev server that says it is up, waits for the gate, stamps the time
 * (ms) in the file stamp and crashes with a Python traceback whose last
 * line holds mark: the `sh -c '...'` command line. */
export function devServer(gate, stamp, mark) {
  return sh(`echo server listening on 3000; ${gate.until()}; date +%s%3N > ${stamp}; `
    + 'echo "Traceback (most recent call last):"; echo "  File \\"app.py\\", line 3, in main"; '
    + `echo "ValueError: ${mark}"; exit 3`);
}

/** The crash's time as the crashing process stamped it. */
export function crashedAt(stamp) {
  return Number(fs.readFileSync(stamp, 'utf8').trim());
}

/** The monitor id in a monitor_start result the request r carries. */
export function startedId(r) {
  const res = r.newToolResults.find((p) => p.name.endsWith('monitor_start'));
  const m = /mon_[0-9a-z]{12}/.exec(res?.text ?? '');
  assert.ok(m, `the monitor_start result names the monitor: ${res?.text}`);
  return m[0];
}

/** The nonces of the envelopes text holds, in order (Codex writes a Stop
 * hook's reason, Gemini CLI a hook's context, with < and > as entities). */
export function envelopeNonces(text) {
  const plain = text.replaceAll('&lt;', '<').replaceAll('&gt;', '>');
  return [...plain.matchAll(/<<<VIGIL OBSERVATION ([0-9a-f]+) BEGIN>>>/g)].map((m) => m[1]);
}

/** The text of request r's conversation with each tool result once: a
 * harness that sends one call's result twice (Gemini CLI 0.61.0 after
 * --resume repeats the last functionResponse of the resumed session, same
 * call id, same text) repeats its own history; vigil gave it once. */
export function deliveredText(r) {
  const seen = new Set();
  const once = (p) => {
    if (p.type !== 'tool_result' || !p.id) return true;
    const key = `${p.id}\0${p.text}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  };
  return conversationText({ messages: r.conv.messages.map((m) => ({ ...m, parts: m.parts.filter(once) })) });
}

/** Asserts that no notification reached the model twice: in the latest
 * request of the conversation (which carries its whole history; of the
 * requests pred picks, when given), each envelope's nonce opens exactly one
 * envelope (a tool result the harness itself repeats counted once, see
 * deliveredText). Returns how many envelopes it saw. */
export function assertEachEnvelopeOnce(fake, pred = () => true) {
  const mine = fake.turnRequests.filter(pred);
  const last = mine[mine.length - 1];
  assert.ok(last, 'the model got a request');
  const nonces = envelopeNonces(deliveredText(last));
  assert.ok(nonces.length >= 1, `the model got at least one envelope: ${last.tailText.slice(0, 500)}`);
  assert.equal(new Set(nonces).size, nonces.length, `an envelope reached the model twice: ${nonces.join(' ')}`);
  return nonces.length;
}

/** Waits (bounded, on the engine's own answers) until the monitor
 * monitorId of session has ended and a notification of the session holds
 * needle; returns that notification ({seq, text, ...}). Opening the session
 * moves no cursor: what the model has not had stays above its cursor. */
export async function waitNotified(socket, session, monitorId, needle, { timeout = HARNESS_WAIT_MS } = {}) {
  const client = await Client.connect(socket);
  try {
    await client.call('session_open', { session });
    await client.call('monitor_wait', { monitor_id: monitorId, for: 'exit', timeout_ms: timeout }, { timeoutMs: timeout + 30000 });
    const deadline = Date.now() + timeout;
    for (;;) {
      const { notifications } = await client.call('notifications_since', { since_seq: 0 });
      const n = notifications.find((x) => String(x.text).includes(needle));
      if (n) return n;
      assert.ok(Date.now() < deadline, `a notification of ${session} holds ${needle}: ${JSON.stringify(notifications).slice(0, 1000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await client.close();
  }
}

/** Waits (bounded, on the engine's session_list) until session's state is
 * state ('idle': the harness's hooks or plugin said its turn ended). */
export async function waitSessionState(socket, session, state, { timeout = HARNESS_WAIT_MS } = {}) {
  const client = await Client.connect(socket);
  try {
    const deadline = Date.now() + timeout;
    for (;;) {
      const s = (await client.call('session_list', { all: true })).sessions.find((x) => x.session === session);
      if (s?.state === state) return s;
      assert.ok(Date.now() < deadline, `session ${session} is ${state}: ${JSON.stringify(s)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await client.close();
  }
}

/** For a failure's message: session's session_list entry (its state and
 * cursors) and the seqs, types and first marks of what it keeps. */
export async function sessionReport(socket, session) {
  const client = await Client.connect(socket);
  try {
    const entry = (await client.call('session_list', { all: true })).sessions.find((x) => x.session === session);
    await client.call('session_open', { session });
    const { notifications, last_seq: lastSeq } = await client.call('notifications_since', { since_seq: 0 });
    const kept = notifications.map((n) => `${n.seq}:${n.type}:${/[A-Z]+-CRASH-[0-9a-f]+/.exec(String(n.text))?.[0] ?? ''}`);
    return { entry, lastSeq, kept };
  } catch (e) {
    return { error: e.message };
  } finally {
    await client.close();
  }
}
