/*
 * Containment of one monitored child and of everything it starts, whatever
 * it does to leave its process group: setsid(), setpgid(0, 0), a double
 * fork. proc.c makes one Contain per child and asks it to signal "the
 * monitor" (not just its group), to end it, and to report what limit ended
 * it. How, depends on what the machine offers (cgroup.c finds it once):
 *
 *   - A cgroup (v2, or the v1 pids hierarchy): the child joins its
 *     monitor's group between fork and exec, so every descendant is in it;
 *     the member list is exact and SIGKILL is cgroup.kill. Limits come from
 *     the groups' controllers (pids.max, memory.max, cpu.max, or their v1
 *     forms).
 *   - No cgroup: the engine is a child subreaper (reaper.c), so an orphaned
 *     descendant is re-parented to it. "The monitor" is then, at the moment
 *     of a signal: the child's process group and session, every descendant
 *     of the child found in /proc, and every adopted orphan attributed to
 *     the monitor, with the descendants of those. An adopted orphan is
 *     attributed by (in order) its cgroup, its session or process group id
 *     (still the child's pid after setpgid(0, 0), or a double fork without
 *     setsid), or the VIGIL_MONITOR_ID variable every child is given (its
 *     monitor's id), which it inherits unless it clears its environment.
 *     The gap: a descendant that both leaves the session and clears its
 *     environment, and whose ancestry is broken (a double fork), cannot be
 *     attributed while other monitors run; it is killed as soon as no
 *     monitor of the engine is running (an adopted orphan then belongs to
 *     none), and at engine shutdown.
 *     Limits: RLIMIT_NPROC for max_processes (per user: it counts every
 *     process of the user; root is not held to it), RLIMIT_AS for
 *     memory_limit, and the duty cycle (cpulimit.c) for cpu_limit.
 *
 * Every adopted orphan is reaped (contain_sweep, at each SIGCHLD): none is
 * left a zombie, and one that outlives its monitor is killed.
 *
 * Not contained: an engine killed with SIGKILL leaves its monitors' process
 * trees running (they are re-parented to the engine's own reaper); a later
 * change makes them survive a restart on purpose.
 */
#ifndef VIGIL_CONTAIN_H
#define VIGIL_CONTAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "proc/cgroup.h"
#include "spec/limits.h"
#include "base/error.h"

/* The variable every child gets: its monitor's id (or proc.c's own tag). */
#define CONTAIN_ENV_NAME "VIGIL_MONITOR_ID"


typedef struct {
  const char *tag;          /* the monitor's id ([A-Za-z0-9_.-]); NULL: one is made */
  char *const *env_extra;   /* the caller's "K=V" list (may be NULL) */
  int64_t memory_limit;     /* bytes; 0: none */
  double cpu_limit;         /* cores; 0: none */
  int64_t max_processes;    /* 0: none */
  bool adopted;             /* a child an earlier engine started (docs/restart.md):
                               no group of this engine's, no limits to set;
                               found by the /proc walk from it and its keeper */
  const char *group;        /* its cgroup's name ([A-Za-z0-9_.-]); NULL: the tag. A
                               restarted program's run has a group of its own
                               (monitor_restart.c): the run before's may still be
                               emptying */
} ContainOptions;

/* What the child does between fork and exec, prepared before the fork. */
typedef struct {
  int join_fds[CGROUP_JOIN_MAX]; /* cgroup.procs files to write "0" to */
  size_t njoin;
  int64_t rlimit_as;        /* 0: none */
  int64_t rlimit_nproc;     /* 0: none */
} ContainChild;

/* The steps of contain_child_enter that can fail. */
typedef enum {
  kContainStepCgroup = 1,
  kContainStepRlimitAs,
  kContainStepRlimitNproc,
} ContainStep;

/* How a monitor ended with respect to its limits. */
typedef struct {
  LimitKind exceeded;
  uint64_t oom_kills;       /* processes the OOM killer killed in its group */
  uint64_t forks_refused;   /* forks refused at its pids.max */
} ContainReport;

/* How this engine contains, for the log and api_info. */
typedef struct {
  const char *mode;          /* VIGIL_CGROUP as understood: auto, v2, v1, none */
  const char *tracking;      /* "cgroup2", "cgroup1" or "proc" */
  bool subreaper;
  const char *cgroup;        /* the engine's v2 group, or NULL */
  const char *max_processes; /* how each limit is enforced */
  const char *cpu_limit;
  const char *memory_limit;
  uint64_t orphans_reaped;   /* adopted orphans reaped */
  uint64_t orphans_killed;   /* adopted orphans killed for outliving their monitor */
  uint64_t scans_truncated;  /* /proc scans that found more than REAPER_SCAN_MAX processes */
  uint64_t proc_walks;       /* /proc walks for members, ever: one per round of the loop
                                at most (contain_round.c) */
} ContainInfo;

