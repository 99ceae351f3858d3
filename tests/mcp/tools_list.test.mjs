// tools/list per profile (MCP.md section 3): the exact tool names, and for
// each tool an inputSchema with additionalProperties false, an outputSchema,
// a description for a model and annotations; --tool-names underscore.
//
// Assumptions where the contract leaves a shape open:
// - Annotations: MCP.md names readOnlyHint for list/status/output/logs/
//   events/wait tools and destructiveHint for stop/kill tools. Which seed
//   tool is which kind follows docs/mcp-mapping.md C11: process.monitor is a
//   status tool, BashOutput an output tool, Hermes's `process` (whose actions
//   include kill) is destructive. Tools that start processes are never
//   marked read-only.
// - "A description written for a model (one paragraph)" is checked as a
//   string of at least 40 characters.
// - Argument names: MCP.md section 3's lists, placed on the tool the seed
//   puts them on (docs/mcp-mapping.md sections 1-5); BashOutput's `bash_id`
//   is Claude Code's name (mapping 2.4).
// - The outputSchema is an object schema (type "object"); its keys are not
//   checked here (the flow tests call the tools, and the SDK validates each
//   result's structuredContent against it).
// - `--profile vigil,process --tool-names underscore` would give two tools
//   named process_run (open question Q1): the test only requires that no
//   listing ever holds one name twice (refusing to start is fine).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, Adapter, PROFILES, sessionName, TEST_TIMEOUT } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const READ_ONLY = ['monitor_list', 'monitor_status', 'monitor_output', 'monitor_logs', 'monitor_events',
  'monitor_wait', 'watch_process_events', 'BashOutput', 'process.monitor', 'process.list', 'process.logs',
  'TaskOutput', 'incident_ignored'];
const DESTRUCTIVE = ['monitor_stop', 'KillShell', 'process.kill', 'TaskStop', 'process'];
const STARTERS = ['monitor_start', 'process_run', 'watch_process', 'process.run', 'Monitor', 'terminal'];

// Argument names each tool's inputSchema must have (MCP.md section 3).
const ARGUMENTS = {
  monitor_start: ['command', 'patterns', 'label', 'mode', 'notify', 'timeout_ms', 'persistent'],
  monitor_stop: ['monitor_id', 'signal'],
  monitor_list: ['include_exited'],
  monitor_status: ['monitor_id'],
  monitor_output: ['monitor_id', 'stream', 'since_sequence', 'limit'],
  monitor_logs: ['monitor_id', 'stream', 'offset', 'limit'],
  monitor_events: ['monitor_id', 'since_event_id'],
  monitor_wait: ['monitor_id', 'timeout_ms'],
  process_run: ['command', 'timeout_s', 'background'],
  notifications_read: ['since_seq', 'wait_ms', 'limit'],
  watch_process: ['command', 'description', 'error_patterns', 'idle_timeout_seconds'],
  watch_process_events: ['shell_id', 'since_event_id'],
  KillShell: ['shell_id'],
  BashOutput: ['bash_id'],
  'process.run': ['command', 'args', 'timeout', 'working_directory', 'environment', 'stdin',
    'cpu_limit', 'memory_limit', 'background'],
  'process.monitor': ['process_id'],
  'process.kill': ['process_id', 'signal', 'force_after'],
  'process.list': ['state_filter', 'limit'],
  'process.logs': ['process_id', 'stream', 'offset', 'limit'],
  Monitor: ['command', 'description', 'timeout_ms', 'persistent'],
  TaskStop: ['task_id'],
  TaskOutput: ['task_id', 'block', 'timeout'],
  terminal: ['command', 'background', 'watch_patterns', 'notify_on_complete', 'timeout'],
  process: ['action', 'session_id', 'fingerprint', 'reason', 'for'],
  incident_ignore: ['fingerprint', 'monitor_id', 'incident', 'for', 'reason'],
  incident_unignore: ['fingerprint'],
  'process.ignore': ['action', 'fingerprint', 'for', 'reason'],
  watch_process_ignore: ['action', 'fingerprint', 'for', 'reason'],
  MonitorIgnore: ['action', 'fingerprint', 'for', 'reason'],
};

// Arguments a call cannot do without.
const REQUIRED = {
  monitor_stop: ['monitor_id'], monitor_status: ['monitor_id'], monitor_output: ['monitor_id'],
  monitor_logs: ['monitor_id'], monitor_events: ['monitor_id'], monitor_wait: ['monitor_id'],
  watch_process: ['command'], watch_process_events: ['shell_id'], KillShell: ['shell_id'],
  BashOutput: ['bash_id'], 'process.run': ['command'], 'process.monitor': ['process_id'],
  'process.kill': ['process_id'], 'process.logs': ['process_id'], Monitor: ['command'],
  TaskStop: ['task_id'], TaskOutput: ['task_id'], terminal: ['command'], process: ['action'],
};

