// Finding and connecting to an engine's Unix socket (docs/protocol.md 2.2).
//
// The default path is the engine's own: `$XDG_RUNTIME_DIR/vigil/vigil.sock`
// when XDG_RUNTIME_DIR is set and non-empty, else
// `/tmp/vigil-$EUID/vigil.sock`.
//
// Whoever serves the socket reads everything a client sends (commands,
// environments, tokens), so a client must not talk to an engine someone
// else runs. vigil's C and Python clients read the server's uid from the
// kernel (SO_PEERCRED); Node has no call for that, so this client checks
// what decides who could have bound the socket instead, by the engine's own
// rule: the socket's directory must be a real directory owned by this user
// or root and writable by nobody else, and the socket file (whose owner is
// the uid that bound it) must belong to this user or root. The file is
// looked at again once connected: the same file must still be there, so it
// was not swapped between the check and the connect.

import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { VigilConnectionError } from './errors.js';

/** The longest socket path the engine listens on (sun_path less its NUL). */
export const SOCKET_PATH_MAX = 107;

/** The engine's default socket path, as `vigild --listen` chooses it. */
export function defaultSocketPath(env = process.env) {
  const xdg = env.XDG_RUNTIME_DIR;
  if (xdg) return path.join(xdg, 'vigil', 'vigil.sock');
  return `/tmp/vigil-${process.geteuid()}/vigil.sock`;
}

function trusted(uid) {
  return uid === process.geteuid() || uid === 0;
}

/** Throws a VigilConnectionError unless only this user (or root) could have
 * put the socket at socketPath. Returns its lstat. */
async function checkSocket(socketPath) {
  const dir = path.dirname(socketPath);
  let dirStat;
  let sockStat;
  try {
    dirStat = await fs.lstat(dir);
    sockStat = await fs.lstat(socketPath);
  } catch (e) {
    if (e.code === 'ENOENT') {
      throw new VigilConnectionError(`no engine at ${socketPath}: the socket does not exist ` +
        `(start one with \`vigild --listen ${socketPath}\`)`, { cause: e });
    }
    throw new VigilConnectionError(`cannot look at ${socketPath}: ${e.message}`, { cause: e });
  }
  const me = process.geteuid();
  if (!dirStat.isDirectory()) {
    throw new VigilConnectionError(`refusing the engine at ${socketPath}: ${dir} is not a directory ` +
      `(a symbolic link, or another file), so it cannot be trusted to hold vigil's socket`);
  }
  if (!trusted(dirStat.uid) || (dirStat.mode & 0o022) !== 0) {
    throw new VigilConnectionError(`refusing the engine at ${socketPath}: its directory ${dir} belongs to ` +
      `uid ${dirStat.uid} with mode 0${(dirStat.mode & 0o7777).toString(8)}; it must belong to uid ${me} ` +
      `(yours) or root and be writable by nobody else, or whoever can write to it could put their own ` +
      `socket there`);
  }
  if (!sockStat.isSocket()) {
    throw new VigilConnectionError(`no engine at ${socketPath}: it is not a socket`);
  }
  if (!trusted(sockStat.uid)) {
    throw new VigilConnectionError(`refusing the engine at ${socketPath}: the socket belongs to uid ` +
      `${sockStat.uid}, not to uid ${me} (yours) or root; whoever owns it may be impersonating vigild`);
  }
  return sockStat;
}

/**
 * Connects to the engine at socketPath, after checking who could have made
 * the socket (above).
 * @returns {Promise<net.Socket>} the connected socket
 */
export async function connectSocket(socketPath) {
  if (Buffer.byteLength(socketPath) > SOCKET_PATH_MAX) {
    throw new VigilConnectionError(`socket path must be at most ${SOCKET_PATH_MAX} bytes, ` +
      `got ${Buffer.byteLength(socketPath)}: ${socketPath}`);
  }
  const before = await checkSocket(socketPath);
  const socket = await new Promise((resolve, reject) => {
    const s = net.createConnection(socketPath);
    s.once('connect', () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', (e) => {
      const why = e.code === 'ECONNREFUSED'
        ? `no engine is listening at ${socketPath} (the socket is left from one that has gone)`
        : `cannot connect to ${socketPath}: ${e.message}`;
      reject(new VigilConnectionError(why, { cause: e }));
    });
  });
  let after;
  try {
    after = await fs.lstat(socketPath);
  } catch {
    after = null;
  }
  if (after === null || after.ino !== before.ino || after.dev !== before.dev) {
    socket.destroy();
    throw new VigilConnectionError(`refusing the engine at ${socketPath}: the socket was replaced ` +
      `while connecting; try again`);
  }
  return socket;
}
