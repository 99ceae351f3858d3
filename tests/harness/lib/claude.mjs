// Claude Code (@anthropic-ai/claude-code) driven by a fake Anthropic API.
//
// Pointed at the fake by ANTHROPIC_BASE_URL with a dummy ANTHROPIC_API_KEY;
// the main model and the small fast model get the fake's two names so the
// fake tells the agent's turns from side requests. Its state lives in the
// sandbox's HOME: ~/.claude.json (written first: onboarding done, the API
// key approved, the project's trust dialog accepted, so no first-run screen
// stops it) and ~/.claude/settings.json (hooks, permissions). MCP servers
// come from a file given with --mcp-config and --strict-mcp-config (nothing
// else is loaded).
//
// Two ways to run it:
// - print(prompt): `claude -p`, headless, one turn, exits.
// - interactive(): `claude` in a tmux pane, where hooks such as a Stop
//   hook with asyncRewake can wake the idle agent. type(text) submits a
//   message. Its debug log (--debug-file) tells when the MCP server is
//   connected.
//
// Kept off: telemetry, error reports, the auto-updater, the official
// plugin marketplace's git clone, nonessential traffic, tool search (which
// would hide MCP tools behind ToolSearch).

import fs from 'node:fs';
import path from 'node:path';
import { FAKE_MAIN_MODEL, FAKE_SMALL_MODEL } from './fake/anthropic.mjs';
import { Driver } from './driver.mjs';
import { HARNESS_WAIT_MS, within } from './sandbox.mjs';

export const CLAUDE_PACKAGE = '@anthropic-ai/claude-code';
export const CLAUDE_API_KEY = 'sk-ant-fake-key-for-the-harness-tests-0000';

// How Claude Code names an MCP server's tool.
export const claudeToolName = (server, tool) => `mcp__${server}__${tool}`;

export class Claude extends Driver {
  /** opts: sandbox, fake (a FakeModel of anthropic), mcp ({name: {command,
   * args, env}}), hooks ({Event: [{matcher?, hooks: [{type: 'command',
   * command, asyncRewake?...}]}]}), allow (permission rules, by default
   * every tool of each MCP server), env (more variables). */
  constructor({ sandbox, fake, mcp = {}, hooks = {}, allow, env = {} }) {
    super(CLAUDE_PACKAGE, 'claude', { sandbox, fake, env });
    this.mcp = mcp;
    this.debugLog = sandbox.file('logs', 'claude-debug.log');
    this.writeConfig({ hooks, allow: allow ?? Object.keys(mcp).map((name) => `mcp__${name}`) });
  }

  writeConfig({ hooks, allow }) {
    const s = this.sandbox;
    s.write(path.join(s.home, '.claude.json'), {
      hasCompletedOnboarding: true,
      lastOnboardingVersion: this.version,
      theme: 'dark',
      autoUpdates: false,
      // Claude Code asks once whether to use an API key found in the
      // environment; it keeps the answer as the key's last 20 characters.
      customApiKeyResponses: { approved: [CLAUDE_API_KEY.slice(-20)], rejected: [] },
      projects: { [s.proj]: { hasTrustDialogAccepted: true, allowedTools: [] } },
    });
    s.write(path.join(s.home, '.claude', 'settings.json'), { hooks, permissions: { allow } });
    this.mcpConfig = s.write('config/claude-mcp.json', { mcpServers: this.mcp });
  }

  env() {
    return super.env({
      ANTHROPIC_BASE_URL: this.fake.url,
      ANTHROPIC_API_KEY: CLAUDE_API_KEY,
      ANTHROPIC_MODEL: FAKE_MAIN_MODEL,
      ANTHROPIC_DEFAULT_OPUS_MODEL: FAKE_MAIN_MODEL,
      ANTHROPIC_DEFAULT_SONNET_MODEL: FAKE_MAIN_MODEL,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: FAKE_SMALL_MODEL,
      ANTHROPIC_SMALL_FAST_MODEL: FAKE_SMALL_MODEL,
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: '1',
      CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
      ENABLE_TOOL_SEARCH: 'false',
    });
  }

  args(extra = []) {
    return ['--mcp-config', this.mcpConfig, '--strict-mcp-config', '--debug-file', this.debugLog, ...extra];
  }

  /** `claude -p prompt` (more arguments in args: --resume ID...); resolves
   * with {code, signal, stdout, stderr, result (the --output-format json
   * result, or null)} once it exits. */
  async print(prompt, { args = [], timeout = HARNESS_WAIT_MS } = {}) {
    const out = await this.runToExit('claude -p', [...this.args(args), '--output-format', 'json', '-p', prompt], { timeout });
    out.result = null;
    try {
      out.result = JSON.parse(out.stdout);
    } catch {
      // not JSON: the caller sees stdout
    }
    return out;
  }

  /** Starts `claude` in a tmux pane and waits until it takes input: its
   * prompt is on screen and every MCP server is connected (its debug log
   * says so; a message typed before would be sent without their tools). */
  async interactive({ args = [], timeout = HARNESS_WAIT_MS } = {}) {
    await this.startTerminal(this.args(args), /❯/, "Claude Code's prompt", { timeout });
    await within(Promise.all(Object.keys(this.mcp).map((name) => this.waitDebug(
      new RegExp(`MCP server "${name}": Successfully connected`), { timeout }))), timeout, 'the MCP servers to connect');
    return this.tmux;
  }

  /** Waits for a line of the debug log matching re (the log is a file
   * Claude Code appends to: watched, and read again every 500 ms). */
  waitDebug(re, { timeout = HARNESS_WAIT_MS } = {}) {
    return new Promise((resolve, reject) => {
      let watcher = null;
      let timer;
      let recheck;
      const check = () => {
        let text = '';
        try {
          text = fs.readFileSync(this.debugLog, 'utf8');
        } catch {
          return;
        }
        const m = re.exec(text);
        if (m) {
          done();
          resolve(m);
        } else if (!watcher) {
          try {
            watcher = fs.watch(this.debugLog, check);
          } catch {
            // not there yet: the timer looks again
          }
        }
      };
      const done = () => {
        clearTimeout(timer);
        clearInterval(recheck);
        watcher?.close();
      };
      recheck = setInterval(check, 500);
      timer = setTimeout(() => {
        done();
        let tail = '';
        try {
          tail = fs.readFileSync(this.debugLog, 'utf8').slice(-3000);
        } catch {
          tail = '(no debug log)';
        }
        reject(new Error(`timed out after ${timeout} ms waiting for ${re} in Claude Code's debug log:\n${tail}`));
      }, timeout);
      check();
    });
  }
}
