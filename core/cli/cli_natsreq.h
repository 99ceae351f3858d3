/*
 * The CLI's requests over NATS (`vigil --nats URL --engine NAME COMMAND`,
 * docs/fleet.md section 6): the same msgpack-rpc frames the socket
 * carries, each sent as a NATS request to the engine's request subject,
 * with this run's Vigil-Client id so that its calls share one connection
 * in the engine. Answers come back on an inbox of the run's own; nats.c
 * hands them over on its thread, which writes each frame into a
 * socketpair, so the rest of the CLI reads them with poll() and its
 * deadlines exactly as it reads the engine's socket (cli_conn.c).
 */
#ifndef VIGIL_CLI_NATSREQ_H
#define VIGIL_CLI_NATSREQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct CliNatsReq CliNatsReq;

/* How long a connect to the NATS server may take. */
#define CLI_NATSREQ_CONNECT_MS 5000

/* Connects to url (one URL or a comma-separated list; user:password@ in
 * it, or the .creds file $VIGIL_NATS_CREDS) and subscribes to an inbox of
 * its own, under the prefix $VIGIL_NATS_INBOX (default _INBOX: a user
 * whose permissions give it its own prefix names it there); requests will
 * go to subject. *read_fd is where the
 * answers' frames can be read (non-blocking), owned by the CliNatsReq.
 * NULL with why (size bytes) when the server cannot be reached or refuses. */
CliNatsReq *cli_natsreq_open(const char *url, const char *subject, int *read_fd, char *why,
                             size_t size);

/* Publishes one frame (data, len) whose answer carries msgid, with the
 * inbox subject the answer comes back to. -1 with why when it cannot. */
int cli_natsreq_send(CliNatsReq *n, uint32_t msgid, const char *data, size_t len, char *why,
                     size_t size);

/* Writes the request subject of engine into out: "vigil.<engine>.rpc",
 * or, with session, that session's "vigil.<engine>.<token>.rpc" (each '.'
 * of the name written %2E, as docs/fleet.md spells tokens). -1 when engine
 * is no engine name or it does not fit. */
int cli_natsreq_subject(char *out, size_t size, const char *engine, const char *session);

/* Closes the connection and the socketpair. */
void cli_natsreq_close(CliNatsReq *n);

#endif
