// vigil-client: a Node client for vigil's engine (vigild). See README.md;
// the wire contract is docs/protocol.md of the vigil repository.
//
//   Client.connect(path)       an engine's Unix socket
//   Engine.spawn({config})     an engine of the host's own (vigild --stdio)
//   Client.connectNats({servers, engine})  a remote engine through NATS
//                              (docs/fleet.md section 6)
//   client.session(name, {lastSeq})  a named session that resumes exactly
//   client.wait({timeoutMs})   the next notification
//   FleetSubscriber.connect({url, durable, ...})  a fleet's notifications
//                              from NATS JetStream (docs/fleet.md)

export { Client, LAST_SEQ_MAX, RECONNECT_TIMEOUT_MS } from './lib/client.js';
export { Engine, ENGINE_LOG_TAIL_BYTES, ENGINE_TIMEOUT_MS } from './lib/engine.js';
export { NatsClient, CLIENT_ID } from './lib/natsclient.js';
export { CALL_TIMEOUT_MS, CLIENT_HEADER, ownWaitMs } from './lib/natsrpc.js';
export { Session } from './lib/session.js';
export { ERROR_CODES, VigilError, VigilConnectionError, VigilTimeoutError, VigilFleetError } from './lib/errors.js';
export { METHODS, ENDING_TYPES } from './lib/methods.js';
export { defaultSocketPath, SOCKET_PATH_MAX } from './lib/socket.js';
export { INBOX_MAX } from './lib/inbox.js';
export { IN_FLIGHT_MAX } from './lib/connection.js';
export { ITEM_MAX_BYTES, readMessages, encodeMessage } from './lib/framing.js';
export {
  FleetSubscriber, FLEET_ACK_WAIT_MS, FLEET_BATCH, FLEET_ACK_CONFIRM_MS, FLEET_NAK_DELAY_MIN_MS, FLEET_NAK_DELAY_MAX_MS,
  FLEET_HOLD_EXTRA_MS, FLEET_HELD_MAX,
} from './lib/fleet.js';
export { FleetCursor, PAST_EPOCHS_MAX, Verdict } from './lib/fleetcursor.js';
export {
  FLEET_STREAM, FLEET_PAYLOAD_MAX_BYTES, fleetSubject, rpcSubject, sessionToken, sessionFromToken, readMessage,
} from './lib/fleetwire.js';
export { NOTIFICATION_KEYS, notificationProblem } from './lib/notification.js';
