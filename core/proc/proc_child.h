/*
 * A child's side of a spawn, between fork and exec: what the engine does in
 * the child it clones (proc_spawn.c) and what a keeper does in the child it
 * forks (keeper/keeper.c), so that a program started either way starts the
 * same: leading its own session and process group, in its monitor's
 * cgroups with its limits, in the directory that was opened and checked,
 * with stdin, stdout and stderr on the given descriptors and no other, and
 * the soft descriptor limit the engine started with. A step that fails is
 * reported on a close-on-exec pipe (its number and errno), so the parent
 * can name it; exec closes the pipe with nothing written.
 */
#ifndef VIGIL_PROC_CHILD_H
#define VIGIL_PROC_CHILD_H

#include <stdbool.h>
#include <sys/resource.h>

#include "proc/contain.h"

/* The child-side steps that can fail, for the spawn_failed message; a
 * failed step of contain_child_enter is reported as kChildContain plus its
 * ContainStep. */
typedef enum {
  kChildSetsid = 1,
  kChildChdir,
  kChildDup,
  kChildExec,
  kChildKeeper,   /* the keeper could not start the child (its own setup) */
  kChildContain = 100,
} ProcChildStep;

/* What the child needs, all prepared before fork. */
typedef struct {
  const char *path;
  char *const *argv;
  char **envp;
  int dir_fd;     /* the directory to enter (fchdir) */
  int fds[3];     /* become 0, 1, 2 */
  int report_fd;  /* exec-error pipe's write end (close-on-exec) */
  const ContainChild *contain; /* cgroups to join, rlimits */
  long open_max;  /* for the close loop when close_range is missing */
  bool nofile_restore; /* start the program with the soft RLIMIT_NOFILE */
  struct rlimit nofile; /* the engine had before proc_raise_nofile */
} ProcChild;

/* In the child: resets the signal dispositions and mask, becomes a session
 * leader, enters the cgroups and limits, the directory, the descriptors,
 * and execs. Only async-signal-safe calls (the parent may have threads, so
 * no malloc and no locks), and no write to the parent's memory but c's
 * fields and errno (a clone may share it). Never returns: a failed step is
 * reported on c->report_fd, then _exit(127). (Not declared noreturn: under
 * AddressSanitizer a call to a noreturn function first unpoisons the
 * stack it believes it is on, which is not the clone's own stack.) */
void proc_child(ProcChild *c);

/* In a child: every signal back to its default disposition, none blocked. */
void proc_child_reset_signals(void);

/* Closes every descriptor from 3 up except keep (-1: none). */
void proc_child_close_fds(int keep, long open_max);

/* The name of a child-side step for the spawn_failed message. */
const char *proc_step_name(int step);

/* The soft limit for close loops where close_range is missing. */
long proc_child_open_max(void);

#endif
