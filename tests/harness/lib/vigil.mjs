// vigil as the harnesses see it: a private engine (tests/mcp/harness.mjs's
// Engine: vigild on a socket in a temp dir, with the MCP tests' config) and
// the `vigil mcp` command line a harness's MCP config runs.

import fs from 'node:fs';
import path from 'node:path';
import { Engine, mcpArgs, VIGIL } from '../../mcp/harness.mjs';
import { HookRecorder } from './hooks.mjs';

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
