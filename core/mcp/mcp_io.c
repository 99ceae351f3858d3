/*
 * Line-delimited JSON on stdio for the MCP server (see mcp_io.h).
 */
#include "mcp/mcp_io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void
mcp_reader_init(McpReader *r, int fd)
{
  memset(r, 0, sizeof *r);
  r->fd = fd;
  r->line_max = MCP_LINE_MAX;
  r->buf = (StrBuf)STRBUF_INIT;
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0)
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void
mcp_reader_free(McpReader *r)
{
  strbuf_free(&r->buf);
}

/* Takes the consumed n bytes (a line and its newline) off the buffer's
 * front. */
static void
mcp_reader_consume(McpReader *r, size_t n)
{
  memmove(r->buf.data, r->buf.data + n, r->buf.len - n);
  r->buf.len -= n;
  r->buf.data[r->buf.len] = '\0';
}

/* Reads once into the buffer; returns false when nothing more can come now. */
static bool
mcp_reader_fill(McpReader *r)
{
  if (r->eof)
    return false;
  char chunk[65536];
  ssize_t n = read(r->fd, chunk, sizeof chunk);
  if (n > 0) {
    strbuf_append(&r->buf, chunk, (size_t)n);
    return true;
  }
  if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
    r->eof = true;
  return false;
}

McpRead
mcp_reader_next(McpReader *r, const char **line, size_t *len)
{
  if (r->taken) {
    mcp_reader_consume(r, r->taken);
    r->taken = 0;
  }
  for (;;) {
    char *nl = r->buf.len ? memchr(r->buf.data, '\n', r->buf.len) : NULL;
    if (nl && r->skipping) {
      /* The end of an over-long line: drop it, report it once. */
      mcp_reader_consume(r, (size_t)(nl - r->buf.data) + 1);
      r->skipping = false;
      r->lines_too_long++;
      return kMcpTooLong;
    }
    if (nl && (size_t)(nl - r->buf.data) > r->line_max) {
      /* A whole line arrived, but over the bound: the same as skipping it. */
      mcp_reader_consume(r, (size_t)(nl - r->buf.data) + 1);
      r->lines_too_long++;
      return kMcpTooLong;
    }
    if (nl) {
      size_t n = (size_t)(nl - r->buf.data);
      *line = r->buf.data;
      *len = n > 0 && r->buf.data[n - 1] == '\r' ? n - 1 : n;
      r->taken = n + 1;
      return kMcpLine;
    }
    if (r->buf.len > r->line_max) {
      /* No newline within the bound: keep nothing of this line. */
      r->buf.len = 0;
      r->buf.data[0] = '\0';
      r->skipping = true;
    }
    if (!mcp_reader_fill(r)) {
      if (!r->eof)
        return kMcpNone;
      if (r->buf.len == 0 || r->skipping)
        return kMcpEof;
      /* A last line without a newline. */
      *line = r->buf.data;
      *len = r->buf.len;
      r->taken = r->buf.len;
      return kMcpLine;
    }
  }
}

static McpSink mcp_sink;
static void *mcp_sink_ctx;

void
mcp_io_set_sink(McpSink fn, void *ctx)
{
  mcp_sink = fn;
  mcp_sink_ctx = ctx;
}

/* Held while a line is written: calls answer from threads of their own and
 * the link's thread pushes notifications (mcp_calls.h, mcp_engine.h), and
 * a line is never interleaved with another. */
static pthread_mutex_t mcp_write_mu = PTHREAD_MUTEX_INITIALIZER;

int
mcp_write(json_t *msg)
{
  char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
  if (text == NULL)
    return -1;
  pthread_mutex_lock(&mcp_write_mu);
  if (mcp_sink) {
    mcp_sink(mcp_sink_ctx, text, strlen(text));
  } else {
    fputs(text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
  }
  pthread_mutex_unlock(&mcp_write_mu);
  free(text);
  return 0;
}
