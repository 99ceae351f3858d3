/*
 * The engine's log (see log.h).
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "strbuf.h"
#include "textfmt.h"

static int log_min = -1; /* -1: not yet read from VIGIL_LOG */
static uint64_t log_written;
static uint64_t log_truncated;

static const char *const log_names[] = {"debug", "info", "warn", "error"};

void
log_set_level(LogLevel level)
{
  log_min = (int)level;
}

LogLevel
log_level(void)
{
  if (log_min < 0) {
    log_min = kLogInfo;
    const char *env = getenv("VIGIL_LOG");
    for (int i = 0; env && i < 4; i++)
      if (strcasecmp(env, log_names[i]) == 0)
        log_min = i;
  }
  return (LogLevel)log_min;
}

void
log_msg(LogLevel level, const char *module, const char *fmt, ...)
{
  if ((int)level < (int)log_level())
    return;
  char text[LOG_LINE_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  size_t len = (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
  if ((size_t)n >= sizeof text)
    log_truncated++;
  StrBuf line = STRBUF_INIT;
  textfmt_time(&line, textfmt_now_ms());
  strbuf_printf(&line, " vigild %s %s: ", log_names[level], module);
  textfmt_escape(&line, text, len);
  strbuf_putc(&line, '\n');
  /* One write per line, so lines from one process never interleave. */
  ssize_t w = write(2, line.data, line.len);
  (void)w;
  strbuf_free(&line);
  log_written++;
}

uint64_t
log_lines_written(void)
{
  return log_written;
}

uint64_t
log_lines_truncated(void)
{
  return log_truncated;
}
