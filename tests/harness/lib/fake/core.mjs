// A scripted fake of a model API: the part every API shares.
//
// A harness CLI (Claude Code, Codex, Gemini CLI, OpenCode) is pointed at a
// FakeModel listening on 127.0.0.1:0 instead of its vendor's API. The fake
// records every request in arrival order and answers each from a script,
// so a test can make "the model" call a tool, end its turn, or say a word,
// and then ask what the model was sent: did a request carry text X, how many
// times did the model see it.
//
// One module per API (anthropic.mjs, responses.mjs, gemini.mjs, chat.mjs)
// gives the FakeModel an `api` object:
//   api.name                       'anthropic', ...
//   api.route(req, url)            null for a model call; else a function
//                                  (res, body, fake) answering another
//                                  endpoint (model listing, token counts)
//   api.parse(body, req, url)      the request as a Conversation (below)
//   api.side(conv, req, url)       null for the agent's own turn, or a short
//                                  reason naming a side request (title,
//                                  routing, safety check, quota...)
//   api.sideReply(conv, req, url)  the harmless answer to a side request
//   api.write(res, reply, conv)    sends a Reply in the API's format,
//                                  streaming when the request asked for it
//   api.thread(r)                  (optional) the conversation a recorded
//                                  request belongs to: a session or thread
//                                  id the harness sends
//
// A Conversation, the same for every API:
//   { model, stream, system: string, tools: [name...], messages: [Message] }
//   Message: { role: 'system'|'user'|'assistant'|'tool', parts: [Part] }
//   Part: {type: 'text', text} | {type: 'tool_call', id, name, args}
//       | {type: 'tool_result', id, name, text, isError}
// (a tool_result's name is filled in from the call with the same id when the
// API does not repeat it).
//
// A Reply (what a script step answers):
//   {text: 'words'}                         the model says words, ends its turn
//   {tool: 'name' | /regex/, args: {...}}   the model calls one tool; a regex
//                                           picks the first tool the request
//                                           offers whose name matches
//   {calls: [{tool, args}...], text}        several calls at once
//   {json: value}                           a structured answer (side requests)
//   {status: 500, error: 'message'}         an HTTP error
//
// Scripts: a list of steps {when(r) -> bool, reply: Reply | (r) => Reply |
// Promise<Reply>, times: 1 (default) | Infinity, name}. For each request of
// the agent's own turns, the first step that still has uses and whose `when`
// holds answers it; when none does, `fallback` answers ({text: 'ok'} unless
// given). Side requests never consume steps: api.sideReply answers them.
// A reply function may await anything (a gate the test opens) to keep the
// model "thinking": a busy turn.
//
// Nothing here sleeps: waitFor awaits a request matching a predicate, bounded.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { EventEmitter } from 'node:events';

// The bound on one awaited request. Harness CLIs start slowly on a loaded
// 2-core machine: generous, and never the thing a test measures.
export const FAKE_WAIT_MS = 90000;

// The most of one request body the fake accepts (a harness sends its whole
// history each turn: a few hundred KiB at most in these tests). A larger
// body is refused with 413 and counted in fake.refused.
export const FAKE_MAX_BODY = 16 * 1024 * 1024;

/** Every text of a Conversation's messages, one per line (what "the model
 * received" means to a test), in order. */
export function conversationText(conv) {
  const out = [];
  for (const m of conv.messages) {
    for (const p of m.parts) {
      if (p.type === 'text' || p.type === 'tool_result') out.push(p.text);
      else if (p.type === 'tool_call') out.push(`${p.name} ${JSON.stringify(p.args)}`);
    }
  }
  return out.join('\n');
}

/** The text of a message's content as the APIs send it: a string, or a
 * list of items of which those with a string `text` count (images and
 * other items do not). */
export function contentText(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((c) => (c && typeof c.text === 'string' ? c.text : '')).join('');
}

/** A tool call's arguments sent as a JSON string, parsed ({_raw: s} when
 * it is not JSON); an object is kept as it is. */
export function parseArgs(s) {
  if (typeof s !== 'string') return s ?? {};
  try {
    return JSON.parse(s);
  } catch {
    return { _raw: s };
  }
}

