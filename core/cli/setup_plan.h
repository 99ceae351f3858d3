/*
 * What `vigil setup` is about to do to a harness's files, as one plan: each
 * file read once (setup_file.h), the text it should hold after (or that it
 * goes), and a line saying what changed in words, so that the same plan is
 * printed as a diff (--dry-run), printed as a summary, or applied.
 *
 * Applying writes the files one by one, each atomically. When one fails,
 * the ones already written are put back as they were (each again
 * atomically) and setup says which file failed and why: a harness is never
 * left half set up.
 */
#ifndef VIGIL_SETUP_PLAN_H
#define VIGIL_SETUP_PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/setup_file.h"
#include "base/strbuf.h"

typedef struct {
  SetupFile file;     /* what was read */
  char *after;        /* what it should hold (NULL: as it is) */
  size_t after_len;
  bool remove;        /* the file goes */
  StrBuf what;        /* "added mcpServers.vigil; ..." */
  mode_t new_mode;    /* a new file's mode (less the umask) */
  mode_t dir_mode;    /* a new directory's */
  bool written;       /* applied */
} SetupChange;

typedef struct {
  SetupChange **changes;
  size_t n, cap;
  StrBuf notes;       /* what the person should know or do, one per line */
} SetupPlan;

void setup_plan_init(SetupPlan *p);
void setup_plan_free(SetupPlan *p);

/* Reads path (absolute) into a new change of the plan. Returns it, or NULL
 * with err set. */
SetupChange *setup_plan_open(SetupPlan *p, const char *path, mode_t new_mode, mode_t dir_mode,
                             StrBuf *err);

/* Sets what the change's file should hold (a copy of text). */
void setup_change_set(SetupChange *c, const char *text, size_t len);

/* Makes the change remove its file. */
void setup_change_delete(SetupChange *c);

/* Ends the edit of a text file (TOML, YAML) that now reads text: the
 * change gets it; when removing left it blank (only whitespace) the file
 * goes instead (never a link: that one gets the blank text); a file that
 * did not exist and would be blank is not made. */
void setup_change_text(SetupChange *c, bool remove, const char *text, size_t len);

/* Adds words to what the change does ("added hooks"). */
void setup_change_say(SetupChange *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether the change alters its file. */
bool setup_change_alters(const SetupChange *c);

/* Adds a line to the notes. */
void setup_plan_note(SetupPlan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* How many files the plan alters. */
size_t setup_plan_count(const SetupPlan *p);

/* Prints the plan to f: with diff, each altered file's unified diff;
 * else a line per file saying what changed (done says whether it was
 * applied: "wrote"/"removed" against "would write"/"would remove"). */
void setup_plan_print(const SetupPlan *p, FILE *f, bool diff, bool done);

/* Applies the plan (see above). Returns 0, or -1 with err set. */
int setup_plan_apply(SetupPlan *p, StrBuf *err);

#endif
