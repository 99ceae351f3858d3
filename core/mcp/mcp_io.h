/*
 * The MCP server's stdio (docs/mcp.md): JSON-RPC 2.0 messages, one JSON
 * object per line, in on stdin and out on stdout; logs go to stderr only.
 * The reader is non-blocking and bounded: a line over MCP_LINE_MAX bytes is
 * discarded up to its newline and reported once (the server answers it
 * with -32600), so a flood of input cannot grow memory. Everything written
 * is one line of compact JSON built by jansson, on stdout unless a sink was
 * set (the fuzz harness collects the replies that way).
 */
#ifndef VIGIL_MCP_IO_H
#define VIGIL_MCP_IO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/strbuf.h"

/* The longest line accepted (docs/mcp.md: 1 MiB). */
#define MCP_LINE_MAX (1u << 20)

typedef struct {
  int fd;
  size_t line_max;     /* MCP_LINE_MAX (a test may set less after init) */
  StrBuf buf;          /* bytes read, not yet a whole line */
  size_t taken;        /* the line handed out last, consumed on the next call */
  bool skipping;       /* discarding an over-long line up to its newline */
  bool eof;
  unsigned long long lines_too_long; /* counted, each answered -32600 */
} McpReader;

void mcp_reader_init(McpReader *r, int fd);
void mcp_reader_free(McpReader *r);

/* What mcp_reader_next found. */
typedef enum {
  kMcpLine = 0,        /* *line holds one line (without its newline) */
  kMcpTooLong,         /* a line over MCP_LINE_MAX was discarded */
  kMcpNone,            /* nothing whole yet: read more */
  kMcpEof,             /* stdin closed and nothing is left */
} McpRead;

/* Reads what is there (never blocks) and returns the next line or event.
 * The line is valid until the next call. */
McpRead mcp_reader_next(McpReader *r, const char **line, size_t *len);

/* Writes msg as one line on stdout and flushes (blocking: the harness reads
 * it), or hands the line to the sink. Takes no reference. Returns 0, or -1
 * when msg is NULL or cannot be encoded (a string in it that is not UTF-8):
 * then nothing is written. */
int mcp_write(json_t *msg);

/* Where mcp_write's lines go instead of stdout: fn gets each line (without
 * its newline); NULL: stdout again. */
typedef void (*McpSink)(void *ctx, const char *line, size_t len);
void mcp_io_set_sink(McpSink fn, void *ctx);

#endif
