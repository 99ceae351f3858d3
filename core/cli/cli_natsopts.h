/*
 * What every NATS connection of the CLI takes alike (vigil --nats ...
 * COMMAND, vigil mcp and hook through NATS, vigil watch --nats): the
 * credentials of $VIGIL_NATS_CREDS, TLS from $VIGIL_NATS_CA,
 * $VIGIL_NATS_CERT and $VIGIL_NATS_KEY (or a tls:// URL), and nats.c's
 * errors in words a person reads. One place, so that a fleet secured with
 * creds files or TLS (docs/fleet.md section 5) is reached by every command
 * or by none.
 */
#ifndef VIGIL_CLI_NATSOPTS_H
#define VIGIL_CLI_NATSOPTS_H

#include <stddef.h>

#include <nats/nats.h>

/* Gives o what the environment asks of a connection to url: the .creds
 * file (the user's JWT and nkey seed) of $VIGIL_NATS_CREDS, read by nats.c
 * at the connect; TLS when url says tls:// or any of $VIGIL_NATS_CA (PEM
 * CA certificates to trust for the server's), $VIGIL_NATS_CERT and
 * $VIGIL_NATS_KEY (a client certificate and its key, the two together) is
 * set, their files read here. Returns NATS_OK, or a failure with why (size
 * bytes) naming the variable, its file and what is wrong; o is then the
 * caller's to destroy as always. */
natsStatus cli_natsopts_apply(natsOptions *o, const char *url, char *why, size_t size);

/* What to add to the error of a connect to url that failed with status s,
 * when it looks like TLS's doing: a hint naming the variable that would
 * help, in parentheses after a space; else "". */
const char *cli_natsopts_tls_hint(natsStatus s, const char *url);

/* nats.c's last error of this thread without the source location it puts
 * first ("(conn.c:2088): No server available ..."), which means nothing to
 * a person; "" when there is none. */
const char *cli_natsopts_last_error(void);

#endif