typedef struct Contain Contain;

/* Makes this process a subreaper and finds its cgroups (VIGIL_CGROUP =
 * auto | v2 | v1 | none), once; logs what it found. Later calls do nothing.
 * contain_new calls it; vigild calls it at start-up so the log says it
 * first. */
void contain_init(void);

void contain_info(ContainInfo *out);

/* Prepares the containment of a child about to be forked: its groups (with
 * their limits) and what the child must do. Errors: spawn_failed naming the
 * cgroup file and the OS error. */
Contain *contain_new(uv_loop_t *loop, const ContainOptions *opts, VigilError *err);

/* The child's extra environment: the caller's list plus
 * VIGIL_MONITOR_ID=TAG last (so it wins). Owned by c. */
char *const *contain_env(const Contain *c);

/* What the child must do (valid until contain_started or contain_free). */
const ContainChild *contain_child(const Contain *c);

/* In the child, between fork and exec: joins the groups and sets the
 * rlimits. Only async-signal-safe calls. Returns 0, or the ContainStep that
 * failed with errno set. */
int contain_child_enter(const ContainChild *cc);

/* The name of a ContainStep for an error message. */
const char *contain_step_name(int step);

/* The child pid has been forked (and the groups joined, unless its exec
 * failed): closes the parent's copies of the join files and starts the
 * duty cycle if one is needed. */
void contain_started(Contain *c, pid_t pid);

/* The child was started by a keeper (proc_keeper.c), its parent and
 * subreaper: the keeper is the engine's child but not an orphan, and the
 * monitor's orphans are found under it. */
void contain_set_keeper(Contain *c, pid_t keeper);

/* While launching, c's keeper is being launched off the loop (proc_spawn.c)
 * and has no pid here yet: it already runs as a child of the engine, so
 * the sweep counts c as running and attributes the keeper to it by its
 * tag rather than killing it as an orphan nobody owns. */
void contain_set_launching(Contain *c, bool launching);

/* Sends sig to everything the monitor holds (see the top). The child's pid
 * must still be ours: call only before it is reaped. Any signal but SIGSTOP
 * and SIGCONT also ends the duty cycle (the processes run, to act on it). */
void contain_signal(Contain *c, int sig);

/* Appends every live process of the monitor, the child included: its
 * cgroup's members, or without one the child's descendants found in /proc
 * and the orphans attributed to it (a walk of /proc, bounded by
 * REAPER_SCAN_MAX). Call only before the child is reaped. */
void contain_members(Contain *c, PidList *out);
/* contain_members, walking procs instead of a /proc read of its own when
 * there is no cgroup: a caller asking for many monitors at once (a
 * monitor_list's ports) reads the process table once. procs is read at
 * the first walk that needs it (procs->procs NULL: not yet); the caller
 * frees it (reaper_table_free). NULL: read one for this call. */
void contain_members_in(Contain *c, ReaperTable *procs, PidList *out);

/* The monitor is ending or gone: SIGKILL to everything it holds, once, and
 * from now on an adopted orphan attributed to it is killed on sight.
 * Idempotent. */
void contain_end(Contain *c);

/* After the child has exited (before it is reaped): contain_end, then what
 * limit ended it, from its groups' counters and its status. */
void contain_finish(Contain *c, bool exited, int exit_code, int term_signal,
                    ContainReport *out);

/* Frees c, removing its groups (retried later while a member is still
 * dying). NULL is fine. */
void contain_free(Contain *c);

/* Reaps every adopted orphan that is a zombie, kills every adopted orphan
 * that outlived its monitor (or, attributed to none, lives while no monitor
 * runs), and retries removing groups. Call at each SIGCHLD and when a
 * monitor ends. Returns how many adopted children remain (running, or
 * zombies not yet reapable). */
size_t contain_sweep(void);

/* What the last sweep returned. */
size_t contain_adopted(void);

/* Whether a group of an ended monitor is still waiting to be removed (a
 * member is still dying). */
bool contain_pending(void);

/* At exit: last removals, then the engine's own groups. */
void contain_shutdown(void);

#endif
