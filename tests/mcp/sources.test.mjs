// File sources through `vigil mcp` (vigil profile, poll delivery;
// docs/sources.md): monitor_start {source: {file}} follows a log file with
// no process, a relative path taken from the adapter's directory (as a cwd
// is), and a crash appended to it arrives as an incident; no cwd is added
// for a source.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Engine, Adapter, defaultConfig, sessionName, TEST_TIMEOUT, WAIT_MS } from './harness.mjs';

let engine;
let root;
before(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-mcp-src-')));
  engine = await Engine.start({ config: defaultConfig({ monitor: { workspace_roots: [root] } }) });
});
after(async () => {
  await engine?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

test('monitor_start follows a file: a crash appended to it is an incident',
  { timeout: TEST_TIMEOUT }, async () => {
    const file = path.join(root, 'app.log');
    fs.writeFileSync(file, 'before the start\n');
    const a = await Adapter.start(engine, { session: sessionName('src'), delivery: 'poll', cwd: root });
    const started = await a.ok('monitor_start', { source: { file: 'app.log' }, label: 'app-log' });
    const id = started.structuredContent.monitor_id;
    assert.equal(started.structuredContent.pid, null);
    fs.appendFileSync(file, 'TypeError: x is undefined\n    at f (/app/a.js:1:2)\n');
    let got = [];
    for (let i = 0; !got.some((n) => n.monitor_id === id && n.incidents?.length); i++) {
      assert.ok(i < 20, `the incident came: ${JSON.stringify(got.map((n) => n.type))}`);
      const r = await a.ok('notifications_read', { wait_ms: WAIT_MS });
      got = got.concat(r.structuredContent.notifications);
    }
    const note = got.find((n) => n.monitor_id === id && n.incidents?.length);
    assert.equal(note.incidents[0].lines.length, 2);
    assert.ok(!note.text.includes('before the start'), 'read from the end by default');
    await a.ok('monitor_stop', { monitor_id: id });
    await a.close();
  });
