/*
 * The fleet's names, subjects and the check of one message (see
 * cli_fleetmsg.h). The check goes from the outside in: subject, headers,
 * then the payload, and stops at the first thing wrong, so the phrase it
 * gives names one fault a person can look for in the publisher.
 */
#include "cli/cli_fleetmsg.h"

#include <string.h>

#include "base/textfmt.h"
#include "base/utf8.h"
#include "cli/cli_obj.h"
#include "spec/fleet_names.h"
#include "spec/names.h"

/* How much of a hostile value a phrase quotes. */
#define FLEETMSG_QUOTE_MAX 80

bool
cli_fleetmsg_engine_ok(const char *name)
{
  return name && fleet_engine_name_ok(name);
}

bool
cli_fleetmsg_session_ok(const char *name)
{
  return session_name_ok(name);
}

void
cli_fleetmsg_token(StrBuf *out, const char *session)
{
  /* The engines' spelling (spec/fleet_names.h); a name too long for a
   * token (checked before: cli_fleetmsg_session_ok) adds nothing. */
  char token[FLEET_SESSION_TOKEN_MAX + 1];
  if (fleet_session_token(session, token, sizeof token) >= 0)
    strbuf_puts(out, token);
}

void
cli_fleetmsg_subject(StrBuf *out, const char *engine, const char *session)
{
  strbuf_printf(out, "vigil.%s.", engine ? engine : "*");
  cli_fleetmsg_token(out, session);
  strbuf_puts(out, ".n");
}

/* Appends a value from the message, quoted, escaped and cut, so that a
 * phrase about a hostile message prints safely. */
static void
fleetmsg_quote(StrBuf *why, const char *s, size_t n)
{
  size_t keep = utf8_cut(s, n, FLEETMSG_QUOTE_MAX);
  strbuf_putc(why, '"');
  textfmt_escape(why, s, keep);
  strbuf_puts(why, keep < n ? "\"..." : "\"");
}

/* Sets why to "<what> <quoted value> <rest>" and returns false. */
static bool
fleetmsg_bad(StrBuf *why, const char *what, const char *value, size_t n, const char *rest)
{
  strbuf_printf(why, "%s ", what);
  if (value)
    fleetmsg_quote(why, value, n);
  else
    strbuf_puts(why, "(none)");
  strbuf_printf(why, " %s", rest);
  return false;
}

/* Parses a decimal seq of at least 1 with no sign, space or leading zero. */
static bool
fleetmsg_parse_seq(const char *s, uint64_t *seq)
{
  size_t n = strlen(s);
  if (n == 0 || n > 20 || s[0] == '0')
    return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10)
      return false;
    v = v * 10 + d;
  }
  *seq = v;
  return true;
}

/* Whether s is exactly FLEET_EPOCH_LEN hex digits. */
static bool
fleetmsg_epoch_ok(const char *s)
{
  if (strlen(s) != FLEET_EPOCH_LEN)
    return false;
  for (size_t i = 0; i < FLEET_EPOCH_LEN; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
          (s[i] >= 'A' && s[i] <= 'F')))
      return false;
  return true;
}

/* Splits subject into the engine token and the session token of
 * vigil.ENGINE.TOKEN.n. Returns false when it has another shape. */
static bool
fleetmsg_split_subject(const char *subject, const char **engine, size_t *en, const char **token,
                       size_t *tn)
{
  size_t n = strlen(subject);
  if (n < 12 || memcmp(subject, "vigil.", 6) != 0 || memcmp(subject + n - 2, ".n", 2) != 0)
    return false;
  const char *e = subject + 6;
  const char *dot = memchr(e, '.', (size_t)(subject + n - 2 - e));
  if (dot == NULL)
    return false;
  *engine = e;
  *en = (size_t)(dot - e);
  *token = dot + 1;
  *tn = (size_t)(subject + n - 2 - *token);
  return memchr(*token, '.', *tn) == NULL;
}

/* Whether token (tn bytes) is the subject token of session. */
static bool
fleetmsg_token_is(const char *token, size_t tn, const char *session)
{
  StrBuf want = STRBUF_INIT;
  cli_fleetmsg_token(&want, session);
  bool same = want.len == tn && memcmp(want.data, token, tn) == 0;
  strbuf_free(&want);
  return same;
}

/* How many times key is in map (a map with a routing key twice is
 * ambiguous: one reader would take the first, another the last). */
static unsigned
fleetmsg_key_count(const msgpack_object *map, const char *key)
{
  unsigned count = 0;
  size_t kn = strlen(key);
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    size_t n;
    const char *k = cli_obj_text(&map->via.map.ptr[i].key, &n);
    if (k && n == kn && memcmp(k, key, n) == 0)
      count++;
  }
  return count;
}

/* The payload's part of the check (see cli_fleetmsg_check): the headers
 * have been checked and parsed into seq. */