function checkTool(tool, seedName = tool.name) {
  const where = `tool ${tool.name}`;
  assert.equal(typeof tool.description, 'string', `${where}: description`);
  assert.ok(tool.description.trim().length >= 40, `${where}: a description written for a model: ${JSON.stringify(tool.description)}`);

  const input = tool.inputSchema;
  assert.equal(input?.type, 'object', `${where}: inputSchema.type`);
  assert.equal(input.additionalProperties, false, `${where}: inputSchema.additionalProperties is false`);
  const props = Object.keys(input.properties ?? {});
  for (const arg of ARGUMENTS[seedName] ?? []) {
    assert.ok(props.includes(arg), `${where}: argument ${arg} (has ${props.join(', ')})`);
  }
  for (const arg of REQUIRED[seedName] ?? []) {
    assert.ok((input.required ?? []).includes(arg), `${where}: ${arg} is required (required: ${JSON.stringify(input.required)})`);
  }

  assert.equal(typeof tool.outputSchema, 'object', `${where}: outputSchema`);
  assert.equal(tool.outputSchema.type, 'object', `${where}: outputSchema.type`);

  const ann = tool.annotations ?? {};
  if (READ_ONLY.includes(seedName)) {
    assert.equal(ann.readOnlyHint, true, `${where}: readOnlyHint (annotations ${JSON.stringify(ann)})`);
    assert.notEqual(ann.destructiveHint, true, `${where}: a read-only tool is not destructive`);
  }
  if (DESTRUCTIVE.includes(seedName)) {
    assert.equal(ann.destructiveHint, true, `${where}: destructiveHint (annotations ${JSON.stringify(ann)})`);
    assert.notEqual(ann.readOnlyHint, true, `${where}: a tool that kills is not read-only`);
  }
  if (STARTERS.includes(seedName)) {
    assert.notEqual(ann.readOnlyHint, true, `${where}: a tool that starts processes is not read-only`);
  }
}

for (const [profile, names] of Object.entries(PROFILES)) {
  test(`--profile ${profile} lists exactly ${names.join(', ')}, each with schemas, annotations and a description`,
    { timeout: TEST_TIMEOUT }, async () => {
      const a = await Adapter.start(engine, { session: sessionName('list'), profile });
      assert.deepEqual(a.tools.map((t) => t.name).sort(), [...names].sort());
      for (const tool of a.tools) checkTool(tool);
      await a.close();
    });
}

test('without --profile the vigil profile is listed', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('list') });
  assert.deepEqual(a.tools.map((t) => t.name).sort(), [...PROFILES.vigil].sort());
  await a.close();
});

test('several profiles given together list every tool of each, once', { timeout: TEST_TIMEOUT }, async () => {
  const all = Object.keys(PROFILES);
  const a = await Adapter.start(engine, { session: sessionName('list'), profile: all.join(',') });
  const expected = [...new Set(Object.values(PROFILES).flat())].sort();
  assert.deepEqual(a.tools.map((t) => t.name).sort(), expected);
  for (const tool of a.tools) checkTool(tool);
  await a.close();
});

test('--tool-names underscore lists process.run as process_run and the other dotted names alike, with the same schemas',
  { timeout: TEST_TIMEOUT }, async () => {
    const exact = await Adapter.start(engine, { session: sessionName('list'), profile: 'process' });
    const under = await Adapter.start(engine, { session: sessionName('list'), profile: 'process', toolNames: 'underscore' });
    const expected = PROFILES.process.map((n) => n.replace('.', '_'));
    assert.deepEqual(under.tools.map((t) => t.name).sort(), [...expected].sort());
    for (const tool of under.tools) {
      assert.match(tool.name, /^[A-Za-z0-9_-]+$/, 'no dot in any listed name');
      const seedName = PROFILES.process.find((n) => n.replace('.', '_') === tool.name) ?? tool.name;
      checkTool(tool, seedName);
      assert.deepEqual(tool.inputSchema, exact.tool(seedName).inputSchema, `${tool.name} takes what ${seedName} takes`);
    }
    // An underscore name is called like the dotted one.
    const r = await under.ok('process_run', { command: 'echo', args: ['underscored'] });
    assert.equal(r.structuredContent.stdout_summary.trimEnd(), 'underscored');
    await exact.close();
    await under.close();
  });

test('--tool-names underscore leaves names without a dot as they are', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, {
    session: sessionName('list'), profile: 'vigil,watch_process,monitor,hermes', toolNames: 'underscore',
  });
  const expected = [...new Set([...PROFILES.vigil, ...PROFILES.watch_process, ...PROFILES.monitor, ...PROFILES.hermes])].sort();
  assert.deepEqual(a.tools.map((t) => t.name).sort(), expected);
  await a.close();
});

test('no combination of profiles and tool names lists two tools with one name', { timeout: TEST_TIMEOUT }, async () => {
  let a;
  try {
    a = await Adapter.start(engine, { session: sessionName('list'), profile: 'vigil,process', toolNames: 'underscore' });
  } catch (e) {
    // Refusing to start is one right answer (docs/mcp-mapping.md C14); it must say why.
    assert.match(e.message, /process_run/, `the refusal names the colliding tool: ${e.message}`);
    return;
  }
  const names = a.tools.map((t) => t.name);
  assert.equal(new Set(names).size, names.length, `names listed once each: ${names.join(', ')}`);
  await a.close();
});
