// vigil as the harnesses see it: a private engine (tests/mcp/harness.mjs's
// Engine: vigild on a socket in a temp dir, with the MCP tests' config) and
// the `vigil mcp` command line a harness's MCP config runs.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Engine, mcpArgs, VIGIL } from '../../mcp/harness.mjs';
import { FakeModel, when, reply } from './fake/core.mjs';
import { HookRecorder } from './hooks.mjs';
import { Sandbox } from './sandbox.mjs';

export { Engine };

/** {command, args} of `vigil mcp` on engine's socket (opts: session,
 * delivery, toolNames, profile; --no-spawn unless noSpawn: false). Fails
 * when the build has no vigil. */
export function vigilMcp(engine, opts = {}) {
  if (!fs.existsSync(VIGIL)) {
    throw new Error(`no ${VIGIL}: build vigil first (cmake --build build), or set VIGIL_BUILD_DIR`);
  }
  return { command: VIGIL, args: mcpArgs(engine, opts) };
}

/** When VIGIL_HARNESS_SAMPLES names a directory, copies the first recorded
 * input of each hook event to DIR/harness/EVENT.json (the corpus of hook
 * inputs, tests/harness/samples/); nothing otherwise. */
export function saveSamples(recorder, harness, events = undefined) {
  const dir = process.env.VIGIL_HARNESS_SAMPLES;
  if (!dir) return;
  const out = path.join(dir, harness);
  fs.mkdirSync(out, { recursive: true });
  const seen = new Set();
  for (const run of (recorder instanceof HookRecorder ? recorder.inputs() : recorder)) {
    if (seen.has(run.event) || (events && !events.includes(run.event))) continue;
    seen.add(run.event);
    fs.writeFileSync(path.join(out, `${run.event}.json`), run.raw.endsWith('\n') ? run.raw : `${run.raw}\n`);
  }
}

/** Asserts that request r brings back the result of vigil mcp's
 * monitor_list, called as toolName, and returns that result part. The
 * harnesses wrap a tool's text in their own ways (Codex puts its wall time
 * before it, Gemini CLI an <untrusted_context> inside {"output": ...}, a
 * hook may add text after it): unwrap(text) gives the text holding the
 * JSON, whose outermost object is parsed. */
export function assertMonitorListResult(r, toolName, unwrap = (text) => text) {
  const res = r.newToolResults.find((p) => p.name === toolName);
  assert.ok(res, `the request after the call carries ${toolName}'s result: ${r.tailText.slice(0, 400)}`);
  const text = unwrap(res.text);
  const json = text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1);
  let parsed;
  try {
    parsed = JSON.parse(json);
  } catch (e) {
    assert.fail(`${toolName}'s result carries vigil mcp's JSON (${e.message}): ${res.text}`);
  }
  assert.ok(Array.isArray(parsed.monitors), `${toolName}'s result is monitor_list's: ${res.text}`);
  return res;
}

/** Runs f({sandbox, fake, recorder, cli}) with a new Sandbox named label,
 * a FakeModel of api answering script, a HookRecorder in the sandbox's
 * hooks/ and the harness driver make({sandbox, fake, recorder}) returns;
 * a failure's message gets the fake's transcript; the fake is stopped and
 * the sandbox cleaned up (every process it started ended) whatever
 * happens. In a sanitizer build, a report of a process started in the
 * sandbox (vigil mcp) fails the test. */
export async function withHarness({ label, api, script, make }, f) {
  const sandbox = new Sandbox(label);
  const fake = await FakeModel.start(api, { script });
  try {
    const recorder = new HookRecorder(sandbox.file('hooks'));
    const cli = make({ sandbox, fake, recorder });
    await f({ sandbox, fake, recorder, cli });
  } catch (e) {
    e.message += `\n${fake.transcript()}`;
    throw e;
  } finally {
    await fake.stop();
    const { sanitizer } = await sandbox.cleanup();
    assert.deepEqual(sanitizer.map((r) => r.file), [],
      `sanitizer reports of processes the harness started (vigil mcp):\n${sanitizer.map((r) => r.text).join('\n')}`);
  }
}

/** The smoke tests' script: the user's "list the monitors" makes the model
 * call toolName with no arguments, monitor_list's result makes it say
 * LISTED-OK and end its turn; then for each [needle, words] of then, a
 * request whose new part carries needle (a hook's reason, a queued or
 * plugin's message) makes it say words. */
export function listScript(toolName, then = []) {
  return [
    { when: when.userSays('list the monitors'), reply: reply.call(toolName, {}) },
    { when: when.toolResult('monitor_list'), reply: reply.say('LISTED-OK') },
    ...then.map(([needle, words]) => ({ when: when.tailHas(needle), reply: reply.say(words) })),
  ];
}
