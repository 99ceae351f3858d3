/*
 * libFuzzer harness for `vigil mcp`'s JSON-RPC input: the line reader
 * (mcp_io.c: framing, CR, the length bound) and each line's parse, checks
 * and dispatch (mcp_rpc.c), through the tools' argument checks and their
 * functions, with an engine link that has no engine (every engine call fails
 * at once as "unavailable"), exactly as the adapter runs them.
 *
 * Input: a flags byte (bit 0: an initialize line first, so most inputs get
 * past the lifecycle; bits 1-2: the delivery mode; bit 3: --tool-names
 * underscore; bits 4-6: the reader's line bound, 16 << n bytes, or
 * MCP_LINE_MAX for n = 0), then the bytes of stdin.
 *
 * Properties, beyond "no crash, no leak, no UB":
 * - the reader hands out exactly the lines a plain split on "\n" gives (one
 *   trailing "\r" dropped), and one over-long event per terminated line over
 *   the bound (a last unterminated one over it is dropped at EOF);
 * - every line gets at most one reply, and every reply is one line of valid
 *   UTF-8 JSON: an object with "jsonrpc": "2.0", exactly one of result and
 *   error (an error with an integer code and a string message), and an id
 *   that is the request's (a string or a number) or null;
 * - a well-formed request (an object with jsonrpc "2.0", a string method,
 *   a string or number id, params absent or an object) gets exactly one
 *   reply, with its id; a well-formed notification (the same without id)
 *   gets none; a line that is not a message at all (not JSON, not an object,
 *   a bad id) gets exactly one error with id null;
 * - an over-long line gets exactly one -32600 with id null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mcp/mcp_calls.h"
#include "mcp/mcp_engine.h"
#include "mcp/mcp_io.h"
#include "mcp/mcp_rpc.h"
#include "mcp/mcp_tools.h"
#include "utf8check.h"

/* The replies to the line being handled. */
typedef struct {
  char *lines[8];
  size_t n;
} Replies;

static void
fuzz_sink(void *ctx, const char *line, size_t len)
{
  Replies *r = ctx;
  if (r->n == sizeof r->lines / sizeof r->lines[0])
    abort(); /* far more replies than any line may get */
  r->lines[r->n] = malloc(len + 1);
  memcpy(r->lines[r->n], line, len);
  r->lines[r->n][len] = '\0';
  r->n++;
}

static void
fuzz_replies_clear(Replies *r)
{
  for (size_t i = 0; i < r->n; i++)
    free(r->lines[i]);
  r->n = 0;
}

/* What a line is, judged here independently of mcp_rpc.c. */
typedef enum {
  kFuzzEmpty,        /* no reply */
  kFuzzNotification, /* a well-formed notification: no reply */
  kFuzzRequest,      /* a well-formed request: one reply with its id */
  kFuzzNotMessage,   /* not JSON, not an object, a bad id: one error, id null */
  kFuzzOther,        /* anything else: at most one reply */
} FuzzKind;

static FuzzKind
fuzz_classify(const char *line, size_t len, json_t **id_out)
{
  *id_out = NULL;
  if (len == 0)
    return kFuzzEmpty;
  json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
  if (msg == NULL || !json_is_object(msg)) {
    json_decref(msg);
    return kFuzzNotMessage;
  }
  json_t *id = json_object_get(msg, "id");
  json_t *method = json_object_get(msg, "method");
  json_t *params = json_object_get(msg, "params");
  const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
  FuzzKind kind = kFuzzOther;
  if (id != NULL && !json_is_string(id) && !json_is_number(id)) {
    kind = kFuzzNotMessage;
  } else if (version && strcmp(version, "2.0") == 0 && json_is_string(method) &&
             (params == NULL || json_is_object(params))) {
    kind = id ? kFuzzRequest : kFuzzNotification;
    if (id)
      *id_out = json_incref(id);
  }
  json_decref(msg);
  return kind;
}

/* One reply: valid UTF-8, one line, a JSON-RPC 2.0 response. Returns its id
 * (a new reference; JSON null included). */
static json_t *
fuzz_check_reply(const char *text)
{
  size_t len = strlen(text);
  if (!test_utf8_valid(text, len) || memchr(text, '\n', len) != NULL)
    abort();
  json_t *r = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(r))
    abort();
  const char *version = json_string_value(json_object_get(r, "jsonrpc"));
  json_t *id = json_object_get(r, "id");
  json_t *result = json_object_get(r, "result");
  json_t *error = json_object_get(r, "error");
  if (version == NULL || strcmp(version, "2.0") != 0 || id == NULL || json_object_get(r, "method"))
    abort();
  if ((result == NULL) == (error == NULL))
    abort();
  if (!json_is_null(id) && !json_is_string(id) && !json_is_number(id))
    abort();
  if (error && (!json_is_integer(json_object_get(error, "code")) ||
                !json_is_string(json_object_get(error, "message"))))
    abort();
  json_incref(id);
  json_decref(r);
  return id;
}

