// Exactly once into the host (docs/fleet.md section 3): per engine and
// session, what the host has injected, so a message JetStream delivers
// again is recognised and not injected twice.
//
// JetStream delivers at least once: a message whose ack was lost, or that
// a gateway took and died before acking, comes again. An engine numbers a
// session's notifications 1, 2, 3... under its epoch, and keeps both
// across its restarts; one that lost its state directory draws a new epoch
// and numbers from 1 again. So the ledger keeps, per (engine, session), the
// epoch and the highest seq injected under it:
//
// - same epoch, seq at or below it: injected already (a duplicate);
// - same epoch, seq above it: new;
// - another epoch: a new numbering, taken as new, unless it is an epoch
//   this ledger has seen the engine leave (a message of it delivered again
//   after the new epoch's were injected): the engine never goes back to
//   an epoch, so that one is a duplicate too. The left epochs are kept,
//   the last PAST_EPOCHS_MAX of them, with the cursor.
//
// The host restores the ledger from its own records at start (`cursor`),
// and takes it back (entries()) to store with what it injected.

import { EPOCH, SESSION_NAME, describe } from './notification.js';
import { ENGINE_NAME } from './fleetwire.js';

/** How many epochs an (engine, session) is remembered to have left. */
export const PAST_EPOCHS_MAX = 8;

/** The ledger's verdict on a message. */
export const Verdict = Object.freeze({
  new: 'new',
  duplicate: 'duplicate',
});

/** The key of an (engine, session): neither name can hold a NUL. */
const keyOf = (engine, session) => `${engine}\0${session}`;

/** A checked copy of one cursor entry, or a throw naming what is wrong. */
function checkedEntry(e, i) {
  const where = `cursor[${i}]`;
  if (e === null || typeof e !== 'object') throw new TypeError(`${where} must be {engine, session, epoch, seq}, got ${describe(e)}`);
  if (typeof e.engine !== 'string' || !ENGINE_NAME.test(e.engine)) {
    throw new RangeError(`${where}.engine must be an engine name (1..64 of [A-Za-z0-9_-]), got ${describe(e.engine)}`);
  }
  if (typeof e.session !== 'string' || !SESSION_NAME.test(e.session)) {
    throw new RangeError(`${where}.session must be a session name (1..64 of [A-Za-z0-9._:-]), got ${describe(e.session)}`);
  }
  if (typeof e.epoch !== 'string' || !EPOCH.test(e.epoch)) {
    throw new RangeError(`${where}.epoch must be 16 hex digits, got ${describe(e.epoch)}`);
  }
  if (!Number.isSafeInteger(e.seq) || e.seq < 0) {
    throw new RangeError(`${where}.seq must be an integer 0..2^53-1, got ${describe(e.seq)}`);
  }
  const past = e.pastEpochs ?? [];
  if (!Array.isArray(past) || past.length > PAST_EPOCHS_MAX || !past.every((p) => typeof p === 'string' && EPOCH.test(p))) {
    throw new RangeError(`${where}.pastEpochs must be an array of at most ${PAST_EPOCHS_MAX} epochs (16 hex digits), got ${describe(past)}`);
  }
  return { engine: e.engine, session: e.session, epoch: e.epoch, seq: e.seq, pastEpochs: [...past] };
}

export class FleetCursor {
  /**
   * @param {Iterable<{engine: string, session: string, epoch: string, seq: number, pastEpochs?: string[]}>} [entries]
   *   what the host restored; throws a RangeError or TypeError naming the
   *   first bad entry (and keeps nothing)
   */
  constructor(entries = []) {
    if (entries === null || typeof entries[Symbol.iterator] !== 'function') {
      throw new TypeError(`cursor must be an array of {engine, session, epoch, seq}, got ${describe(entries)}`);
    }
    this.byKey = new Map();
    let i = 0;
    for (const raw of entries) {
      const e = checkedEntry(raw, i);
      const key = keyOf(e.engine, e.session);
      if (this.byKey.has(key)) throw new RangeError(`cursor[${i}] repeats engine ${e.engine} session ${e.session}`);
      this.byKey.set(key, e);
      i += 1;
    }
  }

  /** Whether a notification (engine, session, epoch, seq) is new to the host
   * or a duplicate (Verdict). Changes nothing. */
  judge(engine, session, epoch, seq) {
    const e = this.byKey.get(keyOf(engine, session));
    if (e === undefined) return Verdict.new;
    if (epoch === e.epoch) return seq <= e.seq ? Verdict.duplicate : Verdict.new;
    return e.pastEpochs.includes(epoch) ? Verdict.duplicate : Verdict.new;
  }

  /** The host injected (engine, session, epoch, seq): the cursor moves to it
   * (never back; a message of an epoch left behind moves nothing). */
  advance(engine, session, epoch, seq) {
    const key = keyOf(engine, session);
    const e = this.byKey.get(key);
    if (e === undefined) {
      this.byKey.set(key, { engine, session, epoch, seq, pastEpochs: [] });
    } else if (epoch === e.epoch) {
      if (seq > e.seq) e.seq = seq;
    } else if (!e.pastEpochs.includes(epoch)) {
      e.pastEpochs.push(e.epoch);
      if (e.pastEpochs.length > PAST_EPOCHS_MAX) e.pastEpochs.shift();
      e.epoch = epoch;
      e.seq = seq;
    }
  }

  /** Where the host is: one entry per (engine, session), copies the host
   * can store and pass back as `cursor`. */
  entries() {
    return [...this.byKey.values()].map((e) => ({ ...e, pastEpochs: [...e.pastEpochs] }));
  }

  /** The entry of (engine, session), or null. */
  get(engine, session) {
    const e = this.byKey.get(keyOf(engine, session));
    return e === undefined ? null : { ...e, pastEpochs: [...e.pastEpochs] };
  }
}
