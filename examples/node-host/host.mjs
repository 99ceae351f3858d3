#!/usr/bin/env node
// A vigil host in Node, on the vigil-client library (clients/node): it runs
// the command given after `--` as a monitor, prints every notification the
// engine pushes (the envelope an agent would read) until the command's
// ending notification, and exits with the command's exit code. The same
// job as examples/c-host/host.c, in a few dozen lines of library calls.
//
// It talks to a running engine on its socket (`-s SOCKET`, default the
// engine's), or starts an engine of its own with `-c CONFIG` (`vigild
// --stdio`, found on PATH or given with --vigild).
//
// Exit status: the command's; 128+N when it died of signal N; 127 when the
// engine found no such program, 126 when it denied the command, 125 for
// anything else (no engine, a bad argument). See README.md beside it.

import os from 'node:os';
import { parseArgs } from 'node:util';
// In a project of your own: `npm install /path/to/vigil/clients/node`, then
// import { Client, Engine, VigilError } from 'vigil-client';
import { Client, ENDING_TYPES, Engine, VigilError, defaultSocketPath } from '../../clients/node/index.js';

const USAGE = `usage: host.mjs [-s SOCKET | -c CONFIG [--vigild PATH]] [-l LABEL] [-p PATTERN]... [-n NOTIFY] -- COMMAND [ARG]...`;

function fail(status, message) {
  process.stderr.write(`vigil-node-host: ${message}\n`);
  process.exit(status);
}

let opts;
try {
  opts = parseArgs({
    allowPositionals: true,
    options: {
      socket: { type: 'string', short: 's' },
      config: { type: 'string', short: 'c' },
      vigild: { type: 'string', default: 'vigild' },
      label: { type: 'string', short: 'l' },
      pattern: { type: 'string', short: 'p', multiple: true },
      notify: { type: 'string', short: 'n' },
    },
  });
} catch (e) {
  fail(125, `${e.message}\n${USAGE}`);
}
const { values, positionals: argv } = opts;
if (argv.length === 0) fail(125, `no command given\n${USAGE}`);
if (values.socket !== undefined && values.config !== undefined) fail(125, `give -s or -c, not both\n${USAGE}`);

/** The exit status that reports an ending notification (or event). */
function statusOf({ exit_code: code, signal }) {
  if (typeof code === 'number') return code;
  if (typeof signal === 'number') return 128 + signal;
  if (typeof signal === 'string' && os.constants.signals[signal]) return 128 + os.constants.signals[signal];
  return 125;
}

async function run() {
  const host = values.config !== undefined
    ? await Engine.spawn({ vigild: values.vigild, config: values.config, log: 'quiet' })
    : await Client.connect(values.socket ?? defaultSocketPath());
  try {
    // A fresh session that does not outlive us: if this host is killed, the
    // engine stops the command at once rather than let it run unwatched.
    const session = await host.session(undefined, { lingerMs: 0 });
    process.stderr.write(`vigil-node-host: session ${session.name}\n`);
    const monitor = await session.monitorStart({
      argv, cwd: process.cwd(), label: values.label, patterns: values.pattern, notify: values.notify,
    });
    process.stderr.write(`vigil-node-host: started ${monitor.monitor_id} (pid ${monitor.pid})\n`);

    if (monitor.notify === 'none') {
      // No notification will come, not even the ending: ask for the end.
      for (;;) {
        const r = await session.monitorWait({ monitor_id: monitor.monitor_id, for: 'exit', timeout_ms: 3600000 });
        if (!r.timed_out) return r.event ? statusOf(r.event) : 125;
      }
    }
    for await (const n of session) {
      process.stdout.write(`--- notification seq=${n.seq} type=${n.type} ---\n${n.text}\n`);
      // Exactly one ending per monitor, after all of its output.
      if (n.monitor_id === monitor.monitor_id && ENDING_TYPES.includes(n.type)) return statusOf(n);
    }
    return 125; // the client was closed under us
  } finally {
    await host.close();
  }
}

try {
  process.exitCode = await run();
} catch (e) {
  if (e instanceof VigilError && e.codeName === 'command_not_found') fail(127, e.message);
  if (e instanceof VigilError && e.codeName === 'denied') fail(126, e.message);
  fail(125, e.message);
}
