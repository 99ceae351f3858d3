/*
 * The files `vigil setup` edits, read and written safely (docs/mcp.md,
 * "vigil setup"): a harness's config holds the person's other settings,
 * sometimes secrets, and is often a link into a dotfiles repository.
 *
 * - Every directory on the way, from the file's own up to /, must be owned
 *   by this user or root, and one that group or others may write must be
 *   sticky (/tmp): a file is never read or written through another user's
 *   directory, where that user could swap it. The file itself must be a
 *   regular file of this user, at most SETUP_FILE_MAX bytes.
 * - A symbolic link is followed, and its target (checked as above) is what
 *   is replaced: the link stays a link into the person's dotfiles.
 * - A write is atomic: a temporary file beside the target (mkstemp), the
 *   content, fsync, the target's mode (a new file: the mode asked, less the
 *   umask), rename over the target. Right before the rename the target is
 *   read again: if it changed since setup read it (the harness rewrote
 *   it), nothing is written and setup says so.
 * - Missing directories are made (mode asked, less the umask); none is
 *   ever removed.
 */
#ifndef VIGIL_SETUP_FILE_H
#define VIGIL_SETUP_FILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/strbuf.h"

/* The largest file setup reads (~/.claude.json keeps history: a few MiB). */
#define SETUP_FILE_MAX (32u * 1024 * 1024)

typedef struct {
  char path[PATH_MAX];  /* as named: what the person is shown */
  char real[PATH_MAX];  /* what is read and replaced: links resolved */
  bool link;            /* path is a symbolic link (to real) */
  bool exists;
  char *data;           /* the content read (NUL-terminated), when exists */
  size_t len;
  mode_t mode;          /* its permission bits, when exists */
} SetupFile;

/* Reads path (absolute) for editing into f: exists false when there is no
 * such file (its directory need not exist). Returns 0, or -1 with err set
 * (naming the path) when the file or a directory on the way fails the
 * checks above or cannot be read. */
int setup_file_read(SetupFile *f, const char *path, StrBuf *err);

/* Replaces f's file with data (len bytes), atomically, after checking it
 * still holds what setup_file_read found. A new file gets new_mode less the
 * umask; missing directories are made with dir_mode less the umask.
 * Returns 0, or -1 with err set (nothing changed). */
int setup_file_write(const SetupFile *f, const char *data, size_t len, mode_t new_mode,
                     mode_t dir_mode, StrBuf *err);

/* Removes f's file, after the same check. A link is never removed (nor
 * its target): the person made it, so the caller writes what is left
 * instead. Returns 0, or -1 with err set. */
int setup_file_remove(const SetupFile *f, StrBuf *err);

void setup_file_free(SetupFile *f);

/* A file's text with its bytes [a, b) replaced by ins[0..inslen), as a new
 * NUL-terminated string (*out_len bytes): the one edit the JSON, TOML and
 * YAML editors make. */
char *setup_splice(const char *text, size_t len, size_t a, size_t b, const char *ins,
                   size_t inslen, size_t *out_len);

#endif
