/*
 * A hook's input, read and checked (see hook_input.h).
 */
#include "cli/hook_input.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_conn.h"
#include "base/strbuf.h"
#include "base/utf8.h"

/* How much of a refused value a message quotes. */
#define HOOK_QUOTE_MAX 64

/* Sets err and returns -1. */
static int hook_input_fail(char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
hook_input_fail(char *err, size_t cap, const char *fmt, ...)
{
  /* Whole first (every part of a message is bounded well below this),
   * made valid UTF-8, then cut to cap at a character boundary. */
  char full[2048];
  int n = snprintf(full, sizeof full, "hook input: ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(full + n, sizeof full - (size_t)n, fmt, ap);
  va_end(ap);
  if (cap == 0)
    return -1;
  /* jansson's own message may quote the bad bytes as they were. */
  StrBuf text = STRBUF_INIT;
  if (utf8_valid(full, strlen(full)))
    strbuf_puts(&text, full);
  else
    utf8_escape_invalid(&text, full, strlen(full));
  size_t len = utf8_cut(strbuf_cstr(&text), text.len, cap - 1);
  memcpy(err, strbuf_cstr(&text), len);
  err[len] = '\0';
  strbuf_free(&text);
  return -1;
}

/* v in words for a message: a string quoted (JSON-escaped, cut to
 * HOOK_QUOTE_MAX bytes at a character boundary), anything else its type. */
static void
hook_input_describe(const json_t *v, char *out, size_t cap)
{
  const char *type = json_is_object(v)    ? "an object"
                     : json_is_array(v)   ? "an array"
                     : json_is_number(v)  ? "a number"
                     : json_is_boolean(v) ? "a boolean"
                     : json_is_null(v)    ? "null"
                                          : NULL;
  if (type != NULL) {
    snprintf(out, cap, "%s", type);
    return;
  }
  const char *s = json_string_value(v);
  size_t len = json_string_length(v);
  size_t cut = utf8_cut(s, len, HOOK_QUOTE_MAX);
  json_t *shown = json_stringn_nocheck(s, cut);
  char *text = json_dumps(shown, JSON_ENCODE_ANY);
  snprintf(out, cap, "%s%s", text ? text : "\"?\"", cut < len ? " (cut)" : "");
  free(text);
  json_decref(shown);
}

/* Whether s[0..len) is 1..max characters of [A-Za-z0-9] and extra. */
static bool
hook_input_word(const char *s, size_t len, size_t max, const char *extra)
{
  if (len == 0 || len > max)
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              (c != '\0' && strchr(extra, c) != NULL);
    if (!ok)
      return false;
  }
  return true;
}

/* Whether s[0..len) has no C0 control character or DEL. */
static bool
hook_input_no_controls(const char *s, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return false;
  return true;
}

/* The kinds of string field. */
typedef enum {
  kHookId,       /* [A-Za-z0-9._:-], 1..HOOK_ID_MAX */
  kHookName,     /* [A-Za-z0-9_], 1..HOOK_NAME_MAX */
  kHookEvent,    /* [A-Za-z0-9_.], 1..HOOK_NAME_MAX (OpenCode's are dotted) */
  kHookPath,     /* absolute, < HOOK_PATH_MAX, no control character */
  kHookToolName, /* 1..HOOK_TOOL_NAME_MAX bytes, no control character */
  kHookText,     /* at most HOOK_PROMPT_MAX bytes */
} HookKind;

/* The rule of a kind, for messages. */
static const char *
hook_input_rule(HookKind kind)
{
  switch (kind) {
  case kHookId: return "1..128 characters of [A-Za-z0-9._:-]";
  case kHookName: return "1..64 characters of [A-Za-z0-9_]";
  case kHookEvent: return "1..64 characters of [A-Za-z0-9_.]";
  case kHookPath: return "an absolute path of at most 4095 bytes without control characters";
  case kHookToolName: return "1..256 bytes of text without control characters";
  case kHookText: return "a string of at most 1048576 bytes";
  }
  return "?";
}

/* Checks a string value of a kind. */
static bool
hook_input_fits(const json_t *v, HookKind kind)
{
  if (!json_is_string(v))
    return false;
  const char *s = json_string_value(v);
  size_t len = json_string_length(v);
  switch (kind) {
  case kHookId: return hook_input_word(s, len, HOOK_ID_MAX, "._:-");
  case kHookName: return hook_input_word(s, len, HOOK_NAME_MAX, "_");
  case kHookEvent: return hook_input_word(s, len, HOOK_NAME_MAX, "_.");
  case kHookPath:
    return len > 0 && s[0] == '/' && len < HOOK_PATH_MAX && hook_input_no_controls(s, len);
  case kHookToolName:
    return len > 0 && len <= HOOK_TOOL_NAME_MAX && hook_input_no_controls(s, len);
  case kHookText: return len <= HOOK_PROMPT_MAX;
  }
  return false;
}

/* The field key of root as a checked string of a kind: *out is set (NULL
 * when absent; a present one must fit). name is the field's name in
 * messages (an alias's differs from key). */
static int
hook_input_field(json_t *root, const char *key, const char *name, HookKind kind,
                 const char **out, char *err, size_t cap)
{
  json_t *v = json_object_get(root, key);
  if (v == NULL)
    return 0;
  if (!hook_input_fits(v, kind)) {
    char got[HOOK_QUOTE_MAX * 6 + 16];
    hook_input_describe(v, got, sizeof got);
    return hook_input_fail(err, cap, "%s must be %s, got %s", name, hook_input_rule(kind), got);
  }
  *out = json_string_value(v);
  return 0;
}

/* Every field of root into in (see hook_input.h). */
static int
hook_input_fields(json_t *root, HookInput *in, char *err, size_t cap)
{
  if (hook_input_field(root, "session_id", "session_id", kHookId, &in->session_id, err, cap) ||
      (in->session_id == NULL &&
       hook_input_field(root, "conversation_id", "conversation_id", kHookId, &in->session_id,
                        err, cap)) ||
      hook_input_field(root, "hook_event_name", "hook_event_name", kHookEvent, &in->event, err,
                       cap) ||
      hook_input_field(root, "cwd", "cwd", kHookPath, &in->cwd, err, cap) ||
      hook_input_field(root, "transcript_path", "transcript_path", kHookPath,
                       &in->transcript_path, err, cap) ||
      hook_input_field(root, "tool_name", "tool_name", kHookToolName, &in->tool_name, err, cap) ||
      hook_input_field(root, "prompt", "prompt", kHookText, &in->prompt, err, cap) ||
      hook_input_field(root, "source", "source", kHookName, &in->source, err, cap) ||
      hook_input_field(root, "status", "status", kHookName, &in->status, err, cap) ||
      hook_input_field(root, "cursor_version", "cursor_version", kHookToolName,
                       &in->cursor_version, err, cap))
    return -1;
  if (in->session_id == NULL)
    return hook_input_fail(err, cap, "session_id is missing (Cursor: conversation_id)");
  if (in->event == NULL)
    return hook_input_fail(err, cap, "hook_event_name is missing");
  /* Cursor names its project by workspace_roots, a list of paths. */
  json_t *roots = json_object_get(root, "workspace_roots");
  if (roots != NULL) {
    char got[HOOK_QUOTE_MAX * 6 + 16];
    if (!json_is_array(roots)) {
      hook_input_describe(roots, got, sizeof got);
      return hook_input_fail(err, cap, "workspace_roots must be an array of paths, got %s", got);
    }
    json_t *first = json_array_get(roots, 0);
    if (first != NULL && !hook_input_fits(first, kHookPath)) {
      hook_input_describe(first, got, sizeof got);
      return hook_input_fail(err, cap, "workspace_roots[0] must be %s, got %s",
                             hook_input_rule(kHookPath), got);
    }
    if (in->cwd == NULL && first != NULL)
      in->cwd = json_string_value(first);
  }
  json_t *tool_input = json_object_get(root, "tool_input");
  if (tool_input != NULL && !json_is_object(tool_input) && !json_is_string(tool_input)) {
    char got[HOOK_QUOTE_MAX * 6 + 16];
    hook_input_describe(tool_input, got, sizeof got);
    return hook_input_fail(err, cap, "tool_input must be an object (or its JSON text), got %s",
                           got);
  }
  in->tool_input = tool_input;
  json_t *active = json_object_get(root, "stop_hook_active");
  if (active != NULL && !json_is_boolean(active)) {
    char got[HOOK_QUOTE_MAX * 6 + 16];
    hook_input_describe(active, got, sizeof got);
    return hook_input_fail(err, cap, "stop_hook_active must be a boolean, got %s", got);
  }
  in->stop_hook_active = active == NULL ? -1 : json_is_true(active);
  return 0;
}

int
hook_input_parse(const char *data, size_t len, HookInput *in, char *err, size_t cap)
{
  memset(in, 0, sizeof *in);
  in->stop_hook_active = -1;
  json_error_t e;
  json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &e);
  if (root == NULL)
    return hook_input_fail(err, cap, "not JSON: %s (line %d, column %d)", e.text, e.line,
                           e.column);
  if (!json_is_object(root)) {
    json_decref(root);
    return hook_input_fail(err, cap, "must be one JSON object, got an array");
  }
  if (hook_input_fields(root, in, err, cap) != 0) {
    json_decref(root);
    memset(in, 0, sizeof *in);
    in->stop_hook_active = -1;
    return -1;
  }
  in->root = root;
  in->bytes = len;
  return 0;
}

