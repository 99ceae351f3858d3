/*
 * A hook's bounded take from the model cursor (see hook_take.h).
 */
#include "cli/hook_take.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli_obj.h"
#include "cli/hook_text.h"
#include "mcp/mcp_frame.h"
#include "base/memory.h"

/* The notifications of a result's `notifications` list as HookNotes, their
 * texts made fit for a model (mcp_frame_clean: the engine's envelope comes
 * through unchanged; anything else it held is escaped). */
typedef struct {
  HookNote notes[HOOK_TAKE_MAX];
  char *texts[HOOK_TAKE_MAX];
  char *words[HOOK_TAKE_MAX][2];
  size_t n;
} HookTakeNotes;

/* A copy of a map's string at key, or NULL. */
static char *
hook_take_str(const msgpack_object *map, const char *key)
{
  size_t n;
  const char *s = cli_obj_get_text(map, key, &n);
  if (s == NULL)
    return NULL;
  char *copy = xmalloc(n + 1);
  memcpy(copy, s, n);
  copy[n] = '\0';
  return copy;
}

/* Reads at most HOOK_TAKE_MAX of result's notifications into t. */
static void
hook_take_notes(const msgpack_object *result, HookTakeNotes *t)
{
  memset(t, 0, sizeof *t);
  const msgpack_object *list = cli_obj_get(result, "notifications");
  if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY)
    return;
  for (uint32_t i = 0; i < list->via.array.size && t->n < HOOK_TAKE_MAX; i++) {
    const msgpack_object *m = &list->via.array.ptr[i];
    char *text = hook_take_str(m, "text");
    if (text == NULL)
      text = xstrdup("");
    mcp_frame_clean(&text);
    size_t k = t->n++;
    t->texts[k] = text;
    t->words[k][0] = hook_take_str(m, "type");
    t->words[k][1] = hook_take_str(m, "monitor_id");
    t->notes[k] = (HookNote){cli_obj_get_uint(m, "seq", 0), t->words[k][0], t->words[k][1],
                             text, strlen(text)};
  }
}

static void
hook_take_notes_free(HookTakeNotes *t)
{
  for (size_t i = 0; i < t->n; i++) {
    free(t->texts[i]);
    free(t->words[i][0]);
    free(t->words[i][1]);
  }
  t->n = 0;
}

/* A call on c's current session naming the model cursor (with_cursor)
 * and up to two numbers (a key NULL: none). */
static int
hook_take_call(CliClient *c, const char *method, bool with_cursor, const char *key1,
               uint64_t value1, const char *key2, uint64_t value2, CliReply *reply)
{
  CliReq req;
  cli_req_init(&req);
  if (with_cursor)
    cli_req_str(&req, "cursor", HOOK_CURSOR);
  if (key1 != NULL)
    cli_req_uint(&req, key1, value1);
  if (key2 != NULL)
    cli_req_uint(&req, key2, value2);
  int rc = cli_client_call(c, method, &req, CLI_CALL_TIMEOUT_MS, reply);
  cli_req_free(&req);
  return rc;
}

int
hook_take(CliClient *c, StrBuf *out, size_t *taken)
{
  *taken = 0;
  CliReply reply;
  if (hook_take_call(c, "cursor_get", true, NULL, 0, NULL, 0, &reply) != 0)
    return -1;
  uint64_t at = cli_obj_get_uint(reply.result, "cursor", 0);
  cli_reply_free(&reply);
  /* A look, which moves nothing: how many fit. An engine that keeps fewer
   * than HOOK_TAKE_MAX a session refuses that limit: then its own. */
  uint64_t most = HOOK_TAKE_MAX;
  if (hook_take_call(c, "notifications_since", false, "since_seq", at, "limit", most, &reply) !=
      0) {
    if (c->err.kind != kCliErrEngine || strstr(c->err.msg, "session.queue_max") == NULL)
      return -1;
    most = cli_client_limit(c, "session.queue_max", 1);
    if (most == 0 || most > HOOK_TAKE_MAX)
      most = 1;
    if (hook_take_call(c, "notifications_since", false, "since_seq", at, "limit", most,
                       &reply) != 0)
      return -1;
  }
  HookTakeNotes peek;
  hook_take_notes(reply.result, &peek);
  bool dropped = cli_obj_get_uint(reply.result, "dropped", 0) > 0;
  cli_reply_free(&reply);
  size_t fit = hook_text_plan(peek.notes, peek.n, HOOK_TEXT_MAX_BYTES, HOOK_TEXT_MAX_LINES);
  hook_take_notes_free(&peek);
  if (fit == 0 && !dropped)
    return 0;
  /* The take: at least one, so that seqs no longer kept are passed too. */
  if (hook_take_call(c, "cursor_take", true, "limit", fit > 0 ? fit : 1, NULL, 0, &reply) != 0)
    return -1;
  HookTakeNotes got;
  hook_take_notes(reply.result, &got);
  hook_text_join(out, got.notes, got.n, cli_obj_get_uint(reply.result, "dropped", 0),
                 cli_obj_get_uint(reply.result, "dropped_from", 0),
                 cli_obj_get_uint(reply.result, "dropped_to", 0), HOOK_TEXT_MAX_BYTES,
                 HOOK_TEXT_MAX_LINES);
  *taken = got.n;
  hook_take_notes_free(&got);
  cli_reply_free(&reply);
  return 0;
}
