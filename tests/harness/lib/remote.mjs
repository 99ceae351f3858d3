// An engine on "another host", reached by the harness only through a NATS
// broker (docs/fleet.md section 6, "vigil mcp and hooks"): a real
// nats-server with JetStream (clients/node's test helper: a free port of
// 127.0.0.1, a private store, stopped always), a vigild publishing to it
// and answering requests as engine ENGINE, and the files `vigil --nats
// URL --engine ENGINE --session S setup claude-code --project` wrote, with
// the person's password put into the URL (setup refuses to write a URL
// that carries one) and the inbox prefix into the settings' env.
//
// The broker has two users, as section 6's permissions say: the engine's
// (anything), and the person's, granted the one session: publish on
// vigil.ENGINE.SESSION.>, subscribe on the session's notification subject
// and on an inbox prefix of its own (VIGIL_NATS_INBOX, which the settings'
// env gives the hooks and the MCP server alike). So a harness that
// reaches further than its session is refused by the broker, not by luck.
//
// The engine also listens on a socket in a temp dir of its own, for the
// test's own eyes (waitNotified, api_info); nothing the harness runs is
// told of it: the harness's VIGIL_SOCKET names a socket nothing listens on,
// and its MCP entry and hook commands name the broker and the engine only.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Engine, defaultConfig } from '../../mcp/harness.mjs';
import { NatsServer } from '../../../clients/node/test/natsserver.mjs';
import { Client } from '../../../clients/node/index.js';
import { HARNESS_WAIT_MS, VIGIL } from './sandbox.mjs';

// The engine's name in the fleet, and the person's NATS user.
export const ENGINE_NAME = 'build-1';
const ENGINE_USER = ['engine', 'engine-pw'];
const PERSON_USER = ['me', 'me-pw'];
const PERSON_INBOX = '_INBOX_me';

/** The broker's users for session (a name that is its own subject token:
 * letters, digits, - and _). */
function brokerConfig(session) {
  assert.match(session, /^[A-Za-z0-9_-]+$/, `a session name that is its own subject token: ${session}`);
  const prefix = `vigil.${ENGINE_NAME}.${session}`;
  return `authorization {
  users = [
    {user: ${ENGINE_USER[0]}, password: ${ENGINE_USER[1]}}
    {user: ${PERSON_USER[0]}, password: ${PERSON_USER[1]},
     permissions: {publish: ["${prefix}.>"], subscribe: ["${prefix}.n", "${PERSON_INBOX}.>"]}}
  ]
}`;
}

/** nats://USER:PASS@127.0.0.1:PORT of broker. */
const userUrl = (broker, [user, pass]) => broker.url.replace('nats://', `nats://${user}:${pass}@`);

/** Waits (bounded, on the engine's api_info over its socket) until the
 * engine is connected to the broker and serves requests: before that, a
 * hook would be told "no responders" and say nothing. */
async function waitServing(engine, { timeout = HARNESS_WAIT_MS } = {}) {
  const client = await Client.connect(engine.socket);
  try {
    const deadline = Date.now() + timeout;
    for (;;) {
      const { nats } = await client.call('api_info');
      if (nats?.state === 'connected' && nats?.rpc?.serving) return nats;
      assert.ok(Date.now() < deadline, `the engine serves requests through the broker: ${JSON.stringify(nats)}\n${engine.log().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await client.close();
  }
}

/** Starts the broker and the engine (config: overrides, as defaultConfig
 * takes them) for session, both stopped at the sandbox's cleanup (the
 * engine first). Returns {broker, engine, url: the person's URL, inbox: the
 * person's inbox prefix, env: the harness's variables (VIGIL_SOCKET: a
 * socket nothing listens on)}. */
export async function remoteEngine(sandbox, session, config = {}) {
  const broker = await NatsServer.start({ config: brokerConfig(session) });
  sandbox.onCleanup(() => broker.stop());
  const engine = await Engine.start({ config: defaultConfig(config),
    args: ['--nats', userUrl(broker, ENGINE_USER), '--nats-engine', ENGINE_NAME] });
  sandbox.onCleanup(() => engine.stop());
  await waitServing(engine);
  return {
    broker,
    engine,
    url: userUrl(broker, PERSON_USER),
    env: { VIGIL_SOCKET: sandbox.file('host-a', 'run', 'vigil.sock') },
    inbox: PERSON_INBOX,
  };
}

/** The options that point a vigil command line at the remote engine's
 * session, before its subcommand. */
const natsOptions = (url, session) => ['--nats', url, '--engine', ENGINE_NAME, '--session', session];

/** Checks what `vigil --nats setupUrl --engine ENGINE --session session
 * setup claude-code --project` wrote in the project (.mcp.json and
 * .claude/settings.json): the MCP server's arguments and every hook
 * command carry the three options before their subcommand. Then puts the
 * person's URL (url: the same server with user and password) in their
 * place, and the person's inbox prefix (VIGIL_NATS_INBOX) in the settings'
 * `env`, which Claude Code gives its hooks and its MCP servers alike.
 * Returns {mcp, settings}: what it wrote. */
export function pointSetupAtNats(proj, { setupUrl, url, session, inbox }) {
  const mcpFile = path.join(proj, '.mcp.json');
  const settingsFile = path.join(proj, '.claude', 'settings.json');
  const mcp = JSON.parse(fs.readFileSync(mcpFile, 'utf8'));
  const server = mcp.mcpServers?.vigil;
  assert.equal(server?.command, VIGIL, `setup's MCP entry runs this vigil: ${JSON.stringify(server)}`);
  assert.deepEqual(server.args, [...natsOptions(setupUrl, session), 'mcp'],
    `setup's MCP entry runs vigil --nats ... mcp: ${JSON.stringify(server)}`);
  server.args = [...natsOptions(url, session), 'mcp'];
  fs.writeFileSync(mcpFile, `${JSON.stringify(mcp, null, 2)}\n`);

  const settings = JSON.parse(fs.readFileSync(settingsFile, 'utf8'));
  let commands = 0;
  for (const [event, groups] of Object.entries(settings.hooks ?? {})) {
    for (const handler of groups.flatMap((g) => g.hooks)) {
      assert.equal(handler.command, [VIGIL, ...natsOptions(setupUrl, session), 'hook', 'claude-code', event].join(' '),
        `setup's ${event} hook runs vigil --nats ... hook claude-code ${event}`);
      handler.command = [VIGIL, ...natsOptions(url, session), 'hook', 'claude-code', event].join(' ');
      commands++;
    }
  }
  assert.equal(commands, 4, `setup wrote vigil's four hooks: ${JSON.stringify(settings.hooks)}`);
  settings.env = { ...settings.env, VIGIL_NATS_INBOX: inbox };
  fs.writeFileSync(settingsFile, `${JSON.stringify(settings, null, 2)}\n`);
  return { mcp, settings };
}

/** Who connected to the engine, as its log says: {socketPids: the pids of
 * the processes that connected to its socket, natsClients: Map of request
 * subject -> the Vigil-Client ids of the requesters on it}. */
export function engineConnections(engine) {
  const socketPids = new Set();
  const natsClients = new Map();
  const log = engine.log();
  for (const m of log.matchAll(/connection from socket uid=\d+ pid=(-?\d+) \(session/g)) socketPids.add(Number(m[1]));
  for (const m of log.matchAll(/connection from nats (\S+) client (\S+) \(session/g)) {
    if (!natsClients.has(m[1])) natsClients.set(m[1], new Set());
    natsClients.get(m[1]).add(m[2]);
  }
  return { socketPids, natsClients };
}
