/*
 * The engine's log (see log.h): lines are formatted by the caller and handed
 * to a writer thread through a queue bounded in bytes.
 *
 * Why a thread: the loop thread must never wait for stderr, which may be a
 * pipe a parent never reads (vigild then stopped after 527 process_runs,
 * blocked in write(2)). Making fd 2 non-blocking would also change it for
 * whoever shares it (the parent's terminal or pipe), and would still lose
 * the lines a full pipe refuses; a thread that blocks in write(2) in the
 * loop's place leaves the descriptor alone.
 *
 * The queue is a list of whole lines under one mutex. log_msg appends when
 * the bytes queued (including the batch the writer is writing) stay within
 * the bound, else it drops the line and counts it. The writer takes the
 * whole list at once, writes it line by line without the lock, and gives
 * the bytes back. A "N log lines dropped" line goes at the tail of the queue
 * by whichever side first finds room for it after a drop: log_msg with room
 * for its own line after it, or the writer once it has written everything
 * queued (the whole bound is free then). Either way it lands exactly where
 * the gap is, since any line queued after the gap would have placed it
 * first, and it is followed by a line, not by a second notice: the writer
 * does not place it in a queue still filling, where the next line might
 * find no room and open another gap told by another notice right after.
 *
 * A forked child (between fork and exec the engine never logs, but a test
 * might) has no writer thread: it writes directly.
 */
#include "base/log.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <uv.h>

#include "base/clock.h"
#include "base/memory.h"
#include "base/strbuf.h"
#include "base/textfmt.h"

static int log_min = -1; /* -1: not yet read from VIGIL_LOG */

static const char *const log_names[] = {"debug", "info", "warn", "error"};

/* One queued line. */
typedef struct LogLine {
  struct LogLine *next;
  size_t len;
  char text[];
} LogLine;

/* The queue and the writer (file comment). Everything below log_mu is
 * guarded by it. */
static uv_once_t log_once = UV_ONCE_INIT;
static uv_mutex_t log_mu;
static uv_cond_t log_wake;      /* the writer waits here for lines */
static uv_cond_t log_idle;      /* log_flush waits here for an empty queue */
static uv_thread_t log_thread;
static bool log_threaded;       /* the writer runs (set once, before any use) */
static pid_t log_pid;           /* the process it runs in */
static LogLine *log_head, *log_tail;
static size_t log_queued;       /* bytes queued or being written, headers included */
static size_t log_max = LOG_BUFFER_DEFAULT;
static bool log_writing;        /* the writer holds a batch */
static uint64_t log_written;
static uint64_t log_truncated;
static uint64_t log_dropped;
static uint64_t log_dropped_pending; /* dropped since the last "dropped" line */
static void (*log_before_line)(size_t len); /* run before each line (logfile.h) */

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

/* Writes all of buf to fd 2, retrying after a signal or a short write.
 * Whether it all went (a closed or broken stderr loses the line). */
static bool
log_write_all(const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t w = write(2, buf, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    buf += w;
    len -= (size_t)w;
  }
  return true;
}

/* Formats a line (time, "vigild", level, module, escaped text, newline)
 * into out. */
static void
log_format(StrBuf *out, LogLevel level, const char *module, const char *text, size_t len)
{
  textfmt_time(out, clock_now_ms());
  strbuf_printf(out, " vigild %s %s: ", log_names[level], module);
  textfmt_escape(out, text, len);
  strbuf_putc(out, '\n');
}

/* Appends a copy of line to the queue. Locked. */
static void
log_append_locked(const char *line, size_t len)
{
  LogLine *l = xmalloc(sizeof *l + len);
  l->next = NULL;
  l->len = len;
  memcpy(l->text, line, len);
  if (log_tail)
    log_tail->next = l;
  else
    log_head = l;
  log_tail = l;
  log_queued += sizeof *l + len;
}

/* When lines were dropped and `room` more bytes than the notice still fit,
 * queues the line saying how many (file comment). Locked. */
static void
log_notice_locked(size_t room)
{
  if (log_dropped_pending == 0)
    return;
  char text[192];
  int n = snprintf(text, sizeof text,
                   "%llu log lines dropped: stderr was not read fast enough and the log "
                   "buffer (log.buffer_bytes = %zu) was full",
                   (unsigned long long)log_dropped_pending, log_max);
  StrBuf line = STRBUF_INIT;
  log_format(&line, kLogWarn, "log", text, n > 0 ? (size_t)n : 0);
  if (log_queued + sizeof(LogLine) + line.len + room <= log_max) {
    log_append_locked(line.data, line.len);
    log_dropped_pending = 0;
  }
  strbuf_free(&line);
}