static bool
fleetmsg_check_payload(const FleetMsg *msg, uint64_t seq, FleetNote *note, StrBuf *why)
{
  if (msg->payload_len > FLEET_PAYLOAD_MAX) {
    strbuf_printf(why, "the payload of %zu bytes is past the bound of %u bytes", msg->payload_len,
                  FLEET_PAYLOAD_MAX);
    return false;
  }
  size_t off = 0;
  msgpack_unpack_return ur =
      msgpack_unpack_next(&note->unpacked, msg->payload, msg->payload_len, &off);
  if (ur != MSGPACK_UNPACK_SUCCESS || off != msg->payload_len) {
    strbuf_printf(why, "the payload (%zu bytes) is not one msgpack value", msg->payload_len);
    return false;
  }
  const msgpack_object *map = &note->unpacked.data;
  if (map->type != MSGPACK_OBJECT_MAP) {
    strbuf_puts(why, "the payload is not a msgpack map");
    return false;
  }
  static const char *const routing[] = {"session", "seq", "epoch", "type", "text", NULL};
  for (size_t i = 0; routing[i]; i++) {
    if (fleetmsg_key_count(map, routing[i]) > 1) {
      strbuf_printf(why, "the payload has the key \"%s\" more than once", routing[i]);
      return false;
    }
  }
  size_t n;
  const char *s = cli_obj_get_text(map, "session", &n);
  if (s == NULL || n != strlen(msg->session) || memcmp(s, msg->session, n) != 0)
    return fleetmsg_bad(why, "the payload's session", s, n, "disagrees with Vigil-Session");
  const msgpack_object *pseq = cli_obj_get(map, "seq");
  if (pseq == NULL || pseq->type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
      pseq->via.u64 != seq) {
    strbuf_printf(why, "Vigil-Seq %llu disagrees with the payload's seq", (unsigned long long)seq);
    if (pseq && pseq->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
      strbuf_printf(why, " %llu", (unsigned long long)pseq->via.u64);
    else
      strbuf_puts(why, " (not an unsigned integer)");
    return false;
  }
  s = cli_obj_get_text(map, "epoch", &n);
  if (s == NULL || n != FLEET_EPOCH_LEN || memcmp(s, msg->epoch, n) != 0)
    return fleetmsg_bad(why, "the payload's epoch", s, n, "disagrees with Vigil-Epoch");
  const msgpack_object *type = cli_obj_get(map, "type");
  const msgpack_object *text = cli_obj_get(map, "text");
  if (type == NULL || type->type != MSGPACK_OBJECT_STR || text == NULL ||
      text->type != MSGPACK_OBJECT_STR) {
    strbuf_printf(why, "the payload's %s is not a string", type && type->type == MSGPACK_OBJECT_STR
                                                               ? "text"
                                                               : "type");
    return false;
  }
  note->map = map;
  note->seq = seq;
  const msgpack_object *from = cli_obj_get(map, "from_seq");
  if (type->via.str.size == 7 && memcmp(type->via.str.ptr, "dropped", 7) == 0 && from &&
      from->type == MSGPACK_OBJECT_POSITIVE_INTEGER && from->via.u64 <= seq)
    note->from_seq = from->via.u64;
  return true;
}

bool
cli_fleetmsg_check(const FleetMsg *msg, const char *want_session, FleetNote *note, StrBuf *why)
{
  memset(note, 0, sizeof *note);
  msgpack_unpacked_init(&note->unpacked);
  const char *etok, *stok;
  size_t en, sn;
  const char *subject = msg->subject ? msg->subject : "";
  if (!fleetmsg_split_subject(subject, &etok, &en, &stok, &sn) ||
      !fleet_engine_token_ok(etok, en) || !fleetmsg_token_is(stok, sn, want_session)) {
    fleetmsg_bad(why, "the subject", subject, strlen(subject),
                 "is not vigil.ENGINE.TOKEN.n of this session");
    cli_fleetmsg_release(note);
    return false;
  }
  const char *engine = msg->engine;
  if (engine == NULL || strlen(engine) != en || memcmp(engine, etok, en) != 0) {
    fleetmsg_bad(why, "Vigil-Engine", engine, engine ? strlen(engine) : 0,
                 "disagrees with the subject's engine");
    cli_fleetmsg_release(note);
    return false;
  }
  bool ok = true;
  uint64_t seq = 0;
  if (msg->session == NULL || strcmp(msg->session, want_session) != 0)
    ok = fleetmsg_bad(why, "Vigil-Session", msg->session, msg->session ? strlen(msg->session) : 0,
                      "is not the session watched");
  else if (msg->seq == NULL || !fleetmsg_parse_seq(msg->seq, &seq))
    ok = fleetmsg_bad(why, "Vigil-Seq", msg->seq, msg->seq ? strlen(msg->seq) : 0,
                      "is not a seq (a decimal number from 1)");
  else if (msg->epoch == NULL || !fleetmsg_epoch_ok(msg->epoch))
    ok = fleetmsg_bad(why, "Vigil-Epoch", msg->epoch, msg->epoch ? strlen(msg->epoch) : 0,
                      "is not 16 hex digits");
  if (ok && msg->msg_id) {
    /* EPOCH:SESSION:SEQ, or EPOCH:SESSION:SEQ:N when the engine sent it
     * again under a new id because another publisher took the first
     * (docs/fleet.md, Forged ids). */
    StrBuf id = STRBUF_INIT;
    strbuf_printf(&id, "%s:%s:%llu", msg->epoch, msg->session, (unsigned long long)seq);
    const char *gen = strncmp(id.data, msg->msg_id, id.len) == 0 ? msg->msg_id + id.len : "x";
    uint64_t n;
    if (gen[0] != '\0' && !(gen[0] == ':' && fleetmsg_parse_seq(gen + 1, &n)))
      ok = fleetmsg_bad(why, "Nats-Msg-Id", msg->msg_id, strlen(msg->msg_id),
                        "disagrees with Vigil-Epoch:Vigil-Session:Vigil-Seq");
    strbuf_free(&id);
  }
  if (ok)
    ok = fleetmsg_check_payload(msg, seq, note, why);
  if (!ok) {
    cli_fleetmsg_release(note);
    return false;
  }
  memcpy(note->engine, etok, en);
  note->engine[en] = '\0';
  memcpy(note->epoch, msg->epoch, FLEET_EPOCH_LEN);
  note->epoch[FLEET_EPOCH_LEN] = '\0';
  return true;
}

void
cli_fleetmsg_release(FleetNote *note)
{
  msgpack_unpacked_destroy(&note->unpacked);
  msgpack_unpacked_init(&note->unpacked);
  note->map = NULL;
}