/** The number of times needle (a string or a RegExp) occurs in text. */
export function occurrences(text, needle) {
  if (typeof needle === 'string') {
    if (needle === '') return 0;
    let n = 0;
    for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) n++;
    return n;
  }
  const re = new RegExp(needle.source, needle.flags.includes('g') ? needle.flags : `${needle.flags}g`);
  return [...text.matchAll(re)].length;
}

function matches(text, needle) {
  return typeof needle === 'string' ? text.includes(needle) : needle.test(text);
}

/** One recorded request: what the harness sent, what the fake answered. */
export class Recorded {
  constructor({ n, method, path, headers, body, conv, side, at }) {
    this.n = n; // 1-based arrival order among every request to this fake
    this.method = method;
    this.path = path;
    this.headers = headers;
    this.body = body; // the parsed JSON body (or the raw string)
    this.conv = conv; // the Conversation, null for other endpoints
    this.side = side; // null for the agent's own turn, else why it is not
    this.at = at; // Date.now() at arrival
    this.turn = 0; // 1-based order among the agent's own turn requests
    this.reply = null; // the Reply sent (model calls)
    this.repliedAt = null; // Date.now() once the reply was written
    this.step = null; // the script step's name (or index) that answered
    if (conv) this._resolveToolNames();
  }

  /** Is this a model call of the agent's own turn (not a side request, not
   * another endpoint)? */
  get main() {
    return this.conv !== null && this.side === null;
  }

  _resolveToolNames() {
    const names = new Map();
    for (const m of this.conv.messages) {
      for (const p of m.parts) {
        if (p.type === 'tool_call') names.set(p.id, p.name);
        else if (p.type === 'tool_result' && !p.name) p.name = names.get(p.id) ?? '';
      }
    }
  }

  /** Every text the model is sent in this request (see conversationText). */
  get text() {
    if (this._text === undefined) this._text = this.conv ? conversationText(this.conv) : '';
    return this._text;
  }

  /** The messages after the model's last answer: what is new to the model in
   * this request (the user's message, the tool results, a hook's words). */
  get tail() {
    const msgs = this.conv?.messages ?? [];
    let i = msgs.length;
    while (i > 0 && msgs[i - 1].role !== 'assistant') i--;
    return msgs.slice(i);
  }

  get tailText() {
    return conversationText({ messages: this.tail });
  }

  /** Every tool_result part (of the whole history). */
  get toolResults() {
    return (this.conv?.messages ?? []).flatMap((m) => m.parts.filter((p) => p.type === 'tool_result'));
  }

  /** The tool_result parts of the tail only. */
  get newToolResults() {
    return this.tail.flatMap((m) => m.parts.filter((p) => p.type === 'tool_result'));
  }

  /** The text parts of user messages in the tail (what a person, or a hook
   * speaking as one, just said). */
  get newUserText() {
    return this.tail.filter((m) => m.role === 'user')
      .flatMap((m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text)).join('\n');
  }

  has(needle) {
    return matches(this.text, needle);
  }

  count(needle) {
    return occurrences(this.text, needle);
  }

  /** A line for failure messages. */
  summary() {
    const kind = this.conv === null ? 'other' : this.side ? `side:${this.side}` : `turn ${this.turn}`;
    const said = this.reply ? ` -> ${describeReply(this.reply)}` : '';
    const tail = this.conv ? ` tail=${JSON.stringify(this.tailText.slice(-160))}` : '';
    return `#${this.n} ${this.method} ${this.path} [${kind}]${tail}${said}`;
  }
}

function describeReply(r) {
  if (r.status) return `HTTP ${r.status}`;
  if (r.calls && r.text) return `${r.calls.map((c) => `call ${c.name ?? c.tool}`).join(', ')} + text`;
  if (r.calls) return r.calls.map((c) => `call ${c.name ?? c.tool}`).join(', ');
  if (r.json !== undefined) return `json ${JSON.stringify(r.json).slice(0, 60)}`;
  return `text ${JSON.stringify(String(r.text ?? '').slice(0, 60))}`;
}

// ---------------------------------------------------------------- predicates

