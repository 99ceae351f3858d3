/*
 * libFuzzer harness for the check of one message off the fleet's broker
 * (cli_fleetmsg_check, cli_fleetmsg.h): what anyone who can publish on
 * vigil.*.*.n hands `vigil watch --nats`.
 *
 * Input: a byte whose low six bits say which of the six header fields are
 * absent (NULL), then subject, Nats-Msg-Id, Vigil-Engine, Vigil-Session,
 * Vigil-Seq and Vigil-Epoch, each ended by a NUL byte, then the payload
 * (the rest). The session watched is "s.1".
 *
 * Properties, beyond "no crash, no leak, no UB":
 * - a pass gives an engine name of [A-Za-z0-9_-]{1,64} that is the
 *   subject's (vigil.ENGINE.s%2E1.n), 16 hex digits of epoch equal to the
 *   header's, a seq of at least 1 equal to the header's, and a map;
 * - a refusal says why in valid UTF-8 with no control character, shorter
 *   than 1 KiB (the value it quotes is escaped and cut).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_fleetmsg.h"
#include "utf8check.h"

#define FUZZ_FIELDS 6

static void
fuzz_check_pass(const FleetMsg *m, const FleetNote *note)
{
  if (!cli_fleetmsg_engine_ok(note->engine) || note->map == NULL ||
      note->map->type != MSGPACK_OBJECT_MAP || note->seq == 0)
    abort();
  StrBuf want = STRBUF_INIT;
  cli_fleetmsg_subject(&want, note->engine, "s.1");
  if (strcmp(strbuf_cstr(&want), m->subject) != 0 || strcmp(note->epoch, m->epoch) != 0 ||
      strlen(note->epoch) != FLEET_EPOCH_LEN || strcmp(m->session, "s.1") != 0)
    abort();
  strbuf_reset(&want);
  strbuf_printf(&want, "%llu", (unsigned long long)note->seq);
  if (strcmp(strbuf_cstr(&want), m->seq) != 0)
    abort();
  strbuf_free(&want);
}

static void
fuzz_check_refusal(const StrBuf *why)
{
  if (why->len == 0 || why->len >= 1024 || !test_utf8_valid(why->data, why->len))
    abort();
  for (size_t i = 0; i < why->len; i++)
    if ((unsigned char)why->data[i] < 0x20 || why->data[i] == 0x7f)
      abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  uint8_t absent = data[0];
  /* The fields as NUL-terminated copies (the payload keeps its length). */
  char *copy = malloc(size);
  memcpy(copy, data + 1, size - 1);
  copy[size - 1] = '\0';
  const char *fields[FUZZ_FIELDS];
  size_t at = 0;
  for (int i = 0; i < FUZZ_FIELDS; i++) {
    fields[i] = copy + at;
    const char *nul = memchr(copy + at, '\0', size - 1 - at);
    if (nul == NULL || at >= size - 1) {
      free(copy);
      return 0;
    }
    at = (size_t)(nul - copy) + 1;
    if (absent & (1u << i))
      fields[i] = NULL;
  }
  if (fields[0] == NULL)
    fields[0] = "";
  FleetMsg m = {
    .subject = fields[0],
    .msg_id = fields[1],
    .engine = fields[2],
    .session = fields[3],
    .seq = fields[4],
    .epoch = fields[5],
    .payload = copy + at,
    .payload_len = size - 1 - at,
  };
  FleetNote note;
  StrBuf why = STRBUF_INIT;
  if (cli_fleetmsg_check(&m, "s.1", &note, &why)) {
    fuzz_check_pass(&m, &note);
    cli_fleetmsg_release(&note);
  } else {
    fuzz_check_refusal(&why);
  }
  strbuf_free(&why);
  free(copy);
  return 0;
}
