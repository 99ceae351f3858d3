// The errors a vigil client throws, three kinds that a host handles
// differently:
//
// - VigilError: the engine answered a call with an error. It carries the
//   protocol's numeric code (docs/protocol.md section 4), the code's name and
//   the engine's message, which already names the argument, the bound and the
//   value. The call changed nothing; fix the arguments and try again.
// - VigilConnectionError: no answer will come, because there is no engine to
//   talk to (nothing listening, an engine refused for its uid, the connection
//   or the embedded engine went away). Reconnecting may help; retrying the
//   call on the same connection will not.
// - VigilTimeoutError: a deadline the caller gave passed first. The
//   connection is fine; a late answer is dropped when it comes.
//
// A FleetSubscriber (fleet.js) talks to a NATS server instead of an engine,
// and a NatsClient (natsclient.js) to an engine through one: each throws
// VigilConnectionError when the server cannot be reached or is lost, and
// VigilFleetError when the server answers but refuses (a bad password, no
// right to a subject, no JetStream, no such stream, a durable consumer of
// another shape). Retrying the same thing will not help.

/** The protocol's error codes by name (docs/protocol.md section 4). */
export const ERROR_CODES = Object.freeze({
  internal: 0,
  invalid_params: 1,
  not_found: 2,
  denied: 3,
  limit_exceeded: 4,
  invalid_pattern: 5,
  command_not_found: 6,
  spawn_failed: 7,
  already_exited: 8,
  disabled: 9,
  unknown_method: 10,
});

const CODE_NAMES = new Map(Object.entries(ERROR_CODES).map(([name, code]) => [code, name]));

/** An error the engine answered with: `[code, message, ...data]` on the wire. */
export class VigilError extends Error {
  /**
   * @param {number} code the protocol's code (ERROR_CODES)
   * @param {string} message the engine's message, e.g. "denied: command: ..."
   * @param {{method?: string, data?: unknown}} [extra] the method called, and
   *   whatever the error array carried past the message (nothing, today)
   */
  constructor(code, message, { method, data } = {}) {
    super(message);
    this.name = 'VigilError';
    this.code = code;
    /** The code's name (`denied`), or `unknown` for a code this library does not know. */
    this.codeName = CODE_NAMES.get(code) ?? 'unknown';
    this.method = method;
    this.data = data;
  }

  /** The error of a response or of a `vigil.error` notification, as decoded. */
  static fromWire(error, method) {
    if (Array.isArray(error) && typeof error[0] === 'number') {
      const message = typeof error[1] === 'string' ? error[1] : String(error[1]);
      const data = error.length > 2 ? error.slice(2) : undefined;
      return new VigilError(error[0], message, { method, data });
    }
    // Not the protocol's shape: keep what came, under the code for a bug.
    return new VigilError(ERROR_CODES.internal,
      `internal: the engine answered ${method ?? 'a call'} with an error of unexpected shape: ${JSON.stringify(error)}`,
      { method, data: error });
  }
}

/** There is no engine to talk to, or no longer. */
export class VigilConnectionError extends Error {
  constructor(message, { cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'VigilConnectionError';
  }
}

/** A deadline the caller gave (timeoutMs) passed before the answer. */
export class VigilTimeoutError extends Error {
  constructor(message) {
    super(message);
    this.name = 'VigilTimeoutError';
  }
}

/** A NATS server refused what a FleetSubscriber or a NatsClient asked: the
 * message names the server, the stream, the consumer or the subject, and the
 * server's words; `cause` is the NATS client's error. */
export class VigilFleetError extends Error {
  constructor(message, { cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'VigilFleetError';
  }
}