int
hook_input_read(int fd, size_t max, int64_t timeout_ms, HookInput *in, char *err, size_t cap)
{
  memset(in, 0, sizeof *in);
  in->stop_hook_active = -1;
  if (fd < 0)
    return hook_input_fail(err, cap, "no stdin to read (descriptor %d)", fd);
  StrBuf buf = STRBUF_INIT;
  int64_t deadline = cli_now_ms() + timeout_ms;
  int rc = 0;
  for (;;) {
    int64_t left = deadline - cli_now_ms();
    if (left <= 0) {
      rc = hook_input_fail(err, cap, "stdin did not end within %lld ms (%zu bytes read)",
                           (long long)timeout_ms, buf.len);
      break;
    }
    struct pollfd p = {fd, POLLIN, 0};
    int ready = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready < 0) {
      rc = hook_input_fail(err, cap, "cannot wait for stdin: %s", strerror(errno));
      break;
    }
    if (ready == 0)
      continue;
    char chunk[65536];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n < 0) {
      rc = hook_input_fail(err, cap, "cannot read stdin: %s", strerror(errno));
      break;
    }
    if (n == 0)
      break;
    if (buf.len + (size_t)n > max) {
      rc = hook_input_fail(err, cap, "more than %zu bytes on stdin (the bound on a hook's "
                                     "input); refused after %zu",
                           max, buf.len + (size_t)n);
      break;
    }
    strbuf_append(&buf, chunk, (size_t)n);
  }
  if (rc == 0 && buf.len == 0)
    rc = hook_input_fail(err, cap, "stdin was empty: a hook's input is one JSON object");
  if (rc == 0)
    rc = hook_input_parse(buf.data, buf.len, in, err, cap);
  strbuf_free(&buf);
  return rc;
}

void
hook_input_free(HookInput *in)
{
  json_decref(in->root);
  memset(in, 0, sizeof *in);
  in->stop_hook_active = -1;
}