/* The writer thread: waits for lines, writes them in order, one write(2)
 * each, and says when the queue is empty. */
static void
log_writer(void *arg)
{
  (void)arg;
  uv_mutex_lock(&log_mu);
  for (;;) {
    while (log_head == NULL) {
      log_writing = false;
      uv_cond_broadcast(&log_idle);
      uv_cond_wait(&log_wake, &log_mu);
    }
    LogLine *batch = log_head;
    log_head = log_tail = NULL;
    log_writing = true;
    uv_mutex_unlock(&log_mu);

    size_t bytes = 0;
    uint64_t lines = 0;
    for (LogLine *l = batch, *next; l; l = next) {
      next = l->next;
      if (log_before_line != NULL)
        log_before_line(l->len);
      lines += log_write_all(l->text, l->len);
      bytes += sizeof *l + l->len;
      free(l);
    }

    uv_mutex_lock(&log_mu);
    log_queued -= bytes;
    log_written += lines;
    if (log_head == NULL)
      log_notice_locked(0);
  }
}

/* Flushes at exit, in the process that started the writer only. */
static void
log_at_exit(void)
{
  if (getpid() == log_pid)
    log_flush(LOG_FLUSH_AT_EXIT_MS);
}

/* Starts the writer (once, on the first line). Signals are blocked in it,
 * so they keep going to the loop thread. Without a thread, lines are
 * written directly. */
static void
log_start(void)
{
  if (uv_mutex_init(&log_mu) != 0 || uv_cond_init(&log_wake) != 0 ||
      uv_cond_init(&log_idle) != 0)
    return;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  bool ok = uv_thread_create(&log_thread, log_writer, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!ok)
    return;
  log_pid = getpid();
  log_threaded = true;
  atexit(log_at_exit);
}

/* Whether lines go through the writer in this process. */
static bool
log_use_writer(void)
{
  uv_once(&log_once, log_start);
  return log_threaded && getpid() == log_pid;
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
  StrBuf line = STRBUF_INIT;
  log_format(&line, level, module, text, len);
  if (!log_use_writer()) {
    if ((size_t)n >= sizeof text)
      log_truncated++;
    if (log_before_line != NULL)
      log_before_line(line.len);
    log_written += log_write_all(line.data, line.len);
    strbuf_free(&line);
    return;
  }
  uv_mutex_lock(&log_mu);
  if ((size_t)n >= sizeof text)
    log_truncated++;
  log_notice_locked(sizeof(LogLine) + line.len);
  if (log_dropped_pending == 0 && log_queued + sizeof(LogLine) + line.len <= log_max) {
    log_append_locked(line.data, line.len);
    uv_cond_signal(&log_wake);
  } else {
    log_dropped++;
    log_dropped_pending++;
  }
  uv_mutex_unlock(&log_mu);
  strbuf_free(&line);
}

void
log_set_before_line(void (*fn)(size_t len))
{
  log_before_line = fn;
}

void
log_set_buffer_max(size_t bytes)
{
  if (!log_use_writer()) {
    log_max = bytes;
    return;
  }
  uv_mutex_lock(&log_mu);
  log_max = bytes;
  uv_mutex_unlock(&log_mu);
}

bool
log_flush(uint64_t max_ms)
{
  if (!log_use_writer())
    return true;
  uint64_t deadline = uv_hrtime() + max_ms * 1000000u;
  uv_mutex_lock(&log_mu);
  for (;;) {
    if (log_head == NULL && !log_writing)
      break;
    uint64_t now = uv_hrtime();
    if (now >= deadline)
      break;
    uv_cond_timedwait(&log_idle, &log_mu, deadline - now);
  }
  bool done = log_head == NULL && !log_writing;
  uv_mutex_unlock(&log_mu);
  return done;
}

/* A counter, read under the lock when the writer runs. */
static uint64_t
log_counter(const uint64_t *c)
{
  if (!log_use_writer())
    return *c;
  uv_mutex_lock(&log_mu);
  uint64_t v = *c;
  uv_mutex_unlock(&log_mu);
  return v;
}

uint64_t
log_lines_written(void)
{
  return log_counter(&log_written);
}

uint64_t
log_lines_truncated(void)
{
  return log_counter(&log_truncated);
}

uint64_t
log_lines_dropped(void)
{
  return log_counter(&log_dropped);
}
