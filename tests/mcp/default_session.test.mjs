// The default session (MCP.md section 1, issue 22 point 14): without
// --session, `vigil mcp` works in "mcp-" and a hash of its working
// directory's real path. The hash is wide (at least 128 bits), so two
// projects never share a session: with the former 32-bit FNV-1a, a
// directory name that collides with another project's was found in about a
// second, and its adapter then saw (and could stop) the other project's
// monitors.
//
// Assumptions where the contract leaves a shape open:
// - The adapter names the session it serves on stderr (`serving session
//   "NAME"`), as it has since the first version.
// - A harness started in a symbolic link to a project is in that project
//   (the kernel gives the process the resolved directory anyway).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Engine, Adapter, TEST_TIMEOUT } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

/** 32-bit FNV-1a of a string's UTF-8 bytes: the former default's hash. */
function fnv1a32(s) {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) h = Math.imul(h ^ b, 16777619) >>> 0;
  return h;
}

/** Two directory names under base whose full paths collide under fnv1a32
 * (a birthday search: about 2^16 names are expected; bounded). The names
 * are random: counted names (p0, p1, ...) differ only in a short suffix,
 * and FNV-1a over such a structured set is not a random function, so for
 * some bases no two of 4 million collided (seen once in a full run). */
function collidingNames(base) {
  const seen = new Map();
  for (let i = 0; i < 4_000_000; i++) {
    const name = `p${crypto.randomBytes(6).toString('hex')}`;
    const h = fnv1a32(path.join(base, name));
    const other = seen.get(h);
    if (other !== undefined) return [other, name];
    seen.set(h, name);
  }
  throw new Error('no FNV-1a collision found among 4 million names');
}

const sessionOf = (a) => /serving session "([^"]+)"/.exec(a.stderr)?.[1];

test('two directories whose paths collide under a 32-bit hash get different default sessions, and neither sees the other\'s monitors',
  { timeout: TEST_TIMEOUT }, async () => {
    const base = fs.realpathSync(fs.mkdtempSync(path.join(engine.dir, 'projects-')));
    const [one, two] = collidingNames(base);
    const dirA = path.join(base, one);
    const dirB = path.join(base, two);
    fs.mkdirSync(dirA);
    fs.mkdirSync(dirB);
    assert.equal(fnv1a32(dirA), fnv1a32(dirB), 'the two paths collide under the 32-bit hash');

    const a = await Adapter.start(engine, { cwd: dirA });
    const started = await a.ok('monitor_start', { command: 'sleep 300', label: 'project-a' });
    const id = started.structuredContent.monitor_id;

    const b = await Adapter.start(engine, { cwd: dirB });
    const listed = await b.ok('monitor_list', { include_exited: true });
    assert.deepEqual(listed.structuredContent.monitors.map((m) => m.monitor_id), [],
      'the other project\'s adapter sees none of its monitors');
    await b.toolError('monitor_stop', { monitor_id: id }, 'not_found');

    const sa = sessionOf(a);
    const sb = sessionOf(b);
    assert.match(sa ?? '', /^mcp-[0-9a-f]{32,}$/, `a wide hash (>= 128 bits) names the session: ${a.stderr}`);
    assert.match(sb ?? '', /^mcp-[0-9a-f]{32,}$/, `a wide hash (>= 128 bits) names the session: ${b.stderr}`);
    assert.notEqual(sa, sb);

    // The same directory again, and through a symbolic link: the same session.
    const link = path.join(base, 'link-to-a');
    fs.symlinkSync(dirA, link);
    const again = await Adapter.start(engine, { cwd: link });
    assert.equal(sessionOf(again), sa, 'a symlink to the project maps to the project\'s session');
    const status = await again.ok('monitor_status', { monitor_id: id });
    assert.equal(status.structuredContent.state, 'running');
    await again.ok('monitor_stop', { monitor_id: id });
    for (const x of [a, b, again]) assert.deepEqual(await x.endInput(), { code: 0, signal: null });
  });