/** Predicates for script steps and waits, on a Recorded request. */
export const when = {
  /** Any request of the agent's turns. */
  any: () => () => true,
  /** The agent's nth turn request (1-based). */
  turn: (n) => (r) => r.turn === n,
  /** The user (or a hook speaking as one) just said text matching needle. */
  userSays: (needle) => (r) => matches(r.newUserText, needle),
  /** A tool result just came back, from a tool whose name matches `tool`
   * (string: the name ends with it; RegExp) and, when given, whose text
   * matches `text`. */
  toolResult: (tool, text) => (r) => r.newToolResults.some((p) =>
    (tool === undefined || (typeof tool === 'string' ? p.name.endsWith(tool) : tool.test(p.name))) &&
    (text === undefined || matches(p.text, text))),
  /** What is new in this request (the tail) carries needle. */
  tailHas: (needle) => (r) => matches(r.tailText, needle),
  /** The request carries needle anywhere in its history. */
  has: (needle) => (r) => r.has(needle),
  /** Both predicates hold. */
  all: (...preds) => (r) => preds.every((p) => p(r)),
};

/** Replies for script steps. */
export const reply = {
  say: (text) => ({ text }),
  call: (tool, args = {}, text) => ({ calls: [{ tool, args }], text }),
  json: (value) => ({ json: value }),
  error: (status, message = 'fake error') => ({ status, error: message }),
};

// ---------------------------------------------------------------- the server

let idCounter = 0;
/** A short unique id with a prefix (tool call ids, message ids). */
export function fakeId(prefix) {
  idCounter += 1;
  return `${prefix}${Date.now().toString(36)}${idCounter.toString(36)}`;
}

/** Writes one server-sent event. */
export function sse(res, data, event) {
  if (event) res.write(`event: ${event}\n`);
  res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}

