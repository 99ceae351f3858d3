/*
 * The batch window of one monitor. A batch opens at its first line and is
 * due flush_interval_ms later; it closes sooner when it reaches
 * batch_max_lines or batch_max_bytes, or when the process ends. Lines that
 * arrive later never postpone an open batch (unlike a trailing debounce).
 *
 * This module keeps time as numbers handed in by the caller (milliseconds of
 * a monotonic clock), so its rules are tested with a fake clock; the monitor
 * owns the timer. Storage is allocated at the first line and reused.
 */
#ifndef VIGIL_BATCH_H
#define VIGIL_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t seq;
  int stream;
  int pattern;
  unsigned flags;     /* kLine*; kLineTruncated added when cut to fit */
  size_t off;         /* start in the batch's text arena */
  size_t len;
} BatchLine;

typedef struct {
  size_t max_lines;   /* monitor.batch_max_lines */
  size_t max_bytes;   /* monitor.batch_max_bytes */
  uint64_t interval;  /* monitor.flush_interval_ms */
  BatchLine *lines;   /* max_lines slots, lazily allocated */
  char *text;         /* max_bytes, lazily allocated */
  size_t count;
  size_t bytes;
  uint64_t opened_at; /* when the first line arrived; valid when count > 0 */
  uint64_t number;    /* batches taken so far; the next one is number + 1 */
} Batch;

void batch_init(Batch *b, size_t max_lines, size_t max_bytes, uint64_t interval_ms);

/* Whether a line of len bytes fits in the open batch. A batch always takes
 * at least one line: an empty batch accepts any line, cutting it to
 * max_bytes (and marking it truncated) if it is longer. */
bool batch_fits(const Batch *b, size_t len);

/* Adds a line at time now (opening the batch if empty). The caller checks
 * batch_fits first and flushes when it says no. Returns true when the batch
 * is now full (max_lines reached, or max_bytes reached exactly) and should
 * be flushed at once. */
bool batch_add(Batch *b, uint64_t now, uint64_t seq, int stream, int pattern, unsigned flags,
               const char *text, size_t len);

bool batch_empty(const Batch *b);

/* When the open batch is due (opened_at + interval). Only for a non-empty batch. */
uint64_t batch_deadline(const Batch *b);

/* Whether the open batch is due at now. */
bool batch_due(const Batch *b, uint64_t now);

/* Visits the open batch's lines in order (text not NUL-terminated). */
typedef void (*BatchVisit)(void *ctx, const BatchLine *line, const char *text);
void batch_each(const Batch *b, BatchVisit visit, void *ctx);

/* Closes the open batch: empties it and returns its number (1, 2, ...).
 * Call after batch_each has copied what is needed. */
uint64_t batch_take(Batch *b);

void batch_free(Batch *b);

#endif
