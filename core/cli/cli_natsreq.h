/*
 * The CLI's requests over NATS (`vigil --nats URL --engine NAME COMMAND`,
 * docs/fleet.md section 6): the same msgpack-rpc frames the socket
 * carries, each sent as a NATS request to the engine's request subject,
 * with this run's Vigil-Client id so that its calls share one connection
 * in the engine. Answers come back on an inbox of the run's own; nats.c
 * hands them over on its thread, which writes each frame into a
 * socketpair, so the rest of the CLI reads them with poll() and its
 * deadlines exactly as it reads the engine's socket (cli_conn.c).
 *
 * The Vigil-Client id is the process's: every connection a process opens
 * (vigil mcp opens one again after the broker or the engine went away)
 * sends the same one, so the engine keeps serving it on the same virtual
 * connection while that lives.
 *
 * A client that wants its session's notifications live (vigil mcp, vigil
 * hook) also subscribes to the session's subject on the same connection
 * (cli_natsreq_listen): each message, once checked (cli_natslive.h), is
 * written into the same socketpair as a push frame, so it is read where a
 * push from the socket would be. Writers take a lock, so that an answer and
 * a notification never interleave their bytes.
 *
 * The broker going away is the engine going away: nats.c is told not to
 * reconnect on its own, and a lost connection shuts the socketpair's
 * writing end, so the reader sees the end of the stream at once, as it
 * would see a socket close (cli_natsreq_lost says why). Whoever reconnects
 * opens a new CliNatsReq.
 */
#ifndef VIGIL_CLI_NATSREQ_H
#define VIGIL_CLI_NATSREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct CliNatsReq CliNatsReq;

/* How long a connect to the NATS server may take. */
#define CLI_NATSREQ_CONNECT_MS 5000

/* Connects to url (one URL or a comma-separated list; user:password@ in
 * it, or the .creds file $VIGIL_NATS_CREDS; TLS as cli_natsopts.h says)
 * and subscribes to an inbox of
 * its own, under the prefix $VIGIL_NATS_INBOX (default _INBOX: a user
 * whose permissions give it its own prefix names it there); requests will
 * go to subject. *read_fd is where the
 * answers' frames can be read (non-blocking), owned by the CliNatsReq.
 * NULL with why (size bytes) when the server cannot be reached or refuses
 * the connection, or refuses this user the inbox's subscription (then
 * *denied is true: the answers could never come, and a wait for them
 * would end only at its deadline, saying nothing of why). */
CliNatsReq *cli_natsreq_open(const char *url, const char *subject, int *read_fd, bool *denied,
                             char *why, size_t size);

/* Publishes one frame (data, len) whose answer carries msgid, with the
 * inbox subject the answer comes back to. -1 with why when it cannot. */
int cli_natsreq_send(CliNatsReq *n, uint32_t msgid, const char *data, size_t len, char *why,
                     size_t size);

/* Subscribes to the notifications of session on engine (core NATS, on
 * this connection: vigil.ENGINE.TOKEN.n) and hands each message that is
 * one of them on as a `vigil.notification` push frame; any other message
 * there is dropped, counted and said on stderr (the first, then at every
 * power of two). 0, or -1 with why when the server refuses the
 * subscription (a user without `subscribe` on that subject). */
int cli_natsreq_listen(CliNatsReq *n, const char *engine, const char *session, char *why,
                       size_t size);

/* How many messages on the notification subject were dropped as not this
 * session's notifications. */
unsigned long long cli_natsreq_live_dropped(CliNatsReq *n);

/* Whether the connection to the server was lost (the socketpair then
 * ends); why (size bytes) says how. */
bool cli_natsreq_lost(CliNatsReq *n, char *why, size_t size);

/* Whether the answer to msgid was the server's "no responders" (nobody
 * subscribes to the request subject: no engine of that name is connected,
 * so the request reached no engine). Asked once per msgid: the record is
 * forgotten. */
bool cli_natsreq_no_responders(CliNatsReq *n, uint32_t msgid);

/* Writes the request subject of engine into out: "vigil.<engine>.rpc",
 * or, with session, that session's "vigil.<engine>.<token>.rpc" (each '.'
 * of the name written %2E, as docs/fleet.md spells tokens). -1 when engine
 * is no engine name or it does not fit. */
int cli_natsreq_subject(char *out, size_t size, const char *engine, const char *session);

/* Closes the connection and the socketpair. */
void cli_natsreq_close(CliNatsReq *n);

#endif
