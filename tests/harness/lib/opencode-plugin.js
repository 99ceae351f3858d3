// An OpenCode plugin for the tests (lib/opencode.mjs copies it into the
// project's .opencode/plugin/). Its directory is VIGIL_HARNESS_PLUGIN_DIR:
// - every bus event it gets is appended to events.jsonl, and every call of
//   the tool.execute.before / tool.execute.after hooks to hooks.jsonl (as
//   {hook, input, output}): what a plugin is given, for the tests and as
//   samples;
// - on session.idle it takes the oldest file queued in wake/ (by an atomic
//   rename, once) and starts a new turn on that idle session with the
//   file's text (client.session.promptAsync), recording the outcome in
//   wakes.jsonl;
// - in tool.execute.after it takes the oldest file queued in after/ and
//   adds its text to the tool's result: a text item appended to an MCP
//   tool's output.content, or a line appended to a built-in tool's
//   output.output.
import fs from 'node:fs';
import path from 'node:path';

const dir = process.env.VIGIL_HARNESS_PLUGIN_DIR;

function append(file, value) {
  if (dir) fs.appendFileSync(path.join(dir, file), `${JSON.stringify({ at: Date.now(), ...value })}\n`);
}

function take(queue) {
  let names;
  try {
    names = fs.readdirSync(path.join(dir, queue)).filter((n) => n.endsWith('.txt')).sort();
  } catch {
    return null;
  }
  for (const n of names) {
    const from = path.join(dir, queue, n);
    const to = `${from}.taken`;
    try {
      fs.renameSync(from, to);
    } catch {
      continue; // taken meanwhile
    }
    return fs.readFileSync(to, 'utf8');
  }
  return null;
}

export const VigilHarnessTest = async ({ client }) => ({
  event: async ({ event }) => {
    append('events.jsonl', { event });
    if (event.type !== 'session.idle' || !dir) return;
    const text = take('wake');
    if (text === null) return;
    const sessionID = event.properties.sessionID;
    try {
      await client.session.promptAsync({ path: { id: sessionID }, body: { parts: [{ type: 'text', text }] } });
      append('wakes.jsonl', { sessionID, text, ok: true });
    } catch (e) {
      append('wakes.jsonl', { sessionID, text, ok: false, error: String(e && e.stack ? e.stack : e) });
    }
  },
  'tool.execute.before': async (input, output) => { append('hooks.jsonl', { hook: 'tool.execute.before', input, output }); },
  'tool.execute.after': async (input, output) => {
    append('hooks.jsonl', { hook: 'tool.execute.after', input, output });
    const text = dir ? take('after') : null;
    if (text === null) return;
    if (Array.isArray(output.content)) output.content.push({ type: 'text', text });
    else if (typeof output.output === 'string') output.output += `\n${text}`;
  },
});
