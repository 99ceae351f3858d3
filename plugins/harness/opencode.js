// vigil's OpenCode plugin (docs/mcp.md, "Wake paths": OpenCode). `vigil
// setup opencode` writes it as vigil.js into OpenCode's plugin directory,
// with the JSON string of vigil's absolute path in place of VIGIL_PATH's
// placeholder string below, quotes included (a JSON string is a JavaScript
// string; the placeholder is the file's only one); left as it is, `vigil`
// is found on PATH.
//
// OpenCode has no command hooks: a plugin gets its bus events and the
// tool.execute.* hooks, and the SDK client. This one runs `vigil hook
// opencode EVENT` (a child process, the event's input as JSON on stdin, the
// answer, a text, on stdout) and hands the text on:
// - session.status: busy when a turn starts, idle when it ends (the
//   engine holds idle-mode notifications while busy);
// - tool.execute.after: what is above the session's model cursor, appended
//   to the tool's result (an MCP tool's output.content, a built-in tool's
//   output.output), so it reaches the model with the result;
// - session.idle: `vigil hook opencode session.idle --wait` waits for the
//   next notification above the cursor, and client.session.promptAsync
//   starts a new turn on the idle session with it: the wake. One waiter per
//   session: a second session.idle while one waits starts none; a turn that
//   starts (session.status busy), the session's deletion, or the plugin's
//   process ending ends it (a waiting vigil hook also ends, having taken
//   nothing, when its stdout's reader goes). The session's status hooks
//   and its waiter's start run in the order of their events.
//
// What vigil answers is the notifications' envelopes, framed and escaped by
// the engine; nothing here adds to them. A failure of vigil (none
// installed, no engine running) is silence: OpenCode goes on as without.

import { spawn } from 'node:child_process';

const VIGIL_PATH = "__VIGIL_PATH__";
const vigil = VIGIL_PATH.startsWith('__') ? 'vigil' : VIGIL_PATH;

// The most of a hook's answer read (vigil's own bound is 7000 bytes).
const ANSWER_MAX = 65536;

// Runs `vigil hook opencode EVENT [...args]` with input on stdin; resolves
// with its answer ('' when it said nothing or failed). signal ends it.
function hook(event, input, { args = [], signal } = {}) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(vigil, ['hook', 'opencode', event, ...args], { stdio: ['pipe', 'pipe', 'ignore'] });
    } catch {
      resolve('');
      return;
    }
    const chunks = [];
    let size = 0;
    child.stdout.on('data', (b) => {
      if (size < ANSWER_MAX) chunks.push(b);
      size += b.length;
    });
    const stop = () => child.kill('SIGTERM');
    signal?.addEventListener('abort', stop, { once: true });
    child.on('error', () => resolve(''));
    child.on('close', (code) => {
      signal?.removeEventListener('abort', stop);
      const text = Buffer.concat(chunks).toString('utf8').replace(/\n$/, '');
      resolve(code === 0 && size <= ANSWER_MAX ? text : '');
    });
    child.stdin.on('error', () => {});
    child.stdin.end(JSON.stringify(input));
  });
}

export const VigilPlugin = async ({ client, directory }) => {
  const waiters = new Map(); // sessionID -> AbortController of its waiting hook
  const chains = new Map(); // sessionID -> the promise of its last hook in order
  const turns = new Map(); // sessionID -> how many turns started (busy) so far
  const input = (sessionID, event, extra = {}) => ({ session_id: sessionID, hook_event_name: event, cwd: directory, ...extra });

  // The session's state hooks run one after the other, in the order of
  // their events: each is a process of its own, and one started later can
  // finish first (under load it did). A late `busy` would then hold
  // idle-mode notifications after the turn ended, or end the waiter the
  // session.idle after it had just started: no wake.
  const inOrder = (sessionID, fn) => {
    const next = (chains.get(sessionID) ?? Promise.resolve()).then(fn, fn);
    chains.set(sessionID, next);
    next.finally(() => { if (chains.get(sessionID) === next) chains.delete(sessionID); });
    return next;
  };

  const stopWaiter = (sessionID) => {
    waiters.get(sessionID)?.abort();
    waiters.delete(sessionID);
  };
  process.once('exit', () => { for (const w of waiters.values()) w.abort(); });

  // The wake: wait for the next notification, then start a turn with it.
  const wait = async (sessionID) => {
    if (waiters.has(sessionID)) return;
    const ac = new AbortController();
    waiters.set(sessionID, ac);
    try {
      const text = await hook('session.idle', input(sessionID, 'session.idle'), { args: ['--wait'], signal: ac.signal });
      if (text && !ac.signal.aborted) {
        await client.session.promptAsync({ path: { id: sessionID }, body: { parts: [{ type: 'text', text }] } });
      }
    } catch {
      // A failed prompt leaves the session as it was.
    } finally {
      if (waiters.get(sessionID) === ac) waiters.delete(sessionID);
    }
  };

  return {
    event: async ({ event }) => {
      const sessionID = event?.properties?.sessionID ?? event?.properties?.info?.id;
      if (typeof sessionID !== 'string') return;
      if (event.type === 'session.status') {
        const status = event.properties.status?.type;
        if (status === 'busy') {
          turns.set(sessionID, (turns.get(sessionID) ?? 0) + 1);
          stopWaiter(sessionID);
        }
        if (status === 'busy' || status === 'idle') {
          await inOrder(sessionID, () => hook('session.status', input(sessionID, 'session.status', { status })));
        }
      } else if (event.type === 'session.idle') {
        // The waiter starts once the hooks before it are done, unless a turn
        // started meanwhile; it is not awaited (the bus goes on while it
        // waits) and holds no later hook back.
        const turn = turns.get(sessionID) ?? 0;
        inOrder(sessionID, () => { if ((turns.get(sessionID) ?? 0) === turn) wait(sessionID); });
      } else if (event.type === 'session.deleted') {
        stopWaiter(sessionID);
        turns.delete(sessionID);
      }
    },
    'tool.execute.after': async (info, output) => {
      if (typeof info?.sessionID !== 'string') return;
      const text = await hook('tool.execute.after', input(info.sessionID, 'tool.execute.after'));
      if (!text) return;
      if (Array.isArray(output.content)) output.content.push({ type: 'text', text });
      else if (typeof output.output === 'string') output.output += `\n\n${text}`;
    },
  };
};
