/*
 * The names a fleet's engine uses on NATS (docs/fleet.md section 1): its
 * engine name, a session's name as one subject token, the subject of a
 * session's notifications, and the message id JetStream deduplicates by.
 * Pure functions on strings, so the wire's spelling lives in one place and
 * is tested alone.
 */
#ifndef VIGIL_FLEET_NAMES_H
#define VIGIL_FLEET_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest engine name. */
#define FLEET_ENGINE_NAME_MAX 64
/* The longest session token: every byte of a session name (64 at most,
 * session.h) written as "%2E". */
#define FLEET_SESSION_TOKEN_MAX (64 * 3)
/* Room for any subject or message id made here, its NUL included. */
#define FLEET_SUBJECT_MAX 320
/* The subjects of the stream: every engine's, every session's notifications. */
#define FLEET_STREAM_SUBJECTS "vigil.*.*.n"

/* Whether name may name an engine: 1..FLEET_ENGINE_NAME_MAX of A-Z a-z 0-9
 * _ -, so it is one subject token and one consumer-name part. */
bool fleet_engine_name_ok(const char *name);

/* The same of the n bytes at s (a subject's engine token). */
bool fleet_engine_token_ok(const char *s, size_t n);

/* The default engine name: this machine's host name, every character an
 * engine name may not hold written as '-', cut at FLEET_ENGINE_NAME_MAX;
 * "vigil" when there is no host name. out has FLEET_ENGINE_NAME_MAX + 1. */
void fleet_engine_name_default(char *out);

/* Writes session's token into out (size bytes): the name with every '.'
 * as "%2E". Returns its length, or -1 when it does not fit. */
int fleet_session_token(const char *session, char *out, size_t size);

/* Reads a token back into the session name it stands for: "%2E" as '.';
 * any other '%', or a '.', '*', '>' or byte outside a session name's
 * alphabet, is refused (-1), as is a name that does not fit. */
int fleet_session_from_token(const char *token, size_t len, char *out, size_t size);

/* "vigil.<engine>.<token>.n" into out (FLEET_SUBJECT_MAX); -1 when the
 * session's token does not fit. */
int fleet_subject(char *out, size_t size, const char *engine, const char *session);

/* Request subjects (docs/fleet.md section 6): "vigil.<engine>.rpc" for the
 * whole engine, or "vigil.<engine>.<token>.rpc" for session alone (when
 * session is not NULL). -1 when it does not fit. */
int fleet_rpc_subject(char *out, size_t size, const char *engine, const char *session);

/* The wildcard that takes every session's request subject of engine,
 * "vigil.<engine>.*.rpc". */
int fleet_rpc_subject_any_session(char *out, size_t size, const char *engine);

/* What a request subject names. */
typedef enum {
  kFleetRpcEngine,   /* vigil.<engine>.rpc: any method, any session */
  kFleetRpcSession,  /* vigil.<engine>.<token>.rpc: that session alone */
  kFleetRpcNotOurs,  /* another engine's, another shape, or a token that is no session name */
} FleetRpcScope;

/* Reads subject as one of engine's request subjects; for kFleetRpcSession
 * the session's name is written into session (size bytes). */
FleetRpcScope fleet_rpc_subject_read(const char *subject, const char *engine, char *session,
                                     size_t size);

/* The longest requester id (the Vigil-Client header). */
#define FLEET_CLIENT_ID_MAX 64
/* Whether id may name a requester's virtual connection: 1..64 of A-Z a-z
 * 0-9 _ - : . */
bool fleet_client_id_ok(const char *id);

/* "<epoch>:<session>:<seq>", the Nats-Msg-Id of a notification. */
void fleet_msg_id(char *out, size_t size, const char *epoch, const char *session, uint64_t seq);

/* Whether url (one URL or a comma-separated list) names a server by
 * tls://, which asks for TLS of it as a TLS setting does. */
bool fleet_url_says_tls(const char *url);

/* Writes url into out with any user information (user, password, token
 * before '@') replaced by "***", so a URL can be logged and reported. */
void fleet_url_redacted(const char *url, char *out, size_t size);

#endif
