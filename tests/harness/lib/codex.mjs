// Codex CLI (@openai/codex) driven by a fake OpenAI Responses API.
//
// Pointed at the fake by a model provider in $CODEX_HOME/config.toml
// (base_url, wire_api = "responses", the dummy key in the variable its
// env_key names); MCP servers are [mcp_servers.NAME] tables there, hooks
// are $CODEX_HOME/hooks.json. CODEX_HOME is the sandbox's ~/.codex.
//
// Three ways to run it:
// - exec(prompt): `codex exec --json`, one turn, exits; resume: a thread id
//   continues that thread (`codex exec resume ID`).
// - startDaemon() + queue(thread, text): the app-server daemon and
//   `codex queue --thread ID --message TEXT --resume`, which starts a turn
//   on an idle thread with nobody at a terminal (stopDaemon() at cleanup).
//
// Hooks run only once trusted (Codex keeps a hash of each trusted hook);
// the driver passes --dangerously-bypass-hook-trust to `codex exec`, which
// runs them for that invocation. Kept off: analytics, the update check,
// plugins and remote plugins (a git ls-remote of openai/plugins), apps,
// shell snapshots, request compression. Codex hands an MCP server only a
// few variables of its own environment; the sandbox's marks are passed in
// the server's `env` table so its processes stay findable.

import path from 'node:path';
import { FAKE_RESPONSES_MODEL } from './fake/responses.mjs';
import { Driver, jsonLines } from './driver.mjs';
import { HARNESS_WAIT_MS } from './sandbox.mjs';

export const CODEX_PACKAGE = '@openai/codex';
export const CODEX_KEY_VAR = 'VIGIL_FAKE_OPENAI_KEY';

// How Codex names an MCP server's tool to the model: a namespace tool
// mcp__SERVER holding TOOL (the fake lists it as mcp__SERVER__TOOL), and in
// its hooks' tool_name.
export const codexToolName = (server, tool) => `mcp__${server}__${tool}`;

/** A TOML value (strings, numbers, booleans, arrays of those). */
function tomlValue(v) {
  if (typeof v === 'string') return JSON.stringify(v); // a TOML basic string is a JSON string
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  throw new TypeError(`no TOML value for ${JSON.stringify(v)}`);
}

/** A TOML document from an object whose object values are tables. */
export function toml(obj, prefix = '') {
  const lines = [];
  const tables = [];
  for (const [k, v] of Object.entries(obj)) {
    const key = /^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k);
    if (v && typeof v === 'object' && !Array.isArray(v)) tables.push([key, v]);
    else lines.push(`${key} = ${tomlValue(v)}`);
  }
  let out = lines.length ? `${lines.join('\n')}\n` : '';
  for (const [key, v] of tables) {
    const name = prefix ? `${prefix}.${key}` : key;
    out += `\n[${name}]\n${toml(v, name)}`;
  }
  return out;
}

export class Codex extends Driver {
  /** opts: sandbox, fake (a FakeModel of responses), mcp ({name: {command,
   * args}}), hooks ({Event: [{matcher?, hooks: [{type: 'command',
   * command}]}]}), config (more config.toml keys), env. */
  constructor({ sandbox, fake, mcp = {}, hooks = null, config = {}, env = {} }) {
    super(CODEX_PACKAGE, 'codex', { sandbox, fake, env });
    this.codexHome = path.join(sandbox.home, '.codex');
    this.daemon = false;
    const marks = sandbox.env();
    const serverEnv = Object.fromEntries(['VIGIL_HARNESS_SANDBOX', 'VIGIL_TEST_RUN', 'VIGIL_MCP_TEST_ID', 'ASAN_OPTIONS',
      'UBSAN_OPTIONS', 'LSAN_OPTIONS'].filter((k) => marks[k] !== undefined).map((k) => [k, marks[k]]));
    const servers = Object.fromEntries(Object.entries(mcp).map(([name, s]) => [name,
      { command: s.command, args: s.args, env: { ...serverEnv, ...(s.env ?? {}) } }]));
    sandbox.write(path.join(this.codexHome, 'config.toml'), toml({
      model: FAKE_RESPONSES_MODEL,
      model_provider: 'fake',
      approval_policy: 'never',
      sandbox_mode: 'read-only',
      check_for_update_on_startup: false,
      ...config,
      features: { plugins: false, remote_plugin: false, apps: false, shell_snapshot: false, enable_request_compression: false },
      analytics: { enabled: false },
      model_providers: {
        fake: {
          name: 'fake', base_url: `${fake.url}/v1`, wire_api: 'responses', env_key: CODEX_KEY_VAR,
          request_max_retries: 0, stream_max_retries: 0,
        },
      },
      mcp_servers: servers,
    }));
    if (hooks) sandbox.write(path.join(this.codexHome, 'hooks.json'), { hooks });
    sandbox.onCleanup(() => this.stopDaemon());
  }

  env() {
    return super.env({ CODEX_HOME: this.codexHome, [CODEX_KEY_VAR]: 'fake-openai-key' });
  }

  /** `codex exec --json prompt` (resume: a thread id to continue); resolves
   * at its exit with {code, stdout, stderr, events (the JSON lines), threadId}. */
  async exec(prompt, { resume, args = [], timeout = HARNESS_WAIT_MS } = {}) {
    const sub = resume ? ['exec', 'resume', resume] : ['exec'];
    const out = await this.runToExit('codex exec', [...sub, '--json', '--skip-git-repo-check',
      '--dangerously-bypass-hook-trust', ...args, prompt], { timeout });
    out.events = jsonLines(out.stdout);
    out.threadId = out.events.find((e) => e.type === 'thread.started')?.thread_id ?? resume ?? null;
    return out;
  }

  /** Starts the app-server daemon (`codex app-server daemon start`). */
  async startDaemon() {
    const r = await this.runToExit('codex app-server daemon start', ['app-server', 'daemon', 'start']);
    if (r.code !== 0) throw new Error(`codex app-server daemon start failed (${r.code}):\n${r.stdout}\n${r.stderr}`);
    this.daemon = true;
    return r;
  }

  /** Queues text for thread and resumes it on the daemon
   * (`codex queue --thread ID --message TEXT --resume`). */
  async queue(thread, text) {
    const r = await this.runToExit('codex queue', ['queue', '--thread', thread, '--message', text, '--resume']);
    if (r.code !== 0) throw new Error(`codex queue failed (${r.code}):\n${r.stdout}\n${r.stderr}`);
    return r;
  }

  /** Stops the daemon if this driver started it; its update loop, which
   * `daemon stop` leaves running, is ended by the sandbox's cleanup. */
  async stopDaemon() {
    if (!this.daemon) return;
    this.daemon = false;
    await this.runToExit('codex app-server daemon stop', ['app-server', 'daemon', 'stop']);
  }
}
