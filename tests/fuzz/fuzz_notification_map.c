/*
 * libFuzzer harness for the reader of a wire-shaped notification
 * (notification_map.c): what `vigil policy try --notification JSON` and a
 * policy's examples hand the engine's delivery code, hostile by nature.
 *
 * Input: a small program that builds one msgpack value: byte by byte it
 * chooses a key (the notification's own, the ones it ignores, an unknown
 * one, a key that is not a string) and a value of any type, where lines and
 * incidents are arrays of maps built the same way; strings take their bytes
 * from the input (invalid UTF-8 and NUL included). The top value is a map
 * unless the first byte says otherwise.
 *
 * Properties:
 *   - the reader either refuses, with an invalid_params message that names
 *     the notification ("notification: ..."), or returns a notification of
 *     a type a policy is given, whose lines are valid UTF-8 and whose
 *     incidents each cover at least one of its lines, within them;
 *   - a returned notification renders (the built-in envelope) into valid
 *     UTF-8;
 *   - notification_map_time reads back what textfmt_time writes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "render/envelope.h"
#include "policy/notification_map.h"
#include "base/strbuf.h"
#include "base/textfmt.h"
#include "utf8check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
  const uint8_t *p;
  size_t left;
  msgpack_packer pk;
} Prog;

static unsigned
fuzz_byte(Prog *g)
{
  if (g->left == 0)
    return 0;
  g->left--;
  return *g->p++;
}

static const char *const fuzz_keys[] = {
  "type", "monitor_id", "label", "mode", "batch", "lines", "suppressed", "incidents",
  "incidents_withheld", "incidents_coalesced", "incidents_dropped", "state", "exit_code",
  "signal", "duration_ms", "reason", "exceeded", "at", "style", "session", "seq", "text",
  "seq", "stream", "pattern", "truncated", "id", "kind", "fingerprint", "pattern_name",
  "first_seq", "last_seq", "repeats", "repeat_span_ms", "last_repeat_at", "truncated_lines",
  "summary", "colour",
};
static const char *const fuzz_words[] = {
  "output", "exit", "overload", "dropped", "policy_error", "stdout", "stderr", "crash",
  "message", "idle", "live_safe", "compact", "readable", "SIGTERM", "SIGNOPE", "exited",
  "memory_limit", "python-traceback", "mon_example00001", "0123456789abcdef",
  "2026-11-21T06:41:42.980+00:00", "2026-13-01T00:00:00Z", "",
};
#define FUZZ_NKEYS (sizeof fuzz_keys / sizeof *fuzz_keys)
#define FUZZ_NWORDS (sizeof fuzz_words / sizeof *fuzz_words)

static void fuzz_value(Prog *g, int depth);

static void
fuzz_map(Prog *g, int depth)
{
  unsigned n = fuzz_byte(g) % 8;
  msgpack_pack_map(&g->pk, n);
  for (unsigned i = 0; i < n; i++) {
    unsigned k = fuzz_byte(g);
    if (k == 255) {
      msgpack_pack_int(&g->pk, 7);
    } else {
      const char *key = fuzz_keys[k % FUZZ_NKEYS];
      msgpack_pack_str(&g->pk, strlen(key));
      msgpack_pack_str_body(&g->pk, key, strlen(key));
    }
    fuzz_value(g, depth + 1);
  }
}

static void
fuzz_value(Prog *g, int depth)
{
  unsigned t = fuzz_byte(g) % 10;
  if (depth > 4 && (t == 8 || t == 9))
    t = 0;
  switch (t) {
  case 0:
    msgpack_pack_nil(&g->pk);
    break;
  case 1:
    if (fuzz_byte(g) & 1)
      msgpack_pack_true(&g->pk);
    else
      msgpack_pack_false(&g->pk);
    break;
  case 2:
    msgpack_pack_uint64(&g->pk, fuzz_byte(g) | (uint64_t)fuzz_byte(g) << 8);
    break;
  case 3:
    msgpack_pack_int64(&g->pk, -(int64_t)fuzz_byte(g));
    break;
  case 4:
    msgpack_pack_double(&g->pk, fuzz_byte(g) / (double)(1 + fuzz_byte(g)));
    break;
  case 5:
  case 6: {
    const char *w = fuzz_words[fuzz_byte(g) % FUZZ_NWORDS];
    msgpack_pack_str(&g->pk, strlen(w));
    msgpack_pack_str_body(&g->pk, w, strlen(w));
    break;
  }
  case 7: {
    size_t len = fuzz_byte(g) % 40;
    if (len > g->left)
      len = g->left;
    msgpack_pack_str(&g->pk, len);
    msgpack_pack_str_body(&g->pk, g->p, len);
    g->p += len;
    g->left -= len;
    break;
  }
  case 8: {
    unsigned n = fuzz_byte(g) % 6;
    msgpack_pack_array(&g->pk, n);
    for (unsigned i = 0; i < n; i++)
      fuzz_map(g, depth + 1);
    break;
  }
  default:
    fuzz_map(g, depth);
  }
}

static void
fuzz_check(const Notification *n)
{
  if (n->type == kNotifDropped || n->type == kNotifPolicyError)
    abort();
  for (size_t i = 0; i < n->nlines; i++)
    if (!test_utf8_valid(n->lines[i].text, n->lines[i].len))
      abort();
  for (size_t i = 0; i < n->nincidents; i++) {
    const NoteIncident *inc = &n->incidents[i];
    if (inc->nlines == 0 || inc->first_line + inc->nlines > n->nlines)
      abort();
  }
  StrBuf text = STRBUF_INIT;
  envelope_render(n, &text);
  if (!test_utf8_valid(text.data, text.len))
    abort();
  strbuf_free(&text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  Prog g = {data + 1, size - 1, {0}};
  msgpack_packer_init(&g.pk, &sb, msgpack_sbuffer_write);
  if (data[0] % 8 == 0)
    fuzz_value(&g, 0);
  else
    fuzz_map(&g, 0);

  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0;
  if (msgpack_unpack_next(&u, sb.data, sb.size, &off) != MSGPACK_UNPACK_SUCCESS)
    abort();
  VigilError err = VIGIL_ERROR_INIT;
  Notification *n = notification_map_read(&u.data, &err);
  if (n == NULL) {
    if (strncmp(err.msg, "invalid_params: notification: ", 30) != 0)
      abort();
  } else {
    fuzz_check(n);
    notification_free(n);
  }
  msgpack_unpacked_destroy(&u);
  msgpack_sbuffer_destroy(&sb);

  /* The time reader against the writer. */
  int64_t ms = 0, back = -1;
  for (size_t i = 0; i < 6 && i < size; i++)
    ms = ms << 8 | data[i];
  ms %= INT64_C(253402300799000); /* through 9999-12-31 */
  if (ms > 0) {
    StrBuf t = STRBUF_INIT;
    textfmt_time(&t, ms);
    if (notification_map_time(t.data, t.len, &back) != 0 || back != ms)
      abort();
    strbuf_free(&t);
  }
  return 0;
}
