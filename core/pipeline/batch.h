/*
 * The batch window of one monitor. A batch opens at its first line and is
 * due flush_interval_ms later; it closes sooner when it reaches
 * batch_max_lines or batch_max_bytes, or when the process ends. Lines that
 * arrive later never postpone an open batch (unlike a trailing debounce).
 *
 * This module keeps time as numbers handed in by the caller (milliseconds of
 * a monotonic clock), so its rules are tested with a fake clock; the monitor
 * owns the timer. Storage is allocated at the first line and reused, or
 * released when a batch that never grew is taken (batch_take).
 */
#ifndef VIGIL_BATCH_H
#define VIGIL_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipeline/notification.h"

typedef struct {
  uint64_t seq;
  int stream;
  int pattern;
  unsigned flags;     /* kLine*; kLineTruncated added when cut to fit */
  size_t off;         /* start in the batch's text arena */
  size_t len;
  int group;          /* the incident it belongs to (index in groups), or -1 */
} BatchLine;

typedef struct {
  size_t max_lines;   /* monitor.batch_max_lines */
  size_t max_bytes;   /* monitor.batch_max_bytes */
  uint64_t interval;  /* monitor.flush_interval_ms */
  size_t group_lines; /* incident.max_lines + 1: an incident never splits */
  size_t group_bytes; /* incident.max_bytes */
  BatchLine *lines;   /* grown as lines come, up to max_lines + group_lines */
  size_t lines_cap;
  char *text;         /* grown as text comes, up to max_bytes + group_bytes */
  size_t text_cap;
  NoteIncident *groups; /* the incidents of the open batch (first_line/nlines index lines) */
  size_t ngroups;
  size_t groups_cap;
  int open_group;     /* the group lines are being added to, or -1 */
  size_t count;
  size_t bytes;
  uint64_t opened_at; /* when the first line arrived; valid when count > 0 */
  uint64_t number;    /* batches taken so far; the next one is number + 1 */
} Batch;

void batch_init(Batch *b, size_t max_lines, size_t max_bytes, uint64_t interval_ms);

/* Room for incidents, which are kept whole: one of up to group_lines lines
 * and group_bytes bytes always fits an empty batch, even past max_lines or
 * max_bytes. Call before the first line. */
void batch_set_group_caps(Batch *b, size_t group_lines, size_t group_bytes);

/* Whether an incident of nlines lines and bytes text bytes fits the open
 * batch (always when it is empty). */
bool batch_fits_group(const Batch *b, size_t nlines, size_t bytes);

/* Starts an incident at now (opening the batch if empty): the lines added
 * until batch_end_group belong to it. info is copied; its first_line and
 * nlines are set here. */
void batch_begin_group(Batch *b, uint64_t now, const NoteIncident *info);

/* Ends the incident begun last. Returns true when the batch is now full. */
bool batch_end_group(Batch *b);

/* The incidents of the open batch. */
size_t batch_group_count(const Batch *b);
const NoteIncident *batch_group(const Batch *b, size_t i);

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

/* Numbers an output notification that holds no batch (a restart's,
 * monitor_restart.c), so that a monitor's output notifications keep one
 * sequence: returns the number batch_take would have given, and takes it. */
uint64_t batch_number_next(Batch *b);

/* Closes the open batch: empties it and returns its number (1, 2, ...).
 * Call after batch_each has copied what is needed. */
uint64_t batch_take(Batch *b);

void batch_free(Batch *b);

#endif
