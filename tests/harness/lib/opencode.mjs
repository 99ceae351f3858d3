// OpenCode (opencode-ai) driven by a fake OpenAI-compatible chat API.
//
// Pointed at the fake by a provider in the project's opencode.json
// ("npm": "@ai-sdk/openai-compatible", options.baseURL, a dummy apiKey),
// with the main model and a small model (session titles) under the fake's
// two names; MCP servers are its "mcp" entries ({type: "local", command:
// [argv], environment}). Its own state lives under the sandbox's XDG
// directories.
//
// OpenCode installs @opencode-ai/plugin with npm into each config
// directory (~/.config/opencode, the project's .opencode) at start, unless
// the directory already has node_modules/ and a package-lock.json naming
// it: the driver writes those, so no run reaches the npm registry. (A plain
// JavaScript plugin needs nothing from that package.) The models.dev
// catalog fetch, the auto-update, LSP downloads and sharing are off by
// their OPENCODE_DISABLE_* variables.
//
// Two ways to run it:
// - run(prompt): `opencode run --format json`, one turn, exits; session: an
//   id to continue.
// - serve(): `opencode serve` and its HTTP API (createSession,
//   promptAsync), where the test plugin (lib/opencode-plugin.js, with
//   plugin: true) can start a new turn on an idle session (wake()) and add
//   text to a tool's result (afterTool()); it works under `run` too.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FAKE_CHAT_MODEL, FAKE_CHAT_SMALL_MODEL } from './fake/chat.mjs';
import { Driver, jsonLines } from './driver.mjs';
import { HARNESS_WAIT_MS } from './sandbox.mjs';

export const OPENCODE_PACKAGE = 'opencode-ai';
const PLUGIN_SOURCE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'opencode-plugin.js');

// How OpenCode names an MCP server's tool to the model.
export const opencodeToolName = (server, tool) => `${server}_${tool}`;

