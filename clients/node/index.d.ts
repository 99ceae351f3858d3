// Types of vigil-client (hand-written; the JavaScript is in index.js and lib/).
//
// Arguments and results are the protocol's, spelled as on the wire
// (docs/protocol.md of the vigil repository, section 5): every documented
// key of a result is always present, null when it has no value. Options of
// the library itself (not sent to the engine) are camelCase: timeoutMs,
// lastSeq, autoReconnect.

import type { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';

// ------------------------------------------------------------------ errors

export type ErrorCodeName =
  | 'internal' | 'invalid_params' | 'not_found' | 'denied' | 'limit_exceeded' | 'invalid_pattern'
  | 'command_not_found' | 'spawn_failed' | 'already_exited' | 'disabled' | 'unknown_method';

/** The protocol's error codes by name (docs/protocol.md section 4). */
export declare const ERROR_CODES: Readonly<Record<ErrorCodeName, number>>;

/** The engine refused a call: `[code, message]` on the wire. Nothing changed. */
export declare class VigilError extends Error {
  constructor(code: number, message: string, extra?: { method?: string; data?: unknown });
  name: 'VigilError';
  /** The protocol's code: ERROR_CODES[codeName]. */
  code: number;
  /** The code's name, or 'unknown' for a code this library does not know. */
  codeName: ErrorCodeName | 'unknown';
  /** The method called (unset for a vigil.error notification). */
  method?: string;
  /** What the error array carried past the message, if anything. */
  data?: unknown[];
}

/** No engine to talk to, or no longer. */
export declare class VigilConnectionError extends Error {
  name: 'VigilConnectionError';
}

/** A deadline the caller gave (timeoutMs) passed first. */
export declare class VigilTimeoutError extends Error {
  name: 'VigilTimeoutError';
}

/** A NATS server refused what a FleetSubscriber asked (authentication,
 * permissions, no JetStream, no stream, a durable of another shape). */
export declare class VigilFleetError extends Error {
  name: 'VigilFleetError';
}

// ------------------------------------------------------------------ notifications

export type Stream = 'stdout' | 'stderr';
export type EndingType = 'exit' | 'stopped' | 'timed_out' | 'idle_timeout' | 'overload';
export type NotificationType = 'output' | EndingType | 'dropped' | 'policy_error';
export type MonitorState = 'running' | 'exited' | 'stopped' | 'timed_out' | 'idle_timeout' | 'overloaded' | 'failed';
export type Mode = 'idle' | 'live_safe';
export type Notify = 'auto' | 'matches' | 'lines' | 'exit' | 'none';

/** A line of a monitor's output, as the ring keeps it. */
export interface Line {
  /** Per monitor, both streams, from 1. */
  seq: number;
  stream: Stream;
  /** ANSI removed, valid UTF-8; other control characters stay. */
  text: string;
  /** The index of the pattern that matched, or null. */
  pattern: number | null;
  /** Cut at monitor.line_max_bytes. */
  truncated: boolean;
}

/** An incident among a notification's lines (docs/incidents.md). */
export interface Incident {
  id: number;
  kind: 'crash' | 'message' | 'health';
  fingerprint: string;
  pattern: number | null;
  pattern_name: string | null;
  first_seq: number;
  last_seq: number;
  lines: Line[];
  repeats: number;
  repeat_span_ms: number;
  last_repeat_at: string | null;
  truncated_lines: number;
  summary: boolean;
}

/** `[2, "vigil.notification", [map]]`: every key always present (docs/protocol.md section 6). */
export interface Notification {
  /** The session it belongs to. */
  session: string;
  /** Per session, +1 each, never reused: the resume cursor. */
  seq: number;
  type: NotificationType;
  /** null for `dropped`. */
  monitor_id: string | null;
  /** The monitor's label (its id when none was given); null for `dropped`. */
  label: string | null;
  mode: Mode;
  /** `output` only: the per-monitor batch number. */
  batch: number | null;
  /** `output`: the batch's lines; endings: the last monitor.exit_lines lines. */
  lines: Line[];
  /** Lines withheld by the rate limit since the previous delivered notification. */
  suppressed: number;
  incidents: Incident[];
  incidents_withheld: number;
  incidents_coalesced: number;
  incidents_dropped: number;
  /** `running` for output; the final state for endings; null for `dropped`. */
  state: MonitorState | null;
  exit_code: number | null;
  /** A signal name (`SIGTERM`), or its number when it has none. */
  signal: string | number | null;
  duration_ms: number | null;
  /** Why it ended, in words. */
  reason: string | null;
  /** The limit that ended it (`memory_limit`, `max_processes`, `cpu_time`). */
  exceeded: string | null;
  /** `dropped`: how many were lost, null when unknown. */
  dropped: number | null;
  from_seq: number | null;
  to_seq: number | null;
  /** The engine's epoch (16 hex digits, one per engine start). */
  epoch: string;
  /** The envelope to inject into the agent's turn. */
  text: string;
  /** When it was made (RFC 3339). */
  at: string;
}

// ------------------------------------------------------------------ arguments and results

/** Every method takes `session`: a session this connection has opened. */
export interface SessionArg {
  session?: string;
}

export interface MonitorStartArgs extends SessionArg {
  command?: string;
  argv?: string[];
  shell?: boolean;
  label?: string;
  description?: string;
  cwd?: string;
  env?: Record<string, string>;
  /** A name of env that monitor.env_deny refuses: deny the start, or leave it out (`note`). */
  env_denied?: 'refuse' | 'drop';
  patterns?: string[];
  match_pattern?: string;
  match_streams?: 'both' | 'stdout' | 'stderr';
  notify?: Notify;
  incidents?: boolean;
  envelope?: 'readable' | 'compact';
  mode?: Mode;
  policy?: string;
  timeout_ms?: number;
  persistent?: boolean;
  idle_timeout_ms?: number;
  memory_limit?: number;
  cpu_limit?: number;
}

export interface MonitorStartResult {
  monitor_id: string;
  label: string;
  mode: Mode;
  notify: Exclude<Notify, 'auto'>;
  pid: number;
  started_at: string;
  note: string | null;
}

export interface MonitorIdArg extends SessionArg {
  monitor_id: string;
}

export interface MonitorStopArgs extends MonitorIdArg {
  signal?: string | number;
  grace_ms?: number;
}

export interface MonitorStopResult {
  status: 'stopped' | 'already_stopped';
  state: MonitorState;
  exit_code: number | null;
  signal: string | number | null;
}

export interface Counters {
  lines: number;
  matched: number;
  unmatched: number;
  dropped: number;
  suppressed: number;
  notifications: number;
  stdout_bytes: number;
  stderr_bytes: number;
  [counter: string]: number;
}

export interface MonitorEntry {
  monitor_id: string;
  label: string;
  description: string | null;
  mode: Mode;
  notify: Exclude<Notify, 'auto'>;
  incidents: boolean;
  envelope: 'readable' | 'compact';
  state: MonitorState;
  pid: number;
  program: string;
  started_at: string;
  ended_at: string | null;
  exit_code: number | null;
  signal: string | number | null;
  reason: string | null;
  exceeded: string | null;
  counters: Counters;
  last_line: string | null;
}

export interface MonitorStatusResult extends MonitorEntry {
  duration_ms: number;
  resource_usage: ResourceUsage;
  /** null unless include_start was asked: the monitor_start arguments,
   * resolved, that start the same monitor again (nil entries: not given);
   * its env values null unless reveal_env was asked too. Send a revealed
   * one back to monitorStart to restart it. */
  start: Record<string, unknown> | null;
}

export interface MonitorStatusArgs extends MonitorIdArg {
  /** Send `start` (argv, cwd, env names...): it may hold secrets, so never
   * for a result a model will read. */
  include_start?: boolean;
  /** With include_start, env's values too. */
  reveal_env?: boolean;
}

export interface ResourceUsage {
  cpu_ms: number;
  memory_peak_bytes: number;
  io_read_bytes: number;
  io_write_bytes: number;
}

export interface MonitorListArgs extends SessionArg {
  include_exited?: boolean;
  state?: MonitorState;
  limit?: number;
}

export interface MonitorOutputArgs extends MonitorIdArg {
  stream?: 'all' | 'matched' | 'unmatched' | 'stdout' | 'stderr';
  since_sequence?: number;
  limit?: number;
  incident?: number;
}

export interface MonitorLogsArgs extends MonitorIdArg {
  stream?: 'both' | 'stdout' | 'stderr';
  offset?: number;
  limit?: number;
}

export interface MonitorLogsResult {
  /** Raw bytes exactly as written (msgpack bin); null for a stream not asked for. */
  stdout: Uint8Array | null;
  stderr: Uint8Array | null;
  stdout_size: number;
  stderr_size: number;
  truncated: boolean;
  more: boolean;
  stdout_next_offset: number | null;
  stderr_next_offset: number | null;
  state: MonitorState;
}

export interface Event {
  id: number;
  type: string;
  at: string;
  pattern: number | null;
  line: string | null;
  exit_code: number | null;
  signal: string | number | null;
  reason: string | null;
  exceeded: string | null;
  [key: string]: unknown;
}

export interface MonitorWaitArgs extends MonitorIdArg {
  for?: 'exit' | 'match' | 'event' | 'output';
  since_event_id?: number;
  since_sequence?: number;
  timeout_ms?: number;
}

export interface MonitorWaitResult {
  event: Event | null;
  timed_out: boolean;
  state: MonitorState;
  last_sequence: number;
}

export interface ProcessRunArgs extends SessionArg {
  command?: string;
  argv?: string[];
  shell?: boolean;
  cwd?: string;
  env?: Record<string, string>;
  /** As in MonitorStartArgs. */
  env_denied?: 'refuse' | 'drop';
  label?: string;
  stdin?: string | Uint8Array;
  timeout_s?: number;
  stdout_lines?: number;
  background?: boolean;
  memory_limit?: number;
  cpu_limit?: number;
}

export interface ProcessRunResult {
  process_id: string;
  state: MonitorState;
  exit_code: number | null;
  signal: string | number | null;
  stdout_summary: string;
  stderr_summary: string;
  duration_ms: number;
  resource_usage: ResourceUsage;
  /** What the engine adjusted (the names env_denied "drop" left out), or null. */
  note: string | null;
}

export interface SessionEntry {
  session: string;
  attached: number;
  monitors: number;
  state: 'busy' | 'idle';
  queued: number;
  /** The session's model cursors: name -> seq. */
  cursors: Record<string, number>;
}

/** A model cursor's name (docs/protocol.md, "Model cursors"). */
export interface CursorArg extends SessionArg {
  /** 1..64 bytes of [A-Za-z0-9._:-]. */
  cursor: string;
}

export interface CursorTakeArgs extends CursorArg {
  /** At most this many (default and bound: the session's session.queue_max). */
  limit?: number;
  /** With nothing above the cursor, wait this long (0..3600000) for a notification. */
  wait_ms?: number;
}

/** What a read of the kept notifications found. */
export interface NotificationsRead {
  /** The notification maps, exactly as pushed, oldest first. */
  notifications: Notification[];
  /** The session's highest seq so far. */
  last_seq: number;
  /** Seqs above the cursor the session no longer kept (dropped_from..dropped_to), passed too. */
  dropped: number;
  dropped_from: number | null;
  dropped_to: number | null;
}

export interface CursorTakeResult extends NotificationsRead {
  /** Where the cursor is now. */
  cursor: number;
}

/** Options of a call (not sent to the engine). */
export interface CallOptions {
  /** Reject with a VigilTimeoutError if no answer within this many ms. */
  timeoutMs?: number;
}

export interface WaitOptions {
  /** Resolve null if nothing comes within this many ms (default: wait while open). */
  timeoutMs?: number;
  /** Only notifications accepted by this. */
  filter?: (n: Notification) => boolean;
}

type Result = Record<string, unknown>;

/** The protocol's methods, shared by Client and Session. */
interface Methods {
  ping(args?: SessionArg, options?: CallOptions): Promise<{ version: string; api_level: number }>;
  apiInfo(args?: SessionArg, options?: CallOptions): Promise<Result>;
  configReload(args?: SessionArg, options?: CallOptions): Promise<{ reloaded: true; policies: string[] }>;
  sessionState(args: SessionArg & { state: 'busy' | 'idle' }, options?: CallOptions): Promise<{ state: 'busy' | 'idle'; delivered: number }>;
  sessionClose(args?: SessionArg, options?: CallOptions): Promise<{ stopped: number }>;
  sessionList(args?: SessionArg, options?: CallOptions): Promise<{ sessions: SessionEntry[] }>;
  monitorStart(args: MonitorStartArgs, options?: CallOptions): Promise<MonitorStartResult>;
  monitorStop(args: MonitorStopArgs, options?: CallOptions): Promise<MonitorStopResult>;
  monitorList(args?: MonitorListArgs, options?: CallOptions): Promise<{ monitors: MonitorEntry[]; total: number }>;
  monitorStatus(args: MonitorStatusArgs, options?: CallOptions): Promise<MonitorStatusResult>;
  monitorOutput(args: MonitorOutputArgs, options?: CallOptions): Promise<{ lines: Line[]; counters: Counters; next_sequence: number; incident?: Result }>;
  monitorLogs(args: MonitorLogsArgs, options?: CallOptions): Promise<MonitorLogsResult>;
  monitorEvents(args: MonitorIdArg & { since_event_id?: number }, options?: CallOptions): Promise<{ events: Event[]; dropped: number; text: string }>;
  monitorWait(args: MonitorWaitArgs, options?: CallOptions): Promise<MonitorWaitResult>;
  processRun(args: ProcessRunArgs, options?: CallOptions): Promise<ProcessRunResult>;
  /** Takes what is above the cursor and moves it, once for all its readers. */
  cursorTake(args: CursorTakeArgs, options?: CallOptions): Promise<CursorTakeResult>;
  /** An unknown cursor reads as 0 (none is made); kept_from: the oldest seq kept. */
  cursorGet(args: CursorArg, options?: CallOptions): Promise<{ cursor: number; last_seq: number; kept_from: number | null }>;
  /** Moves the cursor forward to `to` (never back; at most last_seq). */
  cursorAdvance(args: CursorArg & { to: number }, options?: CallOptions): Promise<{ cursor: number }>;
  /** Re-reads the kept notifications above since_seq; moves no cursor. */
  notificationsSince(args: SessionArg & { since_seq: number; limit?: number }, options?: CallOptions): Promise<NotificationsRead>;
  /** Any method by its protocol name. */
  call(method: string, args?: Record<string, unknown>, options?: CallOptions): Promise<Result>;
}

// ------------------------------------------------------------------ sessions

/** A named session: every method with `session` filled in, and the cursor. */
export declare class Session implements AsyncIterable<Notification> {
  readonly client: Client;
  readonly name: string;
  /** The highest seq handed to the host: store it, pass it back as lastSeq after a restart. */
  readonly lastSeq: number;
  /** The highest seq this client received (a reconnect resumes from it). */
  readonly receivedSeq: number;
  readonly epoch: string | null;
  readonly nextSeq: number | null;
  /** True when the session already existed in the engine. */
  readonly resumed: boolean | null;
  setState(state: 'busy' | 'idle', options?: CallOptions): Promise<{ state: 'busy' | 'idle'; delivered: number }>;
  wait(options?: WaitOptions): Promise<Notification | null>;
  notifications(): AsyncGenerator<Notification, void, undefined>;
  [Symbol.asyncIterator](): AsyncIterator<Notification>;
  /** session_close: stops its monitors, deletes it, and forgets it here. */
  close(options?: CallOptions): Promise<{ stopped: number }>;
}
export interface Session extends Methods {}

// ------------------------------------------------------------------ clients

export interface ConnectOptions {
  /** Reconnect when the connection is lost (an engine restart), re-opening
   * every session with last_seq. Default false: a lost connection closes the client. */
  autoReconnect?: boolean;
  /** How long autoReconnect keeps trying (default RECONNECT_TIMEOUT_MS). */
  reconnectTimeoutMs?: number;
  /** Notifications kept for wait() (default INBOX_MAX); past it the oldest are dropped and counted. */
  inboxMax?: number;
}

export interface SessionOptions {
  /** The last seq the host handled (stored across its restarts). */
  lastSeq?: number;
  /** How long the session outlives its last connection. */
  lingerMs?: number;
  timeoutMs?: number;
}

export declare class Client extends EventEmitter implements AsyncIterable<Notification> {
  /** Connects to an engine's socket (default: defaultSocketPath()). */
  static connect(socketPath?: string, options?: ConnectOptions): Promise<Client>;
  /** Reaches a remote engine through NATS (docs/fleet.md section 6): NatsClient.connect(options). */
  static connectNats(options: NatsClientOptions): Promise<NatsClient>;
  readonly closed: boolean;
  /** Notifications the inbox dropped for room. */
  readonly inboxDropped: number;
  /** Sessions opened through this client, by name. */
  readonly sessions: Map<string, Session>;
  /** A method as a notification: no answer; a failure comes as 'engineError'. */
  notify(method: string, args?: Record<string, unknown>): void;
  /** Opens (creates or resumes) a named session; without a name the engine makes one. */
  session(name?: string, options?: SessionOptions): Promise<Session>;
  /** The next notification (of options.session when given), or null after timeoutMs. */
  wait(options?: WaitOptions & { session?: string }): Promise<Notification | null>;
  notifications(options?: { session?: string; filter?: (n: Notification) => boolean }): AsyncGenerator<Notification, void, undefined>;
  [Symbol.asyncIterator](): AsyncIterator<Notification>;
  /** Closes the connection (an Engine: the engine too, resolving with its exit). */
  close(options?: { timeoutMs?: number }): Promise<unknown>;

  on(event: 'notification', listener: (n: Notification) => void): this;
  on(event: 'engineError', listener: (e: VigilError) => void): this;
  on(event: 'disconnect', listener: (why: VigilConnectionError) => void): this;
  on(event: 'reconnect', listener: () => void): this;
  on(event: 'inboxOverflow', listener: (dropped: number) => void): this;
  /** Closed for good: null when the host closed it, else why. */
  on(event: 'close', listener: (why: VigilConnectionError | null) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}
export interface Client extends Methods {}

export interface SpawnOptions {
  /** The program (default: `vigild` on PATH). */
  vigild?: string;
  /** `--config FILE`; without one every start is denied. */
  config?: string;
  /** `--state-dir DIR`. */
  stateDir?: string;
  /** More arguments for vigild. */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Whether vigild's log goes on to this process's stderr (default 'inherit'). */
  log?: 'inherit' | 'quiet';
  /** Bound on the start (default ENGINE_TIMEOUT_MS). */
  timeoutMs?: number;
  inboxMax?: number;
}

/** How an engine process ended: code 0 after a normal shutdown. */
export interface EngineExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** An engine of the host's own: `vigild --stdio` as a child. */
export declare class Engine extends Client {
  static spawn(options?: SpawnOptions): Promise<Engine>;
  readonly pid: number;
  /** The last ENGINE_LOG_TAIL_BYTES of its log. */
  readonly logTail: string;
  readonly stderr: Readable;
  /** Its exit, once it has exited. */
  readonly exited: Promise<EngineExit>;
  /** Ends its stdin (it stops every monitor and exits); resolves with its exit. */
  close(options?: { timeoutMs?: number }): Promise<EngineExit>;
}

// ------------------------------------------------------------------ a remote engine (docs/fleet.md section 6)

export interface NatsClientOptions {
  /** The NATS server(s): `nats://host:port`, or several of one cluster (or `url`, not both). */
  servers?: string | string[];
  url?: string | string[];
  /** The engine's name (its --nats-engine): requests go to vigil.<engine>.rpc. */
  engine: string;
  /** One session alone: requests go to vigil.<engine>.<session token>.rpc, and the
   * engine refuses any other session (denied). */
  session?: string;
  /** The Vigil-Client header (1..64 of [A-Za-z0-9_:.-]; default vigil-node-PID-RANDOM):
   * the engine's virtual connection is one per id. */
  clientId?: string;
  /** The inbox's prefix (default '_INBOX'): one this user may subscribe to (_INBOX_<user>). */
  inboxPrefix?: string;
  user?: string;
  pass?: string;
  token?: string;
  /** A .creds file (a user JWT and its nkey seed). */
  creds?: string;
  /** How long past its own wait (ownWaitMs) a call waits for its answer (default CALL_TIMEOUT_MS, 1..86400000). */
  callTimeoutMs?: number;
  /** The connection's name, as the server shows it (default 'vigil-client'). */
  name?: string;
  /** Any other NATS.js connect options (they win over the client's own: maxReconnectAttempts -1). */
  natsOptions?: Record<string, unknown>;
}

export interface NatsClientCounters {
  /** Requests and notification frames published. */
  sent: number;
  /** Answers taken (results and the engine's errors). */
  answered: number;
  /** Answers that were not the engine's (their call failed, code internal). */
  malformed: number;
  /** Answers for no call waiting (a late one after its deadline, or a stray): dropped. */
  stray: number;
  /** Calls that met no responder on the subject. */
  noResponders: number;
  /** Calls whose deadline passed. */
  timedOut: number;
  /** Calls that waited when the broker's connection dropped. */
  lost: number;
  /** Sessions opened again after the engine closed this client's idle virtual connection. */
  sessionsReopened: number;
}

/** A Client of a remote engine through NATS request-reply. Its
 * notifications come through a FleetSubscriber: wait() and `for await` reject. */
export declare class NatsClient extends Client {
  static connect(options: NatsClientOptions): Promise<NatsClient>;
  readonly engine: string;
  /** The session this client is limited to, or null. */
  readonly scope: string | null;
  /** Where the requests go. */
  readonly subject: string;
  readonly clientId: string;
  readonly counters: NatsClientCounters;
  on(event: 'sessionReopened', listener: (session: string) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}
export declare const CALL_TIMEOUT_MS: number;
/** 'Vigil-Client'. */
export declare const CLIENT_HEADER: string;
/** What a Vigil-Client id must match. */
export declare const CLIENT_ID: RegExp;
/** How long a call may rightly wait before its answer (ms), by its own arguments. */
export declare function ownWaitMs(method: string, args?: Record<string, unknown>): number;
/** vigil.<engine>.rpc, or vigil.<engine>.<session token>.rpc. */
export declare function rpcSubject(engine: string, session?: string): string;

// ------------------------------------------------------------------ the rest

/** The engine's default socket: $XDG_RUNTIME_DIR/vigil/vigil.sock, else /tmp/vigil-$EUID/vigil.sock. */
export declare function defaultSocketPath(env?: NodeJS.ProcessEnv): string;
/** JavaScript method name -> protocol method name. */
export declare const METHODS: Readonly<Record<string, string>>;
export declare const ENDING_TYPES: readonly EndingType[];
export declare const LAST_SEQ_MAX: number;
export declare const RECONNECT_TIMEOUT_MS: number;
export declare const ENGINE_LOG_TAIL_BYTES: number;
export declare const ENGINE_TIMEOUT_MS: number;
export declare const SOCKET_PATH_MAX: number;
export declare const INBOX_MAX: number;
export declare const IN_FLIGHT_MAX: number;
export declare const ITEM_MAX_BYTES: number;
/** The msgpack-rpc messages of a byte stream, however it is cut. */
export declare function readMessages(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<unknown, void, unknown>;
/** The bytes of one message. */
export declare function encodeMessage(message: unknown): Uint8Array;

// ------------------------------------------------------------------ fleet (docs/fleet.md)

/** Where the host is in one engine's session: the epoch and the last seq it injected. */
export interface FleetCursorEntry {
  /** The engine's name (1..64 of [A-Za-z0-9_-]). */
  engine: string;
  /** The session's name (not its subject token). */
  session: string;
  /** The engine's epoch, 16 hex digits. */
  epoch: string;
  /** The last seq injected under that epoch (0: none). */
  seq: number;
  /** Epochs this engine left for `epoch` (at most PAST_EPOCHS_MAX): their
   * messages, delivered again, are duplicates. */
  pastEpochs?: string[];
}

export interface FleetSubscriberOptions {
  /** The NATS server(s): `nats://host:port`, or several of one cluster. */
  url: string | string[];
  user?: string;
  pass?: string;
  token?: string;
  /** A .creds file (a user JWT and its nkey seed). */
  creds?: string;
  /** The connection's name, as the server shows it (default 'vigil-fleet-subscriber'). */
  name?: string;
  /** The stream the engines publish into (default FLEET_STREAM, 'VIGIL'). */
  stream?: string;
  /** The gateway's durable consumer: bound when it exists, created when not. */
  durable: string;
  /** One engine's notifications, or '*' (default) for every engine's. */
  engine?: string;
  /** One session's notifications (its name), or '*' (default) for every session's. */
  session?: string;
  /** What the host restored from its own records: per engine and session, the last injected. */
  cursor?: Iterable<FleetCursorEntry>;
  /** The ack wait of a consumer this subscriber creates (default FLEET_ACK_WAIT_MS, 100..86400000). */
  ackWaitMs?: number;
  /** Messages pulled ahead of the host at most (default FLEET_BATCH, 1..1024). */
  batch?: number;
  /** The largest payload accepted (default FLEET_PAYLOAD_MAX_BYTES); a larger one is malformed. */
  maxPayloadBytes?: number;
  /** How long a message ahead of the next seq is held back at most before it is
   * taken with the gap counted (ms, 0..604800000; default twice the consumer's
   * ack_wait and FLEET_HOLD_EXTRA_MS). */
  holdMs?: number;
  /** Where the pulled messages come (default NATS.js's `_INBOX`): a user
   * whose permissions give it `_INBOX_<user>.>` alone passes `_INBOX_<user>`
   * (docs/fleet.md section 5). */
  inboxPrefix?: string;
  /** Any other NATS.js connect options (they win over the subscriber's own: maxReconnectAttempts -1). */
  natsOptions?: Record<string, unknown>;
}

/** A notification read from the fleet: the protocol's map (its keys
 * enumerable, as received) and, not enumerable, where it came from and
 * its ack. */
export type FleetNotification = Notification & {
  /** The engine that published it. */
  readonly engine: string;
  /** Its sequence in the stream. */
  readonly streamSeq: number;
  /** How many times JetStream delivered it before (0 the first time). */
  readonly redeliveries: number;
  /** The host injected it: the cursor moves, and JetStream is told and
   * confirms. Rejects with a VigilConnectionError when no confirmation came
   * (JetStream delivers it again; this subscriber skips it). Twice is once. */
  ack(): Promise<void>;
  /** The host could not inject it: JetStream delivers it again (after delayMs). */
  nak(delayMs?: number): void;
};

export interface FleetCounters {
  /** Notifications handed to the host. */
  delivered: number;
  /** Messages acked and skipped: at or below the cursor. */
  duplicates: number;
  /** Messages termed and never handed over: not a well-formed notification of the fleet. */
  malformed: number;
  /** Deliveries held back (nak'ed with a delay): ahead of the next seq of their session. */
  heldBack: number;
  /** Notifications taken after being held back past the hold bound: seqs before them never came. */
  gaps: number;
}

/** Where a held-back or gap-taken message stands. */
export interface FleetPlace {
  engine: string;
  session: string;
  epoch: string;
  seq: number;
  streamSeq: number;
}

export interface FleetMalformed {
  /** What is wrong, in words naming the header, the key or the bound. */
  problem: string;
  subject: string;
  streamSeq: number;
}

/** A gateway's reader of a fleet (docs/fleet.md section 3): exactly once into the host. */
export declare class FleetSubscriber extends EventEmitter implements AsyncIterable<FleetNotification> {
  /** Connects, binds or creates the durable consumer. Throws RangeError/TypeError
   * for a bad option, VigilConnectionError when no server answers,
   * VigilFleetError when the server refuses. */
  static connect(options: FleetSubscriberOptions): Promise<FleetSubscriber>;
  /** The consumer's filter subject: vigil.<engine>.<session token>.n. */
  readonly subject: string;
  readonly stream: string;
  readonly durable: string;
  /** True when connect() created the durable consumer (false: it bound one). */
  readonly created: boolean;
  readonly counters: FleetCounters;
  /** What was wrong with the last malformed message (with its stream seq and subject), or null. */
  readonly lastMalformed: string | null;
  /** Where the host is: store it; pass it back as `cursor`. */
  cursor(): FleetCursorEntry[];
  /** The next notification, or null after timeoutMs; rejects with a
   * VigilConnectionError once closed or lost. One at a time. */
  next(options?: { timeoutMs?: number }): Promise<FleetNotification | null>;
  notifications(): AsyncGenerator<FleetNotification, void, undefined>;
  [Symbol.asyncIterator](): AsyncIterator<FleetNotification>;
  /** Closes the connection; what was not acked is delivered again after the ack wait. */
  close(): Promise<void>;

  on(event: 'malformed', listener: (m: FleetMalformed) => void): this;
  on(event: 'duplicate', listener: (d: FleetPlace) => void): this;
  /** A delivery ahead of the next seq of its session, nak'ed to come again later. */
  on(event: 'held', listener: (h: FleetPlace) => void): this;
  /** A message taken after being held back heldMs, past the hold bound: what came before it is lost. */
  on(event: 'gap', listener: (g: FleetPlace & { heldMs: number }) => void): this;
  /** The NATS connection's and the consumer's changes (disconnect, reconnect, heartbeats_missed...). */
  on(event: 'status', listener: (s: { type: string; data: unknown }) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}

/** Per engine and session, the epoch and last seq injected (FleetSubscriber keeps one). */
export declare class FleetCursor {
  constructor(entries?: Iterable<FleetCursorEntry>);
  judge(engine: string, session: string, epoch: string, seq: number): 'new' | 'duplicate';
  /** Where a notification stands for the host (docs/fleet.md, "In order"). */
  place(engine: string, session: string, epoch: string, seq: number,
    what?: { type?: string; fromSeq?: number | null }): 'duplicate' | 'next' | 'ahead';
  /** It was handed to the host: the next one follows it. */
  hand(engine: string, session: string, epoch: string, seq: number): void;
  advance(engine: string, session: string, epoch: string, seq: number): void;
  entries(): FleetCursorEntry[];
  get(engine: string, session: string): FleetCursorEntry | null;
}

export declare const FLEET_STREAM: string;
export declare const FLEET_PAYLOAD_MAX_BYTES: number;
export declare const FLEET_ACK_WAIT_MS: number;
export declare const FLEET_BATCH: number;
export declare const FLEET_ACK_CONFIRM_MS: number;
export declare const PAST_EPOCHS_MAX: number;
export declare const FLEET_NAK_DELAY_MIN_MS: number;
export declare const FLEET_NAK_DELAY_MAX_MS: number;
export declare const FLEET_HOLD_EXTRA_MS: number;
export declare const FLEET_HELD_MAX: number;
/** FleetCursor's verdicts. */
export declare const Verdict: Readonly<{ new: 'new'; duplicate: 'duplicate'; next: 'next'; ahead: 'ahead' }>;
/** The 25 keys every notification map has (docs/protocol.md section 6). */
export declare const NOTIFICATION_KEYS: readonly string[];
/** What is wrong with a value as a notification map, or null. */
export declare function notificationProblem(n: unknown): string | null;
/** A session name as a subject token ('.' -> '%2E'). */
export declare function sessionToken(name: string): string;
export declare function sessionFromToken(token: string): string;
/** vigil.<engine>.<session token>.n; '*' for any. */
export declare function fleetSubject(engine?: string, session?: string): string;
/** One message of the stream checked: its engine and notification, or what is wrong. */
export declare function readMessage(
  msg: { subject: string; headers?: { values(name: string): string[] }; data: Uint8Array },
  maxPayloadBytes: number,
): { engine: string; notification: Notification } | { problem: string };
