// Gemini CLI (@google/gemini-cli) driven by a fake Gemini API.
//
// Pointed at the fake by GOOGLE_GEMINI_BASE_URL with a dummy GEMINI_API_KEY
// and security.auth.selectedType = "gemini-api-key" in
// ~/.gemini/settings.json, which also holds the MCP servers (mcpServers,
// with trust: true so a call needs no confirmation) and the hooks (hooks:
// {Event: [{matcher?, hooks: [{type: "command", command, name}]}]}). The
// model is named with -m, so the CLI's router asks no model which model to
// use. GEMINI_CLI_TRUST_WORKSPACE=true trusts the project folder (else a
// headless run refuses to start, exit 55).
//
// Two ways to run it:
// - prompt(text): `gemini -p`, headless, one prompt (the agent's turn and
//   whatever an AfterAgent hook continues), exits; resume: 'latest' or a
//   session id continues a recorded session.
// - interactive(): `gemini` in a tmux pane; type(text) submits a message.
//
// Kept off: usage statistics, telemetry, the update check and its nag.

import path from 'node:path';
import { FAKE_GEMINI_MODEL } from './fake/gemini.mjs';
import { Driver } from './driver.mjs';
import { HARNESS_WAIT_MS } from './sandbox.mjs';

export const GEMINI_PACKAGE = '@google/gemini-cli';

// How Gemini CLI names an MCP server's tool to the model (and in hooks).
export const geminiToolName = (server, tool) => `mcp_${server}_${tool}`;

export class Gemini extends Driver {
  /** opts: sandbox, fake (a FakeModel of gemini), mcp ({name: {command,
   * args}}), hooks, settings (more settings.json keys), env. */
  constructor({ sandbox, fake, mcp = {}, hooks = {}, settings = {}, env = {} }) {
    super(GEMINI_PACKAGE, 'gemini', { sandbox, fake, env });
    sandbox.write(path.join(sandbox.home, '.gemini', 'settings.json'), {
      security: { auth: { selectedType: 'gemini-api-key' } },
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      ui: { theme: 'Default' },
      model: { name: FAKE_GEMINI_MODEL },
      mcpServers: Object.fromEntries(Object.entries(mcp).map(([name, s]) => [name, { ...s, trust: true }])),
      hooks,
      ...settings,
    });
  }

  env() {
    return super.env({
      GEMINI_API_KEY: 'fake-gemini-key',
      GOOGLE_GEMINI_BASE_URL: this.fake.url,
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
    });
  }

  /** `gemini -p text -m MODEL` to its exit: {code, signal, stdout, stderr}. */
  async prompt(text, { resume, args = [], timeout = HARNESS_WAIT_MS } = {}) {
    const extra = resume ? ['--resume', resume] : [];
    return this.runToExit('gemini -p', ['-m', FAKE_GEMINI_MODEL, ...extra, ...args, '-p', text], { timeout });
  }

  /** Starts `gemini` in a tmux pane and waits for its input box. */
  async interactive({ args = [], timeout = HARNESS_WAIT_MS } = {}) {
    return this.startTerminal(['-m', FAKE_GEMINI_MODEL, ...args], /Type your message/, "Gemini CLI's input box", { timeout });
  }
}
