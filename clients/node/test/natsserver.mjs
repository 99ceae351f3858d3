// A real nats-server with JetStream for the fleet tests: on a free port of
// 127.0.0.1, its store in a private temp dir, optionally with a config file
// (accounts, users and their permissions). start() resolves once the server
// says it is ready; stop() always ends it (SIGTERM, then SIGKILL after a
// bound) and removes its store.
//
// The port is found by binding port 0 and letting it go, so another
// process may take it before the server does: the server then exits at
// once, and start() tries again on another port (a few times).
//
// nats-server is Debian's package (scripts/install-deps.sh installs it);
// without it the tests fail saying so, never skip.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** The bound on the server's start and stop: generous, CI is a loaded 2-core machine. */
const SERVER_WAIT_MS = 30000;
/** How many ports start() tries. */
const PORT_TRIES = 5;

// A test file that dies (its runner's timeout, an uncaught error) takes
// its servers with it: nothing else would stop them.
const running = new Set();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** The nats-server program: on PATH, or where Debian puts it (/usr/sbin,
 * not on every user's PATH). */
export function natsServerProgram() {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/sbin', '/usr/local/sbin'];
  for (const dir of dirs) {
    const p = path.join(dir, 'nats-server');
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // not there
    }
  }
  throw new Error('nats-server is not installed (looked on PATH, in /usr/sbin and /usr/local/sbin): ' +
    'the fleet tests need a real one; run scripts/install-deps.sh (Debian package nats-server)');
}

/** A port of 127.0.0.1 that was free a moment ago. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export class NatsServer {
  /**
   * @param {{config?: string, env?: object}} [options] config: the text of
   *   a nats-server config file (its jetstream store is set by this helper)
   */
  static async start({ config } = {}) {
    const program = natsServerProgram();
    let lastError;
    for (let i = 0; i < PORT_TRIES; i++) {
      const s = new NatsServer(program, await freePort(), config);
      try {
        await s.ready;
        return s;
      } catch (e) {
        lastError = e;
        await s.stop();
        if (!/address already in use/i.test(s.log)) break;
      }
    }
    throw lastError;
  }

  constructor(program, port, config) {
    this.program = program;
    this.port = port;
    this.url = `nats://127.0.0.1:${port}`;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-node-nats-'));
    const store = path.join(this.dir, 'store');
    this.args = ['-a', '127.0.0.1', '-p', String(port)];
    if (config === undefined) {
      this.args.push('-js', '-sd', store);
    } else {
      // The store goes in the file: given on the command line too, it is a
      // duplicate the server refuses.
      const file = path.join(this.dir, 'server.conf');
      fs.writeFileSync(file, `${config}\njetstream { store_dir: ${JSON.stringify(store)} }\n`);
      this.args.push('-c', file);
    }
    this.log = '';
    this.launch();
  }

  /** Starts the process; this.ready resolves once it says it is ready. */
  launch() {
    const child = spawn(this.program, this.args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    running.add(child);
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }));
    child.once('error', (e) => { this.log += `spawn error: ${e.message}\n`; });
    child.stderr.setEncoding('utf8');
    const from = this.log.length; // a restart's readiness is in the log after it
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`nats-server on port ${this.port} did not say it was ready ` +
        `within ${SERVER_WAIT_MS} ms; its log:\n${this.log}`)), SERVER_WAIT_MS);
      child.stderr.on('data', (text) => {
        this.log += text;
        if (/Server is ready/.test(this.log.slice(from))) {
          clearTimeout(timer);
          resolve();
        }
      });
      this.exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`nats-server on port ${this.port} exited (${signal ?? code}) before it was ready; its log:\n${this.log}`));
      });
    });
    this.ready.catch(() => {}); // read by start() and restart(); an unread failure is not an unhandled one
  }

  /** Ends the process (SIGTERM; SIGKILL if it has not exited within the bound). */
  async end() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    let timer;
    const late = new Promise((resolve) => { timer = setTimeout(resolve, SERVER_WAIT_MS, 'late'); });
    if (await Promise.race([this.exited, late]) === 'late') {
      this.child.kill('SIGKILL');
      await this.exited;
    }
    clearTimeout(timer);
  }

  /** Stops the server and starts it again on the same port and store (what
   * JetStream keeps, streams and durable consumers, is still there). */
  async restart() {
    await this.end();
    this.launch();
    await this.ready;
  }

  /** Ends the server and removes its store. Safe to call twice. */
  async stop() {
    await this.end();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
