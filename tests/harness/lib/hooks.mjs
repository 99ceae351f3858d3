// Hooks that record what a harness gives them and answer what the test
// queued: the test side of lib/hook.sh.
//
// A driver puts `recorder.command(EVENT)` in a harness's hook config for
// each event it wants; every run of the hook leaves its stdin (the event's
// JSON) in the recorder's inputs/, in order, and answers with the next
// answer the test queued for that event (answer()), or with nothing and
// status 0. Tests await a hook run (waitInput) instead of guessing when a
// harness ran it.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HARNESS_WAIT_MS } from './sandbox.mjs';

export const HOOK_SH = path.join(path.dirname(fileURLToPath(import.meta.url)), 'hook.sh');

// A path the hook command line can hold without quoting trouble.
function plainPath(p) {
  if (!/^[A-Za-z0-9_./+-]+$/.test(p)) throw new Error(`a hook path must be plain (letters, digits, _ . / + -): ${p}`);
  return p;
}

/** A hook's answer adding text to the model's context, as Claude Code,
 * Codex and Gemini CLI read it from the hook's stdout:
 * {"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": TEXT}}. */
export function contextAnswer(event, text) {
  return { stdout: `${JSON.stringify({ hookSpecificOutput: { hookEventName: event, additionalContext: text } })}\n` };
}

/** A hook's answer that keeps the agent going with reason as its next
 * message: {"decision": "block", "reason": REASON} on stdout (a Codex
 * Stop hook, a Gemini CLI AfterAgent hook). */
export function blockAnswer(reason) {
  return { stdout: `${JSON.stringify({ decision: 'block', reason })}\n` };
}

export class HookRecorder {
  constructor(dir) {
    this.dir = plainPath(dir);
    fs.mkdirSync(path.join(dir, 'inputs'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'answers'), { recursive: true });
    this.queued = 0;
  }

  /** The shell command a harness runs for event (a plain word: SessionStart). */
  command(event) {
    if (!/^[A-Za-z][A-Za-z0-9_.-]*$/.test(event)) throw new Error(`a hook event name must be a plain word: ${event}`);
    return `sh ${plainPath(HOOK_SH)} ${this.dir} ${event}`;
  }

  /** The hook config entry of event running this recorder, in the shape
   * Claude Code, Codex and Gemini CLI share: [{hooks: [{type: 'command',
   * command, ...extra}]}] (extra: asyncRewake, name, timeout...). */
  entry(event, extra = {}) {
    return [{ hooks: [{ type: 'command', command: this.command(event), ...extra }] }];
  }

  /** Queues the answer of the next run of event's hook: stdout, stderr, the
   * exit status, and optionally a gate (a path the hook waits for before
   * answering: the test creates it to let the hook go on). */
  answer(event, { stdout = '', stderr = '', code = 0, gate } = {}) {
    const d = path.join(this.dir, 'answers', event);
    fs.mkdirSync(d, { recursive: true });
    this.queued += 1;
    const base = path.join(d, String(this.queued).padStart(6, '0'));
    fs.writeFileSync(`${base}.out`, stdout);
    fs.writeFileSync(`${base}.err`, stderr);
    if (gate !== undefined) fs.writeFileSync(`${base}.gate`, plainPath(gate));
    // The .code file last: the hook takes an answer by its .code.
    fs.writeFileSync(`${base}.code`, `${code}\n`);
  }

  /** Every recorded run, in order: {event, id, file, input (the parsed
   * JSON, or the raw text when it is not JSON), raw}; of event only when
   * given. */
  inputs(event) {
    let names;
    try {
      names = fs.readdirSync(path.join(this.dir, 'inputs'));
    } catch {
      return [];
    }
    const runs = [];
    for (const name of names) {
      const m = /^([A-Za-z][A-Za-z0-9_.-]*)\.(\d+)-(\d+)\.json$/.exec(name);
      if (!m || (event !== undefined && m[1] !== event)) continue;
      const file = path.join(this.dir, 'inputs', name);
      const raw = fs.readFileSync(file, 'utf8');
      let input = raw;
      try {
        input = JSON.parse(raw);
      } catch {
        // kept raw: a harness may give a hook something that is not JSON
      }
      runs.push({ event: m[1], stamp: BigInt(m[2]), id: `${m[2]}-${m[3]}`, file, input, raw });
    }
    return runs.sort((a, b) => (a.stamp < b.stamp ? -1 : a.stamp > b.stamp ? 1 : 0));
  }

  /** The names of the environment variables the hook ran with, per run id. */
  envNames(run) {
    try {
      return fs.readFileSync(path.join(this.dir, 'env', `${run.event}.${run.id}`), 'utf8').split('\n').filter(Boolean);
    } catch {
      return [];
    }
  }

  /** The first run of event's hook (recorded, or to come) whose input
   * matches pred; bounded. */
  waitInput(event, pred = () => true, { timeout = HARNESS_WAIT_MS, what } = {}) {
    const dir = path.join(this.dir, 'inputs');
    return new Promise((resolve, reject) => {
      let timer;
      let recheck;
      let watcher;
      const check = () => {
        const run = this.inputs(event).find((r) => pred(r.input, r));
        if (run) {
          done();
          resolve(run);
        }
      };
      const done = () => {
        clearTimeout(timer);
        clearInterval(recheck);
        watcher?.close();
      };
      watcher = fs.watch(dir, check);
      // inotify can drop events under load: look again every second too.
      recheck = setInterval(check, 1000);
      timer = setTimeout(() => {
        done();
        const seen = this.inputs().map((r) => r.event).join(', ') || 'none';
        reject(new Error(`timed out after ${timeout} ms waiting for ${what ?? `a run of the ${event} hook`} (hook runs so far: ${seen})`));
      }, timeout);
      check();
    });
  }
}