/* Handles one line as the adapter does and checks what came back. */
static void
fuzz_line(McpServer *s, Replies *rep, const char *line, size_t len)
{
  json_t *id = NULL;
  FuzzKind kind = fuzz_classify(line, len, &id);
  mcp_rpc_line(s, line, len);
  mcp_calls_wait_idle(); /* a tools/call answers from a thread of its own */
  if (rep->n > 1)
    abort();
  if ((kind == kFuzzEmpty || kind == kFuzzNotification) && rep->n != 0)
    abort();
  if ((kind == kFuzzRequest || kind == kFuzzNotMessage) && rep->n != 1)
    abort();
  if (rep->n == 1) {
    json_t *got = fuzz_check_reply(rep->lines[0]);
    if (kind == kFuzzNotMessage && !json_is_null(got))
      abort();
    if (kind == kFuzzRequest && !json_equal(got, id))
      abort();
    json_decref(got);
  }
  json_decref(id);
  fuzz_replies_clear(rep);
}

/* The server as `vigil mcp` sets it up, with no engine behind its link. */
static void
fuzz_server(McpServer *s, uint8_t flags)
{
  memset(s, 0, sizeof *s);
  s->delivery = (McpDelivery)((flags >> 1) % 3);
  s->underscore = (flags >> 3) & 1;
  s->profiles = kMcpProfileVigil | kMcpProfileWatchProcess | kMcpProfileProcess |
                kMcpProfileMonitor | kMcpProfileHermes;
  char clash[256];
  if (mcp_tools_name_clash(s, clash, sizeof clash) != 0)
    s->profiles &= ~(unsigned)kMcpProfileProcess;
  s->log_level = 1;
  snprintf(s->cwd, sizeof s->cwd, "/nonexistent-vigil-fuzz");
  snprintf(s->engine.cli.socket_path, sizeof s->engine.cli.socket_path,
           "/nonexistent-vigil-fuzz/vigil.sock");
  snprintf(s->engine.cli.session, sizeof s->engine.cli.session, "fuzz");
  mcp_engine_init(&s->engine, false, NULL);
  s->engine.reconnect_wait_ms = 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  uint8_t flags = data[0];
  data++;
  size--;
  static McpServer s;
  fuzz_server(&s, flags);
  Replies rep = {{NULL}, 0};
  mcp_io_set_sink(fuzz_sink, &rep);
  if (flags & 1)
    fuzz_line(&s, &rep,
              "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
              "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":"
              "{\"name\":\"fuzz\",\"version\":\"1\"}}}",
              strlen("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                     "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":"
                     "{\"name\":\"fuzz\",\"version\":\"1\"}}}"));

  int fd = memfd_create("fuzz_mcp_input", MFD_CLOEXEC);
  if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size) || lseek(fd, 0, SEEK_SET) != 0)
    abort();
  McpReader in;
  mcp_reader_init(&in, fd);
  if ((flags >> 4) & 7)
    in.line_max = (size_t)16 << ((flags >> 4) & 7);

  /* The model of the framing: where the next line starts in data. */
  size_t at = 0;
  for (;;) {
    const char *line;
    size_t len;
    McpRead r = mcp_reader_next(&in, &line, &len);
    if (r == kMcpNone)
      abort(); /* a file never makes the reader wait */
    const uint8_t *nl = at < size ? memchr(data + at, '\n', size - at) : NULL;
    size_t end = nl ? (size_t)(nl - data) : size;
    size_t want = end - at;
    if (r == kMcpEof) {
      /* Nothing left, or only an unterminated line over the bound. */
      if (nl != NULL || (want != 0 && want <= in.line_max))
        abort();
      break;
    }
    if (r == kMcpTooLong) {
      if (nl == NULL || want <= in.line_max)
        abort();
      mcp_rpc_too_long(in.line_max);
      if (rep.n != 1)
        abort();
      json_t *id = fuzz_check_reply(rep.lines[0]);
      if (!json_is_null(id))
        abort();
      json_decref(id);
      fuzz_replies_clear(&rep);
    } else {
      if (want > in.line_max)
        abort();
      size_t model = nl && want > 0 && data[end - 1] == '\r' ? want - 1 : want;
      if (len != model || memcmp(line, data + at, len) != 0)
        abort();
      fuzz_line(&s, &rep, line, len);
    }
    at = nl ? end + 1 : size;
  }
  mcp_reader_free(&in);
  close(fd);
  mcp_io_set_sink(NULL, NULL);
  mcp_engine_close(&s.engine);
  return 0;
}
