// Errors through the SDK client (MCP.md sections 1 and 3): an engine error is
// a tool result with isError whose text starts with the error's name, never
// a JSON-RPC error; an unknown tool and arguments that fail the tool's schema
// are JSON-RPC -32602 naming the tool or the argument; the adapter goes on.
//
// Assumptions where the contract leaves a shape open:
// - The -32602 error's message names the unknown tool or the argument (the
//   SDK's McpError carries the server's message).
// - `ls` is not on the tests' allowlist (harness.mjs defaultConfig), so
//   starting it is `denied`.
// - A start's environment is judged by the engine's monitor.env_deny, whose
//   default refuses PATH (docs/protocol.md, monitor_start's env): the same
//   `denied:` through every profile that passes an environment.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Engine, Adapter, defaultConfig, sessionName, TEST_TIMEOUT, textOf } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

test('a program not on the allowlist is an isError tool result whose text starts with denied:, in every profile',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('denied'), profile: 'vigil,watch_process,process,monitor,hermes' });
    const r = await a.toolError('monitor_start', { command: 'ls -l' }, 'denied');
    assert.match(textOf(r), /ls/, 'the error names the program');
    await a.toolError('process_run', { command: 'ls' }, 'denied');
    await a.toolError('watch_process', { command: 'ls', description: 'listing' }, 'denied');
    await a.toolError('process.run', { command: 'ls' }, 'denied');
    await a.toolError('Monitor', { command: 'ls', description: 'listing' }, 'denied');
    await a.toolError('terminal', { command: 'ls', background: true }, 'denied');
    // Nothing was started.
    const list = await a.ok('monitor_list', { include_exited: true });
    assert.deepEqual(list.structuredContent.monitors, []);
    await a.close();
  });

test('an unknown monitor id is an isError tool result whose text starts with not_found:', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('nf') });
  await a.toolError('monitor_status', { monitor_id: 'mon_000000000000' }, 'not_found');
  await a.toolError('monitor_stop', { monitor_id: 'mon_000000000000' }, 'not_found');
  await a.close();
});

test('an unknown tool is JSON-RPC error -32602 naming it, and the adapter goes on', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('unknown') });
  const e = await a.rpcError('no_such_tool', {}, -32602);
  assert.match(e.message, /no_such_tool/);
  assert.deepEqual(await a.client.ping(), {});
  await a.ok('monitor_list', {});
  await a.close();
});

test('arguments failing the tool\'s schema are JSON-RPC error -32602 naming the argument, and the adapter goes on',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('badarg') });
    const wrongType = await a.rpcError('monitor_list', { limit: 'many' }, -32602);
    assert.match(wrongType.message, /limit/);
    const unknownArg = await a.rpcError('monitor_status', { monitor_id: 'mon_000000000000', bogus_argument: 1 }, -32602);
    assert.match(unknownArg.message, /bogus_argument/);
    const missing = await a.rpcError('monitor_status', {}, -32602);
    assert.match(missing.message, /monitor_id/);
    const badEnum = await a.rpcError('monitor_output', { monitor_id: 'mon_000000000000', stream: 'sideways' }, -32602);
    assert.match(badEnum.message, /stream/);
    await a.ok('monitor_list', {});
    await a.close();
  });

test('a number out of its schema\'s bounds is refused naming the bound and the value as given, never in exponent form',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('bounds'), profile: 'vigil,watch_process,process,monitor' });
    // Issue 22 point 24: "must be 1000..3.6e+06, got 3.6e+06" named neither.
    const monitor = await a.rpcError('Monitor', { command: 'echo x', description: 'x', timeout_ms: 3600001 }, -32602);
    assert.match(monitor.message, /timeout_ms must be 1000\.\.3600000, got 3600001$/);
    const wait = await a.rpcError('monitor_wait', { monitor_id: 'mon_000000000000', timeout_ms: 3600001 }, -32602);
    assert.match(wait.message, /timeout_ms must be 0\.\.3600000, got 3600001$/);
    const run = await a.rpcError('process.run', { command: 'echo', timeout: 3601 }, -32602);
    assert.match(run.message, /timeout must be 1\.\.3600, got 3601$/);
    const cpu = await a.rpcError('process.run', { command: 'echo', cpu_limit: 1234567.5 }, -32602);
    assert.match(cpu.message, /cpu_limit must be 0\.001\.\.4096, got 1234567\.5$/);
    // A bound on one side only says which side.
    const since = await a.rpcError('watch_process_events', { shell_id: 'mon_000000000000', since_event_id: -1 }, -32602);
    assert.match(since.message, /since_event_id must be at least 0, got -1$/);
    await a.close();
  });

test('a PATH in a start\'s environment is denied: an allowlisted #!/usr/bin/env script never runs the caller\'s interpreter',
  { timeout: TEST_TIMEOUT }, async () => {
    // The tool finds its interpreter by name, as npm and pyenv's shims do;
    // the caller's directory has an "sh" that leaves a marker.
    const dir = fs.mkdtempSync(path.join(engine.dir, 'shebang-'));
    const tool = path.join(dir, 'tool');
    const evil = path.join(dir, 'evil');
    const marker = path.join(dir, 'evil-ran');
    fs.writeFileSync(tool, '#!/usr/bin/env sh\necho the real tool\n', { mode: 0o755 });
    fs.mkdirSync(evil);
    fs.writeFileSync(path.join(evil, 'sh'), `#!/bin/sh\necho ran > ${marker}\necho the evil sh\n`, { mode: 0o755 });
    const own = await Engine.start({ config: defaultConfig({ monitor: { allowed_commands: [tool] } }) });
    try {
      const a = await Adapter.start(own, { session: sessionName('envpath'), profile: 'vigil,process' });
      const env = { PATH: `${evil}:/usr/bin:/bin` };
      for (const [tool_, args] of [['process.run', { command: tool, environment: env }],
        ['process_run', { argv: [tool], env }], ['monitor_start', { argv: [tool], env }]]) {
        const r = await a.toolError(tool_, args, 'denied');
        assert.match(textOf(r), /"PATH" is refused by monitor\.env_deny \(entry "PATH"\)/, `${tool_}: ${textOf(r)}`);
      }
      assert.equal(fs.existsSync(marker), false, 'the caller\'s sh ran');
      const list = await a.ok('monitor_list', { include_exited: true });
      assert.deepEqual(list.structuredContent.monitors, []);
      // Without a PATH of its own the tool runs, with the engine's sh.
      const ran = (await a.ok('process.run', { command: tool })).structuredContent;
      assert.equal(ran.stdout_summary.trimEnd(), 'the real tool');
      assert.equal(fs.existsSync(marker), false, 'the caller\'s sh ran');
      await a.close();
    } finally {
      await own.stop();
    }
  });