export function sendJson(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export class FakeModel {
  /** Starts a fake of api on 127.0.0.1:0; resolves once it listens.
   * opts: script (steps), fallback (a Reply or a function of the request). */
  static async start(api, opts = {}) {
    const fake = new FakeModel(api, opts);
    await new Promise((resolve, reject) => {
      fake.server.once('error', reject);
      fake.server.listen(0, '127.0.0.1', () => {
        fake.server.off('error', reject);
        resolve();
      });
    });
    fake.port = fake.server.address().port;
    fake.url = `http://127.0.0.1:${fake.port}`;
    return fake;
  }

  constructor(api, { script = [], fallback = { text: 'ok' } } = {}) {
    this.api = api;
    this.steps = script.map((s, i) => ({ times: 1, name: String(i), ...s, used: 0 }));
    this.fallback = fallback;
    this.requests = [];
    this.errors = []; // what went wrong inside the fake (a script's tool missing, a parse failure)
    this.refused = 0; // bodies over FAKE_MAX_BODY
    this.turns = 0;
    this.events = new EventEmitter();
    this.events.setMaxListeners(0);
    this.sockets = new Set();
    this.server = http.createServer((req, res) => this._serve(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  /** Adds steps to the script (they come after the existing ones). */
  add(...steps) {
    for (const s of steps) this.steps.push({ times: 1, name: String(this.steps.length), ...s, used: 0 });
  }

  /** The agent's own turn requests (side requests and other endpoints left out). */
  get turnRequests() {
    return this.requests.filter((r) => r.main);
  }

  get sideRequests() {
    return this.requests.filter((r) => r.conv && r.side);
  }

  /** The agent's turn requests carrying needle. */
  requestsWith(needle) {
    return this.turnRequests.filter((r) => r.has(needle));
  }

  /** The conversation a request belongs to, as the api tells (a session or
   * thread id the harness sends); '' when it cannot tell. */
  thread(r) {
    return this.api.thread ? this.api.thread(r) : '';
  }

  /** How many times the model has seen needle, as the most occurrences in
   * one request of the agent's turns (each request carries the history, so
   * the latest request of a conversation holds everything it was told).
   * Summed over conversations when threadOf(r) tells them apart (a harness
   * restarted into a new conversation), per the api's thread key by default. */
  seen(needle, threadOf = (r) => this.thread(r)) {
    const most = new Map();
    for (const r of this.turnRequests) {
      const k = threadOf(r);
      most.set(k, Math.max(most.get(k) ?? 0, r.count(needle)));
    }
    let sum = 0;
    for (const v of most.values()) sum += v;
    return sum;
  }

  /** The first recorded request (arrived, or to come) matching pred, after
   * request number `after` (a Recorded or its n) when given; bounded. By
   * default only the agent's turn requests are considered (side: true
   * considers every request). */
  waitFor(pred, { timeout = FAKE_WAIT_MS, what = 'a request', after = 0, side = false, failed } = {}) {
    const from = typeof after === 'number' ? after : after.n;
    return new Promise((resolve, reject) => {
      let timer = null;
      const check = () => {
        const r = this.requests.find((x) => x.n > from && (side || x.main) && pred(x));
        if (r) {
          done();
          resolve(r);
          return;
        }
        const why = failed?.();
        if (why) {
          done();
          reject(new Error(`${this.api.name} fake: ${what} never came: ${why}\n${this.transcript()}`));
        }
      };
      const done = () => {
        clearTimeout(timer);
        this.events.off('request', check);
        this.events.off('check', check);
      };
      timer = setTimeout(() => {
        done();
        reject(new Error(`${this.api.name} fake: timed out after ${timeout} ms waiting for ${what}\n${this.transcript()}`));
      }, timeout);
      this.events.on('request', check);
      this.events.on('check', check);
      check();
    });
  }

  /** Makes pending waits look again (their `failed` condition may hold now:
   * the harness exited). */
  recheck() {
    this.events.emit('check');
  }

  /** Waits for a turn request whose text (anywhere, or in the tail with
   * {tail: true}) carries needle. */
  waitForText(needle, opts = {}) {
    const pred = opts.tail ? (r) => matches(r.tailText, needle) : (r) => r.has(needle);
    return this.waitFor(pred, { what: `a request carrying ${String(needle)}`, ...opts });
  }

  /** Every request, one line each, for failure messages. */
  transcript(last = 40) {
    const lines = this.requests.slice(-last).map((r) => `  ${r.summary()}`);
    const errs = this.errors.map((e) => `  fake error: ${e}`);
    return `requests to the ${this.api.name} fake (${this.requests.length}):\n${lines.join('\n')}${errs.length ? `\n${errs.join('\n')}` : ''}`;
  }

  /** Stops listening and drops open connections (a harness may keep one).
   * With VIGIL_HARNESS_DUMP set to a directory, first writes every request
   * (headers, body, how it was classified, the reply) there as
   * API-PORT.json, to read what a harness really sends. */
  async stop() {
    const dump = process.env.VIGIL_HARNESS_DUMP;
    if (dump) {
      fs.mkdirSync(dump, { recursive: true });
      fs.writeFileSync(path.join(dump, `${this.api.name}-${this.port}.json`), JSON.stringify(this.requests.map((r) => ({
        n: r.n, method: r.method, path: r.path, turn: r.turn, side: r.side, step: r.step, headers: r.headers, body: r.body, reply: r.reply,
      })), null, 1));
    }
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(() => resolve()));
  }

  async _serve(req, res) {
    const url = new URL(req.url, 'http://127.0.0.1');
    let body;
    try {
      body = await this._readBody(req);
    } catch (e) {
      this.refused += 1;
      sendJson(res, 413, { error: { message: e.message } });
      return;
    }
    let parsed = body;
    if (body.length > 0) {
      try {
        parsed = JSON.parse(body);
      } catch {
        // kept as the raw string
      }
    }
    const other = this.api.route(req, url);
    const n = this.requests.length + 1;
    if (other) {
      const r = new Recorded({ n, method: req.method, path: url.pathname + url.search, headers: req.headers,
        body: parsed, conv: null, side: null, at: Date.now() });
      this._record(r);
      try {
        await other(res, parsed, this);
      } catch (e) {
        this.errors.push(`${r.path}: ${e.stack ?? e}`);
        if (!res.headersSent) sendJson(res, 500, { error: { message: String(e) } });
      }
      return;
    }
    let conv;
    let side;
    try {
      conv = this.api.parse(parsed, req, url);
      side = this.api.side(conv, req, url);
    } catch (e) {
      this.errors.push(`cannot read ${req.method} ${url.pathname}: ${e.stack ?? e}`);
      sendJson(res, 400, { error: { message: `fake: cannot read the request: ${e.message}` } });
      return;
    }
    const r = new Recorded({ n, method: req.method, path: url.pathname + url.search, headers: req.headers,
      body: parsed, conv, side, at: Date.now() });
    if (r.main) r.turn = ++this.turns;
    this._record(r);
    let answer;
    try {
      answer = side ? await this.api.sideReply(conv, req, url) : await this._answer(r);
      answer = this._resolve(answer, conv);
    } catch (e) {
      this.errors.push(`request #${n}: ${e.message}`);
      answer = { text: `FAKE ERROR: ${e.message}` };
    }
    r.reply = answer;
    if (answer.status) {
      sendJson(res, answer.status, { error: { type: 'api_error', code: answer.status, message: answer.error ?? 'fake error' } });
      return;
    }
    try {
      await this.api.write(res, answer, conv);
      r.repliedAt = Date.now();
    } catch (e) {
      this.errors.push(`request #${n}: writing the reply: ${e.stack ?? e}`);
      res.destroy();
    }
  }

  _record(r) {
    this.requests.push(r);
    this.events.emit('request', r);
  }

  async _answer(r) {
    for (const s of this.steps) {
      if (s.used >= s.times) continue;
      let ok = false;
      try {
        ok = s.when ? Boolean(s.when(r)) : true;
      } catch (e) {
        this.errors.push(`step ${s.name}'s when threw: ${e.message}`);
      }
      if (!ok) continue;
      s.used += 1;
      r.step = s.name;
      return typeof s.reply === 'function' ? s.reply(r) : s.reply;
    }
    r.step = 'fallback';
    return typeof this.fallback === 'function' ? this.fallback(r) : this.fallback;
  }

  /** Turns a script's reply into one the api writes: every call gets an id
   * and the exact name of a tool the request offers. */
  _resolve(answer, conv) {
    if (!answer || typeof answer !== 'object') throw new Error(`a script reply must be an object, got ${answer}`);
    const calls = answer.calls ?? (answer.tool !== undefined ? [{ tool: answer.tool, args: answer.args }] : null);
    if (!calls) return answer;
    const resolved = calls.map((c) => {
      const name = c.name ?? this._toolName(c.tool, conv);
      return { name, args: c.args ?? {}, id: fakeId('call_') };
    });
    return { ...answer, tool: undefined, args: undefined, calls: resolved };
  }

  _toolName(tool, conv) {
    if (typeof tool === 'string' && conv.tools.includes(tool)) return tool;
    const re = typeof tool === 'string' ? new RegExp(`(^|[^A-Za-z0-9])${tool.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) : tool;
    const found = conv.tools.find((t) => re.test(t));
    if (found === undefined) {
      throw new Error(`the script calls a tool matching ${re}, but the request offers none: ${conv.tools.join(', ')}`);
    }
    return found;
  }

  async _readBody(req) {
    const chunks = [];
    let size = 0;
    for await (const c of req) {
      size += c.length;
      if (size > FAKE_MAX_BODY) throw new Error(`request body over ${FAKE_MAX_BODY} bytes`);
      chunks.push(c);
    }
    let buf = Buffer.concat(chunks);
    const enc = req.headers['content-encoding'];
    if (enc) buf = await decompress(buf, enc);
    return buf.toString('utf8');
  }
}

async function decompress(buf, enc) {
  const zlib = await import('node:zlib');
  if (enc === 'gzip') return zlib.gunzipSync(buf);
  if (enc === 'deflate') return zlib.inflateSync(buf);
  if (enc === 'br') return zlib.brotliDecompressSync(buf);
  if (enc === 'zstd' && zlib.zstdDecompressSync) return zlib.zstdDecompressSync(buf);
  throw new Error(`request body in an encoding the fake cannot read: ${enc}`);
}

/** A value fitting a JSON schema (the OpenAPI-ish subset harnesses use for
 * their side requests: type OBJECT/STRING/...; enum picks its first value).
 * Side requests asking for structured
 * output get this; prefer gives the value of a property by its name. */
export function valueForSchema(schema, prefer = {}) {
  if (!schema || typeof schema !== 'object') return null;
  const type = String(Array.isArray(schema.type) ? schema.type[0] : schema.type ?? 'object').toLowerCase();
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  switch (type) {
    case 'object': {
      const out = {};
      for (const [k, s] of Object.entries(schema.properties ?? {})) {
        out[k] = k in prefer ? prefer[k] : valueForSchema(s, prefer);
      }
      return out;
    }
    case 'array': return [];
    case 'string': return 'fake';
    case 'integer': case 'number': return 1;
    case 'boolean': return false;
    default: return null;
  }
}
