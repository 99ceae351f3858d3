/*
 * A published notification back into the socket's push frame (see
 * cli_natslive.h).
 */
#include "cli/cli_natslive.h"

#include <string.h>

#include "base/textfmt.h"

bool
cli_natslive_frame(const FleetMsg *msg, const char *engine, const char *session,
                   msgpack_sbuffer *out, StrBuf *why)
{
  FleetNote note;
  if (!cli_fleetmsg_check(msg, session, &note, why))
    return false;
  /* The subject names the engine and the check held Vigil-Engine to it;
   * a subscription of another engine's subject is no business of ours. */
  if (strcmp(note.engine, engine) != 0) {
    strbuf_puts(why, "the engine \"");
    textfmt_escape(why, note.engine, strlen(note.engine));
    strbuf_printf(why, "\" is not %s", engine);
    cli_fleetmsg_release(&note);
    return false;
  }
  cli_fleetmsg_release(&note);
  /* The check unpacked the payload as exactly one map: its bytes go as
   * they are, as the one parameter of the push. */
  msgpack_packer pk;
  msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 3);
  msgpack_pack_int(&pk, 2);
  msgpack_pack_str_with_body(&pk, "vigil.notification", strlen("vigil.notification"));
  msgpack_pack_array(&pk, 1);
  msgpack_sbuffer_write(out, msg->payload, msg->payload_len);
  return true;
}
