// Readiness in every profile's start tool (issue 26: "the MCP start tools'
// wait_ready return at readiness, or fail with the tail"): watch_process,
// Monitor and Hermes' terminal (background) take the engine's readiness
// fields and wait_ready as the vigil profile's monitor_start does, and put
// the answer in their own result as `ready`, the last lines framed in the
// text when it is not ready. (The process profile starts through
// process_run, which has no readiness: docs/mcp-mapping.md.)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, Adapter, sessionName, sh, textOf, TEST_TIMEOUT } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const READY = sh('echo booting; sleep 0.4; echo Local: http://x:5173/; exec sleep 30');
const NEVER = sh('printf "EADDRINUSE \\033[2J\\n"; exec sleep 30');

for (const [profile, tool, extra, idKey, stop] of [
  ['watch_process', 'watch_process', { description: 'dev server' }, 'shell_id',
    (a, id) => a.ok('KillShell', { shell_id: id })],
  ['monitor', 'Monitor', { description: 'dev server', persistent: true }, 'task_id',
    (a, id) => a.ok('TaskStop', { task_id: id })],
  ['hermes', 'terminal', { background: true }, 'session_id',
    (a, id) => a.ok('process', { action: 'kill', session_id: id })],
]) {
  test(`${tool} (${profile}) with wait_ready returns at readiness, or not ready with the tail`,
    { timeout: TEST_TIMEOUT }, async () => {
      const a = await Adapter.start(engine, { session: sessionName(`rp-${profile}`), profile });
      let r = await a.ok(tool, { command: READY, ready_log: 'Local:\\s+http', wait_ready: true,
        ...extra });
      let sc = r.structuredContent;
      assert.equal(sc.ready?.ready, true, JSON.stringify(sc));
      assert.match(sc.ready.reason, /^ready after \d+\.\d s \(a line matched ready_log\)$/);
      await stop(a, sc[idKey]);
      r = await a.ok(tool, { command: NEVER, ready_log: 'never printed', ready_timeout_ms: 800,
        wait_ready: true, ...extra });
      sc = r.structuredContent;
      assert.equal(sc.ready?.ready, false, JSON.stringify(sc));
      assert.match(sc.ready.reason, /^not ready after 0\.8 s/);
      assert.ok(sc.ready.output.includes('EADDRINUSE'), JSON.stringify(sc.ready));
      const text = textOf(r);
      assert.ok(text.includes('EADDRINUSE'), text);
      assert.ok(!text.includes('\u001b'), 'no raw escape in the text item');
      await stop(a, sc[idKey]);
      await a.close();
    });
}
