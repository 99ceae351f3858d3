/*
 * What every NATS connection of the CLI takes alike (vigil --nats ...
 * COMMAND, vigil mcp and hook through NATS, vigil watch --nats): the
 * credentials of $VIGIL_NATS_CREDS, and nats.c's errors in words a person
 * reads. One place, so that a fleet secured with creds files (docs/fleet.md
 * section 5) is reached by every command or by none.
 */
#ifndef VIGIL_CLI_NATSOPTS_H
#define VIGIL_CLI_NATSOPTS_H

#include <nats/nats.h>

/* Gives o the .creds file (the user's JWT and nkey seed) that
 * $VIGIL_NATS_CREDS names, when it names one; nats.c reads it at the
 * connect, and a file it cannot read fails the connect naming it. */
natsStatus cli_natsopts_credentials(natsOptions *o);

/* nats.c's last error of this thread without the source location it puts
 * first ("(conn.c:2088): No server available ..."), which means nothing to
 * a person; "" when there is none. */
const char *cli_natsopts_last_error(void);

#endif
