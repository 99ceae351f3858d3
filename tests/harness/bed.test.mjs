// The test bed itself, without any harness CLI: each fake model API spoken
// to over plain HTTP (its streaming and plain answers, a tool call, the
// other endpoints, side requests marked), the recorder's counts and waits,
// the script's rules, the hook recorder (lib/hook.sh) and the sandbox's
// environment. A harness test that passes proves little if these lie.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { FakeModel, when, reply, valueForSchema } from './lib/fake/core.mjs';
import { anthropic, FAKE_MAIN_MODEL, FAKE_SMALL_MODEL } from './lib/fake/anthropic.mjs';
import { responses, FAKE_RESPONSES_MODEL } from './lib/fake/responses.mjs';
import { gemini, FAKE_GEMINI_MODEL } from './lib/fake/gemini.mjs';
import { chat, FAKE_CHAT_MODEL, FAKE_CHAT_SMALL_MODEL } from './lib/fake/chat.mjs';
import { HookRecorder } from './lib/hooks.mjs';
import { Sandbox, requirePackage } from './lib/sandbox.mjs';

async function post(fake, path, body, headers = {}) {
  const res = await fetch(`${fake.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body) });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/** The data of each server-sent event, parsed ([DONE] kept as a string). */
function events(text) {
  return text.split('\n\n').map((block) => block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join(''))
    .filter(Boolean).map((d) => (d === '[DONE]' ? d : JSON.parse(d)));
}

async function withFake(api, opts, f) {
  const fake = await FakeModel.start(api, opts);
  try {
    await f(fake);
  } finally {
    await fake.stop();
  }
}

test('anthropic: a streamed tool_use, then the tool_result comes back; side requests and other endpoints are marked', async () => {
  const script = [
    { when: when.userSays('go'), reply: reply.call(/monitor_list$/, { limit: 3 }) },
    { when: when.toolResult('monitor_list', /RESULT-TEXT/), reply: reply.say('done') },
  ];
  await withFake(anthropic, { script }, async (fake) => {
    const tools = [{ name: 'Bash' }, { name: 'mcp__vigil__monitor_list' }];
    const r1 = await post(fake, '/v1/messages', { model: FAKE_MAIN_MODEL, stream: true, max_tokens: 100, tools,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }] });
    assert.equal(r1.status, 200);
    assert.match(r1.type, /text\/event-stream/);
    const ev = events(r1.text);
    assert.deepEqual(ev.map((e) => e.type), ['message_start', 'content_block_start', 'content_block_delta',
      'content_block_stop', 'message_delta', 'message_stop']);
    const use = ev[1].content_block;
    assert.equal(use.name, 'mcp__vigil__monitor_list', 'a regex picks the offered tool');
    assert.deepEqual(JSON.parse(ev[2].delta.partial_json), { limit: 3 });
    assert.equal(ev[4].delta.stop_reason, 'tool_use');
    const r2 = await post(fake, '/v1/messages', { model: FAKE_MAIN_MODEL, max_tokens: 100, tools, messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'tool_use', id: use.id, name: use.name, input: { limit: 3 } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'RESULT-TEXT' }] }] },
    ] });
    const msg = JSON.parse(r2.text);
    assert.deepEqual(msg.content, [{ type: 'text', text: 'done' }]);
    assert.equal(msg.stop_reason, 'end_turn');
    const second = fake.turnRequests[1];
    assert.equal(second.newToolResults[0].name, 'mcp__vigil__monitor_list', "a result is named by its call's id");
    // side: the small model, and a request offering no tools
    const side = JSON.parse((await post(fake, '/v1/messages', { model: FAKE_SMALL_MODEL, max_tokens: 50,
      messages: [{ role: 'user', content: 'Write a title' }] })).text);
    assert.equal(side.content[0].text, 'Fake title');
    await post(fake, '/v1/messages', { model: FAKE_MAIN_MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'x' }] });
    assert.deepEqual(fake.sideRequests.map((r) => r.side), [`model ${FAKE_SMALL_MODEL}`, 'no tools']);
    assert.equal(fake.turnRequests.length, 2, 'side requests take no turn and use no step');
    assert.equal(JSON.parse((await post(fake, '/v1/messages/count_tokens', { messages: [] })).text).input_tokens > 0, true);
    const models = await (await fetch(`${fake.url}/v1/models`)).json();
    assert.deepEqual(models.data.map((m) => m.id), [FAKE_MAIN_MODEL, FAKE_SMALL_MODEL]);
    assert.equal((await post(fake, '/v1/nothing', {})).status, 404);
    assert.equal(fake.requests.filter((r) => r.conv === null).length, 3, 'other endpoints are recorded too');
    assert.deepEqual(fake.errors, []);
  });
});

test('responses: a namespaced MCP tool is called by name and namespace; function_call_output comes back; request_kind tells side requests', async () => {
  await withFake(responses, { script: [{ when: when.turn(1), reply: reply.call('mcp__vigil__monitor_list', {}) }] }, async (fake) => {
    const tools = [{ type: 'function', name: 'exec_command' },
      { type: 'namespace', name: 'mcp__vigil', tools: [{ type: 'function', name: 'monitor_list' }] }];
    const meta = (kind) => ({ 'x-codex-turn-metadata': JSON.stringify({ request_kind: kind, thread_id: 'th1' }) });
    const r1 = await post(fake, '/v1/responses', { model: FAKE_RESPONSES_MODEL, stream: true, tools,
      input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] }] }, meta('turn'));
    const ev = events(r1.text);
    assert.equal(ev[0].type, 'response.created');
    assert.equal(ev.at(-1).type, 'response.completed');
    const call = ev.find((e) => e.type === 'response.output_item.done').item;
    assert.equal(call.type, 'function_call');
    assert.equal(call.name, 'monitor_list');
    assert.equal(call.namespace, 'mcp__vigil');
    assert.deepEqual(ev.at(-1).response.output, [call]);
    await post(fake, '/v1/responses', { model: FAKE_RESPONSES_MODEL, stream: true, tools, input: [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
      { type: 'function_call', name: 'monitor_list', namespace: 'mcp__vigil', call_id: call.call_id, arguments: '{}' },
      { type: 'function_call_output', call_id: call.call_id, output: 'Output:\n{"monitors":[]}' },
    ] }, meta('turn'));
    const second = fake.turnRequests[1];
    assert.deepEqual(second.newToolResults.map((p) => [p.name, p.text]), [['mcp__vigil__monitor_list', 'Output:\n{"monitors":[]}']]);
    assert.equal(fake.thread(second), 'th1');
    await post(fake, '/v1/responses', { model: FAKE_RESPONSES_MODEL, stream: true, tools, input: 'sum up' }, meta('compaction'));
    assert.deepEqual(fake.sideRequests.map((r) => r.side), ['request_kind compaction']);
    assert.deepEqual(fake.errors, []);
  });
});

test('gemini: streamGenerateContent answers with a functionCall; generateContent with a schema is a side request answered to fit it', async () => {
  await withFake(gemini, { script: [{ when: when.turn(1), reply: reply.call('mcp_vigil_monitor_list', { a: 1 }) }] }, async (fake) => {
    const path = `/v1beta/models/${FAKE_GEMINI_MODEL}:streamGenerateContent?alt=sse`;
    const r1 = await post(fake, path, { contents: [{ role: 'user', parts: [{ text: 'go' }] }],
      tools: [{ functionDeclarations: [{ name: 'mcp_vigil_monitor_list' }] }] });
    const ev = events(r1.text);
    assert.deepEqual(ev[0].candidates[0].content.parts, [{ functionCall: { name: 'mcp_vigil_monitor_list', args: { a: 1 } } }]);
    await post(fake, path, { contents: [
      { role: 'user', parts: [{ text: 'go' }] },
      { role: 'model', parts: [{ functionCall: { name: 'mcp_vigil_monitor_list', args: { a: 1 } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'mcp_vigil_monitor_list', response: { output: 'OUT' } } }] },
    ], tools: [{ functionDeclarations: [{ name: 'mcp_vigil_monitor_list' }] }] });
    assert.deepEqual(fake.turnRequests[1].newToolResults.map((p) => p.name), ['mcp_vigil_monitor_list']);
    const schema = { type: 'OBJECT', properties: { reasoning: { type: 'STRING' }, next_speaker: { type: 'STRING', enum: ['model', 'user'] } } };
    const side = await post(fake, '/v1beta/models/gemini-fake-flash:generateContent', {
      contents: [{ role: 'user', parts: [{ text: 'who speaks next?' }] }], generationConfig: { responseJsonSchema: schema } });
    const answer = JSON.parse(JSON.parse(side.text).candidates[0].content.parts[0].text);
    assert.deepEqual(answer, { reasoning: 'fake', next_speaker: 'user' });
    assert.equal(fake.sideRequests.length, 1);
    assert.deepEqual(fake.errors, []);
  });
});

test('chat: streamed tool_calls chunks end in [DONE]; the small model is a side request', async () => {
  await withFake(chat, { script: [{ when: when.turn(1), reply: reply.call('vigil_monitor_list', {}, 'calling') }] }, async (fake) => {
    const tools = [{ type: 'function', function: { name: 'vigil_monitor_list' } }];
    const r1 = await post(fake, '/v1/chat/completions', { model: FAKE_CHAT_MODEL, stream: true, stream_options: { include_usage: true },
      tools, messages: [{ role: 'user', content: 'go' }] });
    const ev = events(r1.text);
    assert.equal(ev.at(-1), '[DONE]');
    const calls = ev.flatMap((e) => e.choices?.[0]?.delta?.tool_calls ?? []);
    assert.deepEqual(calls.map((c) => c.function.name), ['vigil_monitor_list']);
    assert.equal(ev.find((e) => e.choices?.[0]?.finish_reason)?.choices[0].finish_reason, 'tool_calls');
    assert.ok(ev.some((e) => e.usage), 'the usage chunk when include_usage');
    const title = JSON.parse((await post(fake, '/v1/chat/completions', { model: FAKE_CHAT_SMALL_MODEL,
      messages: [{ role: 'user', content: 'Generate a title' }] })).text);
    assert.equal(title.choices[0].message.content, 'Fake title');
    assert.equal(fake.sideRequests.length, 1);
    assert.deepEqual(fake.errors, []);
  });
});

test('recorder: seen() counts what the model was told in one conversation; waitFor bounds; a tool not offered is an error the test sees', async () => {
  await withFake(chat, { script: [{ when: when.userSays('call'), reply: reply.call('not_offered') }] }, async (fake) => {
    const tools = [{ type: 'function', function: { name: 'vigil_monitor_list' } }];
    const send = (messages) => post(fake, '/v1/chat/completions', { model: FAKE_CHAT_MODEL, tools, messages });
    await send([{ role: 'user', content: 'seq=7 crashed' }]);
    await send([{ role: 'user', content: 'seq=7 crashed' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'again seq=7 crashed' }]);
    assert.equal(fake.requestsWith('seq=7 crashed').length, 2);
    assert.equal(fake.seen('seq=7 crashed'), 2, 'the latest request holds it twice: told twice');
    assert.equal(fake.seen(/seq=8/), 0);
    const w = fake.waitForText('never sent', { timeout: 200 });
    await assert.rejects(w, /timed out after 200 ms waiting for a request carrying never sent/);
    const r = await send([{ role: 'user', content: 'call it' }]);
    assert.match(JSON.parse(r.text).choices[0].message.content, /FAKE ERROR: the script calls a tool matching/);
    assert.equal(fake.errors.length, 1, 'the script error is kept for the test');
    // fallback: no step matches
    assert.equal(JSON.parse((await send([{ role: 'user', content: 'hm' }])).text).choices[0].message.content, 'ok');
  });
  assert.deepEqual(valueForSchema({ type: 'object', properties: { n: { type: 'integer' }, l: { type: 'array' } } }), { n: 1, l: [] });
});

test('hook.sh records each run in order and answers each queued answer once, after its gate', async () => {
  const sandbox = new Sandbox('bed');
  try {
    const rec = new HookRecorder(sandbox.file('hooks'));
    const gate = sandbox.file('gates', 'go');
    rec.answer('Stop', { stdout: 'first-out', stderr: 'first-err', code: 2, gate });
    const hook = (input) => new Promise((resolve) => {
      const child = execFile('sh', ['-c', rec.command('Stop')], (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
      child.stdin.end(input);
    });
    const first = hook('{"n":1}');
    await rec.waitInput('Stop', (i) => i.n === 1);
    fs.writeFileSync(gate, '');
    assert.deepEqual(await first, { code: 2, stdout: 'first-out', stderr: 'first-err' });
    assert.deepEqual(await hook('{"n":2}'), { code: 0, stdout: '', stderr: '' }, 'an answer is used once');
    assert.deepEqual(rec.inputs('Stop').map((r) => r.input), [{ n: 1 }, { n: 2 }]);
    assert.ok(rec.envNames(rec.inputs('Stop')[0]).includes('PATH'));
  } finally {
    await sandbox.cleanup();
  }
});

test('sandbox: a private HOME, nothing of the test environment but PATH and the tags, and its leftovers ended', async () => {
  const saved = { ANTHROPIC_API_KEY: process.env.ANTHROPIC_API_KEY, CI: process.env.CI };
  process.env.ANTHROPIC_API_KEY = 'real-key-must-not-leak';
  process.env.CI = 'true';
  const sandbox = new Sandbox('bed');
  try {
    const env = sandbox.env({ EXTRA: '1' });
    assert.equal(env.HOME, sandbox.home);
    assert.equal(env.ANTHROPIC_API_KEY, undefined);
    assert.equal(env.CI, undefined);
    assert.equal(env.EXTRA, '1');
    // A detached child that outlives the Proc that started it, holding its
    // stdout open, neither keeps the exit from being seen nor survives.
    const p = sandbox.spawn('forker', 'sh', ['-c', 'setsid sleep 300 & echo started']);
    await p.waitOutput(/started/);
    await p.waitExit();
    assert.equal(sandbox.leftovers().length, 1);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    const { leftovers } = await sandbox.cleanup({ keep: false });
    assert.equal(leftovers.length, 1);
    assert.deepEqual(sandbox.leftovers(), []);
  }
});

test('sandbox: in a sanitizer build, a report a process writes (ASAN_OPTIONS log_path) comes back from cleanup', async () => {
  const saved = process.env.ASAN_OPTIONS;
  process.env.ASAN_OPTIONS = 'detect_leaks=1';
  const sandbox = new Sandbox('bed');
  try {
    // What ASan does at a report: write to log_path.PID.
    const p = sandbox.spawn('reporter', 'sh', ['-c',
      'path=${ASAN_OPTIONS##*log_path=}; echo "ERROR: LeakSanitizer: detected memory leaks" > "$path.$$"']);
    assert.deepEqual(await p.waitExit(), { code: 0, signal: null });
  } finally {
    if (saved === undefined) delete process.env.ASAN_OPTIONS;
    else process.env.ASAN_OPTIONS = saved;
  }
  const { sanitizer } = await sandbox.cleanup();
  assert.equal(sanitizer.length, 1);
  assert.match(sanitizer[0].text, /LeakSanitizer/);
});

test('every harness package is installed at its pinned version', () => {
  for (const pkg of ['@anthropic-ai/claude-code', '@openai/codex', '@google/gemini-cli', 'opencode-ai']) requirePackage(pkg);
  assert.throws(() => requirePackage('not-a-harness-package'), /the harness package not-a-harness-package is not installed/);
});
