/*
 * The engine as a child subreaper, and the process table it reads from
 * /proc. With PR_SET_CHILD_SUBREAPER, a process whose parent dies is
 * re-parented to the engine instead of to init, so a descendant of a
 * monitor that double-forks is still the engine's to end and to reap. This
 * module makes the engine a subreaper, lists its children, reaps one, and
 * reads /proc: one process's stat line, or every process at once with the
 * descendants of a set of roots (the process tree as it is now).
 *
 * It knows nothing of monitors: which adopted child belongs to which
 * monitor is contain.c's business. Linux only; elsewhere every call says
 * "nothing" (no subreaper, no children, an empty table).
 */
#ifndef VIGIL_REAPER_H
#define VIGIL_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/procfs.h" /* PidList */

/* The most processes one /proc scan keeps; more are counted in `truncated`
 * (pid_max is 4194304 at most, a machine with more than this many processes
 * is already in trouble, and a scan is a bounded amount of work). */
#define REAPER_SCAN_MAX 65536

/* What /proc/PID/stat says about one process. */
typedef struct {
  pid_t pid;
  pid_t ppid;
  pid_t pgrp;
  pid_t sid;
  char state;          /* 'R', 'S', 'D', 'T', 'Z', ... */
  uint64_t cpu_ticks;  /* utime + stime + cutime + cstime, in clock ticks */
  uint64_t self_ticks; /* utime + stime: the process's own, without its reaped children */
  long threads;        /* num_threads */
  uint64_t start_ticks; /* starttime: when it started, in clock ticks after boot */
} ReaperProc;

/* Every process of the system at one moment, sorted by pid. */
typedef struct {
  ReaperProc *procs;
  size_t n;
  size_t cap;
  uint64_t truncated;  /* processes not kept (REAPER_SCAN_MAX) */
} ReaperTable;

/* Makes this process a child subreaper (once; later calls return the first
 * answer). Returns whether it is one. */
bool reaper_init(void);

/* Whether reaper_init made this process a subreaper. */
bool reaper_is_subreaper(void);

/* Reads /proc/PID/stat. Returns false when the process is gone (or on a
 * system without /proc). */
bool reaper_read(pid_t pid, ReaperProc *out);

/* Appends the pids of this process's children (of every thread), running or
 * zombie, from /proc/self/task/TID/children, or from a scan of /proc where
 * the kernel has no such file. */
void reaper_children(PidList *out);

/* Reaps pid if it is a zombie child of ours. Returns whether it was reaped. */
bool reaper_reap(pid_t pid);

/* Fills t with every process (t is reset first). */
void reaper_scan(ReaperTable *t);

/* The entry of pid in t, or NULL. */
const ReaperProc *reaper_find(const ReaperTable *t, pid_t pid);

/* Appends to out every live (not zombie) process of t that is one of the
 * roots, a descendant of one, or in a process group or session whose id is
 * one of `groups`; each once. Never this process itself. */
void reaper_collect(const ReaperTable *t, const pid_t *roots, size_t nroots, const pid_t *groups,
                    size_t ngroups, PidList *out);

/* How many tasks (threads) the processes of real user uid hold now, which
 * is what RLIMIT_NPROC counts. */
uint64_t reaper_user_tasks(uid_t uid);

void reaper_table_free(ReaperTable *t);

#endif