/** A JSON-lines file's objects (a missing file: none). */
function jsonFile(file) {
  try {
    return jsonLines(fs.readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
}

export class OpenCode extends Driver {
  /** opts: sandbox, fake (a FakeModel of chat), mcp ({name: {command,
   * args}}), plugin (install the test plugin), config (more opencode.json
   * keys), env. */
  constructor({ sandbox, fake, mcp = {}, plugin = false, config = {}, env = {} }) {
    super(OPENCODE_PACKAGE, 'opencode', { sandbox, fake, env });
    this.server = null;
    this.url = null;
    this.pluginDir = plugin ? path.join(sandbox.dir, 'plugin-records') : null;
    const configDirs = [path.join(sandbox.home, '.config', 'opencode'), path.join(sandbox.proj, '.opencode')];
    for (const d of configDirs) {
      const dep = { '@opencode-ai/plugin': this.version };
      sandbox.write(path.join(d, 'package.json'), { dependencies: dep });
      sandbox.write(path.join(d, 'package-lock.json'), { lockfileVersion: 3, packages: { '': { dependencies: dep } } });
      fs.mkdirSync(path.join(d, 'node_modules'), { recursive: true });
    }
    if (plugin) {
      for (const q of ['wake', 'after']) fs.mkdirSync(path.join(this.pluginDir, q), { recursive: true });
      sandbox.write(path.join(sandbox.proj, '.opencode', 'plugin', 'vigil-harness-test.js'), fs.readFileSync(PLUGIN_SOURCE, 'utf8'));
    }
    const marks = sandbox.env();
    sandbox.write(path.join(sandbox.proj, 'opencode.json'), {
      $schema: 'https://opencode.ai/config.json',
      provider: {
        fake: {
          npm: '@ai-sdk/openai-compatible',
          name: 'Fake',
          options: { baseURL: `${fake.url}/v1`, apiKey: 'fake-openai-key' },
          models: {
            [FAKE_CHAT_MODEL]: { name: 'Fake main', tool_call: true },
            [FAKE_CHAT_SMALL_MODEL]: { name: 'Fake small' },
          },
        },
      },
      model: `fake/${FAKE_CHAT_MODEL}`,
      small_model: `fake/${FAKE_CHAT_SMALL_MODEL}`,
      autoupdate: false,
      share: 'disabled',
      mcp: Object.fromEntries(Object.entries(mcp).map(([name, s]) => [name, {
        type: 'local', command: [s.command, ...s.args], enabled: true,
        environment: { VIGIL_HARNESS_SANDBOX: marks.VIGIL_HARNESS_SANDBOX, ...(s.env ?? {}) },
      }])),
      ...config,
    });
  }

  env() {
    return super.env({
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      OPENCODE_DISABLE_SHARE: '1',
      OPENCODE_DISABLE_CLAUDE_CODE: '1',
      ...(this.pluginDir ? { VIGIL_HARNESS_PLUGIN_DIR: this.pluginDir } : {}),
    });
  }

  /** `opencode run --format json prompt` (session: an id to continue) to
   * its exit: {code, signal, stdout, stderr, events, sessionId}. */
  async run(prompt, { session, args = [], timeout = HARNESS_WAIT_MS } = {}) {
    const extra = session ? ['--session', session] : [];
    const out = await this.runToExit('opencode run', ['run', '--format', 'json', ...extra, ...args, prompt], { timeout });
    out.events = jsonLines(out.stdout);
    out.sessionId = out.events.find((e) => typeof e.sessionID === 'string')?.sessionID ?? session ?? null;
    return out;
  }

  /** Starts `opencode serve` on 127.0.0.1 (a port it picks) and resolves
   * with its URL once it listens. */
  async serve({ timeout = HARNESS_WAIT_MS } = {}) {
    this.server = this.sandbox.spawn('opencode serve', this.bin, ['serve', '--hostname', '127.0.0.1', '--port', '0'], { env: this.env() });
    const m = await this.server.waitOutput(/listening on (http:\/\/127\.0\.0\.1:\d+)/, timeout);
    this.url = m[1];
    return this.url;
  }

  /** A request to the server's HTTP API; resolves with the parsed JSON
   * (or null for an empty body); fails on a status >= 400. */
  async api(method, p, body) {
    const res = await fetch(`${this.url}${p}`, {
      method, headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 400) throw new Error(`opencode ${method} ${p}: HTTP ${res.status}: ${text.slice(0, 500)}`);
    return text ? JSON.parse(text) : null;
  }

  createSession() {
    return this.api('POST', '/session', {});
  }

  /** Starts a turn on session id with text (POST /session/ID/prompt_async:
   * answers at once, the turn runs on). */
  promptAsync(id, text) {
    return this.api('POST', `/session/${encodeURIComponent(id)}/prompt_async`, { parts: [{ type: 'text', text }] });
  }

  /** Queues text for the test plugin: the next session.idle it sees starts
   * a turn with it (once). */
  wake(text) {
    this.queuePlugin('wake', text);
  }

  /** Queues text for the test plugin: the next tool.execute.after adds it
   * to that tool's result (once). */
  afterTool(text) {
    this.queuePlugin('after', text);
  }

  queuePlugin(queue, text) {
    if (!this.pluginDir) throw new Error('the test plugin is not installed (new OpenCode({plugin: true}))');
    const d = path.join(this.pluginDir, queue);
    const n = fs.readdirSync(d).length;
    fs.writeFileSync(path.join(d, `.${n}.part`), text);
    fs.renameSync(path.join(d, `.${n}.part`), path.join(d, `${String(n).padStart(6, '0')}.txt`));
  }

  /** What the test plugin recorded: events (bus events), hooks
   * (tool.execute.* calls), wakes (promptAsync outcomes). */
  pluginRecords() {
    const f = (name) => jsonFile(path.join(this.pluginDir, name));
    return { events: f('events.jsonl'), hooks: f('hooks.jsonl'), wakes: f('wakes.jsonl') };
  }
}
