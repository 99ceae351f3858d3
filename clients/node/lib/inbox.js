// The notifications that have arrived and that the host has not taken yet,
// in arrival order, for Client.wait() and the async iterators.
//
// A wait names which notifications it wants (a predicate: one session's, or
// any); the first one waiting that a new notification suits gets it at
// once, otherwise it is kept until someone asks. The inbox is bounded:
// past `max` kept notifications the oldest is dropped and counted
// (`dropped`), since a host that never takes them must not grow without
// end. A named session's dropped notifications can be had again from the
// engine by resuming with an older last_seq.

import { VigilConnectionError } from './errors.js';

/** The default bound on notifications kept for wait() (Client's inboxMax). */
export const INBOX_MAX = 10000;

export class Inbox {
  /**
   * @param {number} max how many notifications to keep at most
   * @param {(n: object) => void} onTaken called for each notification handed
   *   to the host, as it is handed (the Client advances its session's cursor)
   */
  constructor(max, onTaken) {
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`inboxMax must be an integer of at least 1, got ${max}`);
    }
    this.max = max;
    this.onTaken = onTaken;
    this.items = [];
    this.waiters = [];
    this.dropped = 0;
    this.closedBy = undefined; // null: closed on purpose; an error: lost
  }

  /** A notification arrived. Returns true when one had to be dropped for room. */
  push(n) {
    const i = this.waiters.findIndex((w) => w.pred(n));
    if (i >= 0) {
      const [w] = this.waiters.splice(i, 1);
      this.hand(w, n);
      return false;
    }
    this.items.push(n);
    if (this.items.length > this.max) {
      this.items.shift();
      this.dropped += 1;
      return true;
    }
    return false;
  }

  hand(w, n) {
    clearTimeout(w.timer);
    this.onTaken(n);
    w.resolve(n);
  }

  /**
   * The first kept or coming notification that pred accepts (removed from
   * the inbox), or null when timeoutMs passes first. Rejects with a
   * VigilConnectionError when the inbox is closed and none is kept.
   */
  wait(pred, timeoutMs) {
    const i = this.items.findIndex(pred);
    if (i >= 0) {
      const [n] = this.items.splice(i, 1);
      this.onTaken(n);
      return Promise.resolve(n);
    }
    if (this.closedBy !== undefined) {
      return Promise.reject(this.closedBy ?? new VigilConnectionError('the client is closed'));
    }
    return new Promise((resolve, reject) => {
      const w = { pred, resolve, reject, timer: undefined };
      if (timeoutMs !== undefined) {
        w.timer = setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          resolve(null);
        }, timeoutMs);
      }
      this.waiters.push(w);
    });
  }

  /** No more notifications will come: why is null for a close the host
   * asked for, else the VigilConnectionError. Waits fail now; what is kept
   * can still be taken. */
  close(why) {
    if (this.closedBy !== undefined) return;
    this.closedBy = why;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) {
      clearTimeout(w.timer);
      w.reject(why ?? new VigilConnectionError('the client is closed'));
    }
  }
}
