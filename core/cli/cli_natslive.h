/*
 * A session's notifications as they are published, for a client that
 * reaches its engine through NATS (docs/fleet.md section 6, "vigil mcp and
 * hooks"). Over the socket the engine pushes each notification of an open
 * session to the connection as a `vigil.notification` frame; over NATS it
 * drops those pushes, and publishes each notification on the session's
 * subject instead (vigil.ENGINE.TOKEN.n, section 1). A client that wants
 * them live subscribes there, and this turns each message it receives back
 * into the frame the socket would have carried, so that `vigil mcp` and
 * `vigil hook` read them exactly as they read pushes.
 *
 * A message on the broker can be anything: it becomes a frame only after
 * cli_fleetmsg_check found it a notification of this session, and the
 * engine its headers name is the one asked for. What it carries is the
 * payload unchanged, the one msgpack map the check unpacked, so the text
 * reaches the model framed as the engine framed it, exactly as over the
 * socket. Nothing here speaks to a server (cli_natsreq.c subscribes).
 */
#ifndef VIGIL_CLI_NATSLIVE_H
#define VIGIL_CLI_NATSLIVE_H

#include <msgpack.h>
#include <stdbool.h>

#include "cli/cli_fleetmsg.h"
#include "base/strbuf.h"

/* Checks msg as a notification of session on engine and, when it is one,
 * appends to out the frame [2, "vigil.notification", [MAP]] with MAP the
 * payload's bytes as they came. Returns true, or false with why set to a
 * phrase naming what was wrong (out is then unchanged). */
bool cli_natslive_frame(const FleetMsg *msg, const char *engine, const char *session,
                        msgpack_sbuffer *out, StrBuf *why);

#endif
