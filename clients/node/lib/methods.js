// The protocol's methods (docs/protocol.md section 5) as async methods of a
// Client and of a Session: `client.monitorStart({command, patterns})` calls
// `monitor_start` with those arguments. The JavaScript name is the
// protocol's in camelCase; the arguments and the result are exactly the
// protocol's, spelled as on the wire (`monitor_id`, `timeout_ms`), so
// docs/protocol.md documents them as they are.
//
// session_open is not here: Client.session() opens a session and returns a
// Session that remembers where it is (session.js). session_state and
// session_close are, for the client's current session; a Session has
// setState() and close() for its own.

/** JavaScript name -> protocol name. */
export const METHODS = Object.freeze({
  ping: 'ping',
  apiInfo: 'api_info',
  configReload: 'config_reload',
  sessionState: 'session_state',
  sessionClose: 'session_close',
  sessionList: 'session_list',
  monitorStart: 'monitor_start',
  monitorStop: 'monitor_stop',
  monitorList: 'monitor_list',
  monitorStatus: 'monitor_status',
  monitorOutput: 'monitor_output',
  monitorLogs: 'monitor_logs',
  monitorEvents: 'monitor_events',
  monitorWait: 'monitor_wait',
  processRun: 'process_run',
  cursorTake: 'cursor_take',
  cursorGet: 'cursor_get',
  cursorAdvance: 'cursor_advance',
  notificationsSince: 'notifications_since',
});

/** The ending notification types: exactly one per monitor, after all its output. */
export const ENDING_TYPES = Object.freeze(['exit', 'stopped', 'timed_out', 'idle_timeout', 'overload']);

/** The methods that start a process: without a `cwd` they are sent the
 * host's working directory, so a command runs where its caller is, as from
 * a shell (`cwd: '.'` asks for the engine's own). */
const STARTS = new Set(['monitor_start', 'process_run']);

/** args with the host's working directory as `cwd` when it has none (and
 * the host's can be read: a removed one leaves the engine's). */
function withCallerCwd(args) {
  if (args === null || typeof args !== 'object' || args.cwd !== undefined) return args;
  try {
    return { ...args, cwd: process.cwd() };
  } catch {
    return args;
  }
}

/**
 * Gives proto one method per protocol method, each calling
 * `this.call(wireName, args, options)`.
 */
export function installMethods(proto) {
  for (const [name, wire] of Object.entries(METHODS)) {
    Object.defineProperty(proto, name, {
      value: function (args = {}, options = {}) {
        return this.call(wire, STARTS.has(wire) ? withCallerCwd(args) : args, options);
      },
      writable: true,
      configurable: true,
    });
  }
}
