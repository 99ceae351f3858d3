/*
 * A file followed as `tail -F` follows it, with no process (docs/sources.md):
 * the bytes appended to the file at a path, read in the loop.
 *
 * Judging: the path must be absolute; its real path must lie under one of
 * the workspace roots given (monitor.workspace_roots, resolved); it must be
 * a regular file (a directory, a FIFO, a device or a socket is refused
 * before it is opened: opening a FIFO or a device can block or act). It is
 * opened by that real path with O_NOFOLLOW, and the descriptor's own path
 * (/proc/self/fd/N) is checked again, so a symlink swapped in on the way
 * between the check and the open is refused. Every reopen (a rotation, the
 * file reappearing) is judged again from the path as given.
 *
 * Following: one inotify watch (uv_fs_event) on the path's directory tells
 * of writes, renames, creations and deletions there; on each, what the open
 * file holds past the offset is read, then the path is looked at again:
 *   - its size below the offset: truncated; reading starts again at 0
 *     (told through on_note);
 *   - another file at the path (rotation: mv + a new file): the old one is
 *     read to its end, then the new one is judged, opened and read from 0;
 *   - nothing at the path (deleted): told once through on_note; the file
 *     is followed again when a file reappears there.
 * A reopen that is refused ends the source: on_fail says why, and nothing
 * of the refused file is read.
 *
 * Reads: pread(2) into one bounded buffer (FILESRC_READ_BYTES), at most
 * FILESRC_TURN_BYTES per loop turn; more waits for the next turn (a 0 ms
 * timer), so a large file never holds the loop. Only regular files are
 * read; on a local file system such a read does not wait on anything (a
 * network file system can make it wait: docs/sources.md says so).
 */
#ifndef VIGIL_FILESRC_H
#define VIGIL_FILESRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/error.h"

#define FILESRC_READ_BYTES 65536
#define FILESRC_TURN_BYTES (16 * FILESRC_READ_BYTES)

/* Where the first read starts. */
typedef enum {
  kFileFromEnd = 0,   /* what is appended after the start (the default) */
  kFileFromStart,     /* the whole file */
  kFileFromOffset,    /* from a byte offset (at most the file's size) */
} FileFrom;

typedef struct {
  const char *path;               /* absolute, as given */
  const char *const *roots;       /* real paths of the workspace roots */
  size_t nroots;                  /* 0: every path is refused */
  FileFrom from;
  uint64_t offset;                /* kFileFromOffset */
} FileSourceOptions;

typedef struct {
  /* Bytes read from the file; buf is only valid during the call. */
  void (*on_output)(void *data, const char *buf, size_t len);
  /* Something about the file a reader should know, in words: a
   * truncation, a deletion, the file reappearing. */
  void (*on_note)(void *data, const char *text);
  /* The file can no longer be followed (a reopen was refused): why. The
   * source reads nothing more; the caller closes it. */
  void (*on_fail)(void *data, const char *reason);
} FileSourceCallbacks;

typedef struct {
  uint64_t bytes;                 /* read, in all */
  uint64_t rotations;             /* another file followed at the path */
  uint64_t truncations;           /* reads started again at 0 */
  uint64_t deletions;             /* times the path was found gone */
  uint64_t reopen_refused;        /* reopens the judging refused (at most 1) */
} FileSourceCounters;

typedef struct FileSource FileSource;

/* Judges the path (see above) and opens it, then closes it: what
 * filesrc_open would refuse, with nothing left open. Errors: invalid_params
 * (not absolute, does not exist, a directory, a FIFO, a device, not
 * readable) and denied (outside the roots, or no root), each naming
 * source.file and the path. */
int filesrc_check(const FileSourceOptions *opts, VigilError *err);

/* Judges and opens the path, places the offset and starts watching. The
 * callbacks run from the loop only. Errors as filesrc_check's, and
 * internal when the watch cannot be set. */
int filesrc_open(uv_loop_t *loop, const FileSourceOptions *opts, const FileSourceCallbacks *cb,
                 void *data, FileSource **out, VigilError *err);

/* Stops following and frees the source (its handles close from the loop).
 * No callback fires after it, even when called from one. */
void filesrc_close(FileSource *fs);

/* The path as given, and the real path of the file being read (the last
 * one opened). */
const char *filesrc_path(const FileSource *fs);
const char *filesrc_real_path(const FileSource *fs);
/* The offset read up to in the file being read. */
uint64_t filesrc_offset(const FileSource *fs);
void filesrc_counters(const FileSource *fs, FileSourceCounters *out);

#endif
