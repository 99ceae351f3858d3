/*
 * The fleet's wire as a reader sees it (docs/fleet.md section 1): the names
 * (an engine's, a session's and its subject token), the subject a watch
 * reads, and the check that one message off the broker is a notification
 * of the session asked for before anything of it is shown. A message on
 * the broker can be anything: its headers are for routing and must agree
 * with its subject and its payload, and the payload must be the one msgpack
 * map a notification is. Nothing here speaks to a server; `vigil watch
 * --nats` (cli_watchnats.c) hands each message's parts over as strings.
 */
#ifndef VIGIL_CLI_FLEETMSG_H
#define VIGIL_CLI_FLEETMSG_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "spec/fleet_names.h"

/* The epoch: 16 hex digits. */
#define FLEET_EPOCH_LEN 16

/* The largest payload the reader unpacks: far above any envelope an engine
 * renders, and a bound on what one hostile message can make it allocate. */
#define FLEET_PAYLOAD_MAX (4u * 1024 * 1024)

/* Whether name is an engine name: [A-Za-z0-9_-]{1,64}. */
bool cli_fleetmsg_engine_ok(const char *name);

/* Whether name is a session name an engine publishes: spec/names.h's
 * session_name_ok (anonymous sessions are not published). */
bool cli_fleetmsg_session_ok(const char *name);

/* Appends the subject token of session (a valid session name): every '.'
 * written as "%2E". */
void cli_fleetmsg_token(StrBuf *out, const char *session);

/* Appends the subject of session's notifications: vigil.ENGINE.TOKEN.n, or
 * vigil.*.TOKEN.n (every engine's) when engine is NULL. */
void cli_fleetmsg_subject(StrBuf *out, const char *engine, const char *session);

/* One message as the broker delivered it: its subject, the headers of
 * docs/fleet.md (NULL when absent) and its payload. All borrowed. */
typedef struct {
  const char *subject;
  const char *msg_id;  /* Nats-Msg-Id */
  const char *engine;  /* Vigil-Engine */
  const char *session; /* Vigil-Session */
  const char *seq;     /* Vigil-Seq */
  const char *epoch;   /* Vigil-Epoch */
  const char *payload;
  size_t payload_len;
} FleetMsg;

/* A message that passed the check: the notification map and what routes
 * it. The map's objects live in unpacked (cli_fleetmsg_release frees them). */
typedef struct {
  msgpack_unpacked unpacked;
  const msgpack_object *map;
  char engine[FLEET_ENGINE_NAME_MAX + 1];
  char epoch[FLEET_EPOCH_LEN + 1];
  uint64_t seq;
  /* A `dropped` notification's from_seq (it stands for every seq from there
   * to its own: docs/fleet.md, In order); 0 for any other. */
  uint64_t from_seq;
} FleetNote;

/* Checks msg against the wire: its subject is vigil.ENGINE.TOKEN.n for a
 * valid engine name and the token of want_session; Vigil-Engine is that
 * engine; Vigil-Session is want_session; Vigil-Seq a decimal seq of at least
 * 1 and Vigil-Epoch 16 hex digits; Nats-Msg-Id, when there, is
 * EPOCH:SESSION:SEQ (or EPOCH:SESSION:SEQ:N, sent again under a new id);
 * the payload is one msgpack map (nothing after it) whose
 * session, seq and epoch are the headers' and whose type and text are
 * strings, none of those keys twice. Returns true with note filled (release
 * it), or false with why set to a phrase naming what was wrong and its value
 * made safe to print ("Vigil-Seq \"7\" disagrees with the payload's seq 8");
 * note is then left empty. */
bool cli_fleetmsg_check(const FleetMsg *msg, const char *want_session, FleetNote *note,
                        StrBuf *why);

/* Frees what a passed check unpacked. */
void cli_fleetmsg_release(FleetNote *note);

#endif
