// A named session seen from the host (docs/protocol.md section 3): a name,
// and the cursor that makes a resume exact.
//
// The engine numbers a session's notifications (`seq`, from 1, never
// reused) and keeps the last session.queue_max of them. A host that tells
// it, on attaching, the last seq it handled (`last_seq`) gets every later
// one, in order, and is told what it cannot get back. So a Session
// remembers two numbers:
//
// - lastSeq: the highest seq handed to the host (by wait(), an iterator or
//   a 'notification' listener). This is what a gateway stores with its own
//   state once it has acted on a notification, and passes back as
//   `client.session(name, {lastSeq})` after it restarts.
// - receivedSeq: the highest seq this client has received, handed over or
//   still waiting in its inbox. A reconnect of the same client resumes from
//   it (what is in the inbox is not lost), and anything at or below it is a
//   duplicate.
//
// Every protocol method is a method of the session too, with its `session`
// argument filled in, so one connection can serve several sessions.

import { installMethods } from './methods.js';

export class Session {
  /** Made by Client.session(); not by hand. */
  constructor(client, { name, lastSeq, lingerMs }) {
    this.client = client;
    this.name = name;
    this.lastSeq = lastSeq;
    this.receivedSeq = lastSeq;
    this.lingerMs = lingerMs;
    this.epoch = null;
    this.nextSeq = null;
    this.resumed = null;
    this.open = false;
  }

  /** Takes the session_open answer. */
  opened(result) {
    this.name = result.session;
    this.epoch = result.epoch ?? null;
    this.nextSeq = result.next_seq ?? null;
    this.resumed = result.resumed ?? null;
    this.open = true;
  }

  /** session_open's arguments: resume from what this client has (or was given). */
  openArgs() {
    return {
      session: this.name ?? undefined,
      last_seq: this.receivedSeq > 0 ? this.receivedSeq : undefined,
      linger_ms: this.lingerMs,
    };
  }

  /** Any protocol method on this session: `session` is set to its name. */
  call(method, args = {}, options = {}) {
    return this.client.call(method, { ...args, session: this.name }, options);
  }

  /** session_state: 'busy' while the agent is in a turn (idle-mode
   * notifications are held), 'idle' between turns (they are pushed). */
  setState(state, options = {}) {
    return this.call('session_state', { state }, options);
  }

  /** The next notification of this session, or null after timeoutMs. */
  wait({ timeoutMs, filter } = {}) {
    return this.client.wait({ timeoutMs, filter, session: this.name });
  }

  /** This session's notifications as they come, until the client closes. */
  notifications() {
    return this.client.notifications({ session: this.name });
  }

  [Symbol.asyncIterator]() {
    return this.notifications()[Symbol.asyncIterator]();
  }

  /** session_close: stops the session's monitors and deletes it in the
   * engine; the client forgets it (no resume on reconnect). */
  async close(options = {}) {
    const result = await this.call('session_close', {}, options);
    this.open = false;
    this.client.forgetSession(this);
    return result;
  }
}

installMethods(Session.prototype);
