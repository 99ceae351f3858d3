/*
 * The engine as a child subreaper, and the /proc process table (see
 * reaper.h).
 *
 * Why /proc and not a pid namespace: the engine must work unprivileged and
 * inside containers that give it no namespace of its own, so it tracks
 * processes by what any process may read about another of the same user:
 * /proc/PID/stat (parent, group, session, state, CPU time). A pid read there
 * may die and be reused before it is signalled; the window is the time
 * between the scan and the kill(2), microseconds, and pids are handed out
 * cyclically up to pid_max, so a reuse inside it needs the whole pid space
 * to wrap around in between. The cgroup path (cgroup.c) has no such window.
 */
#include "proc/reaper.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "base/memory.h"
#include "proc/procfs.h"

static int reaper_state = -1; /* -1: not tried; 0: not a subreaper; 1: one */

/* See reaper.h. */
bool
reaper_init(void)
{
  if (reaper_state >= 0)
    return reaper_state == 1;
#ifdef PR_SET_CHILD_SUBREAPER
  reaper_state = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
#else
  reaper_state = 0;
#endif
  return reaper_state == 1;
}

bool
reaper_is_subreaper(void)
{
  return reaper_state == 1;
}

/* Parses a stat line. The command name may hold spaces and parentheses, so
 * fields count from the last ')': state is field 3, then ppid pgrp session
 * (4-6), utime stime cutime cstime (14-17), num_threads (20), starttime
 * (22). */
static bool
reaper_parse_stat(pid_t pid, char *buf, ReaperProc *out)
{
  char *s = strrchr(buf, ')');
  if (s == NULL || s[1] != ' ')
    return false;
  s += 2;
  memset(out, 0, sizeof *out);
  out->pid = pid;
  out->state = *s;
  long long v[19] = {0}; /* fields 4..22 */
  char *end = s + 1;
  for (int field = 4; field <= 22; field++) {
    v[field - 4] = strtoll(end, &end, 10);
    if (*end != ' ' && *end != '\n' && *end != '\0')
      return false;
  }
  out->ppid = (pid_t)v[0];
  out->pgrp = (pid_t)v[1];
  out->sid = (pid_t)v[2];
  for (int field = 14; field <= 17; field++) {
    uint64_t ticks = v[field - 4] > 0 ? (uint64_t)v[field - 4] : 0;
    out->cpu_ticks += ticks;
    if (field <= 15)
      out->self_ticks += ticks;
  }
  out->threads = (long)v[20 - 4];
  out->start_ticks = v[22 - 4] > 0 ? (uint64_t)v[22 - 4] : 0;
  return true;
}

/* See reaper.h. */
bool
reaper_read(pid_t pid, ReaperProc *out)
{
  char buf[1024];
  if (procfs_read_pid(pid, "stat", buf, sizeof buf) <= 0)
    return false;
  return reaper_parse_stat(pid, buf, out);
}

/* Whether a /proc entry name is a pid; returns it, or 0. */
static pid_t
reaper_pid_name(const char *name)
{
  if (name[0] < '1' || name[0] > '9')
    return 0;
  char *end;
  long v = strtol(name, &end, 10);
  return *end == '\0' && v > 0 && v < (1L << 30) ? (pid_t)v : 0;
}

/* See reaper.h. */
void
reaper_children(PidList *out)
{
  char path[96];
  DIR *tasks = opendir("/proc/self/task");
  bool found_file = false;
  if (tasks != NULL) {
    struct dirent *de;
    while ((de = readdir(tasks)) != NULL) {
      pid_t tid = reaper_pid_name(de->d_name);
      if (tid == 0)
        continue;
      snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)tid);
      /* A pid per number, separated by spaces. */
      if (procfs_read_pids(path, out))
        found_file = true;
    }
    closedir(tasks);
  }
  if (found_file)
    return;
  /* No children file (a kernel without CONFIG_PROC_CHILDREN): the scan. */
  ReaperTable t = {0};
  reaper_scan(&t);
  pid_t self = getpid();
  for (size_t i = 0; i < t.n; i++) {
    if (t.procs[i].ppid == self)
      pidlist_add(out, t.procs[i].pid);
  }
  reaper_table_free(&t);
}

/* See reaper.h. */
bool
reaper_reap(pid_t pid)
{
  pid_t r;
  do
    r = waitpid(pid, NULL, WNOHANG);
  while (r < 0 && errno == EINTR);
  return r == pid;
}

static int
reaper_cmp_pid(const void *a, const void *b)
{
  pid_t x = ((const ReaperProc *)a)->pid, y = ((const ReaperProc *)b)->pid;
  return (x > y) - (x < y);
}

/* See reaper.h. */
void
reaper_scan(ReaperTable *t)
{
  t->n = 0;
  t->truncated = 0;
  DIR *d = opendir("/proc");
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    pid_t pid = reaper_pid_name(de->d_name);
    if (pid == 0)
      continue;
    if (t->n == REAPER_SCAN_MAX) {
      t->truncated++;
      continue;
    }
    if (t->n == t->cap) {
      t->cap = t->cap ? t->cap * 2 : 256;
      t->procs = xrealloc(t->procs, t->cap * sizeof *t->procs);
    }
    if (reaper_read(pid, &t->procs[t->n]))
      t->n++;
  }
  closedir(d);
  qsort(t->procs, t->n, sizeof *t->procs, reaper_cmp_pid);
}

/* See reaper.h. */
const ReaperProc *
reaper_find(const ReaperTable *t, pid_t pid)
{
  ReaperProc key = {.pid = pid};
  return t->n ? bsearch(&key, t->procs, t->n, sizeof *t->procs, reaper_cmp_pid) : NULL;
}

static bool
reaper_in(const pid_t *v, size_t n, pid_t pid)
{
  for (size_t i = 0; i < n; i++) {
    if (v[i] == pid)
      return true;
  }
  return false;
}

/* Orders table indices by parent pid (for reaper_collect). */
static const ReaperTable *reaper_sort_table;

static int
reaper_cmp_ppid(const void *a, const void *b)
{
  pid_t x = reaper_sort_table->procs[*(const size_t *)a].ppid;
  pid_t y = reaper_sort_table->procs[*(const size_t *)b].ppid;
  return (x > y) - (x < y);
}

/* See reaper.h. The table's indices sorted by parent pid give each
 * process's children as one range; a breadth-first walk from the roots and
 * the group members then visits each process once: O(n log n) whatever the
 * shape of the tree (a chain of thousands of processes included). */
void
reaper_collect(const ReaperTable *t, const pid_t *roots, size_t nroots, const pid_t *groups,
               size_t ngroups, PidList *out)
{
  if (t->n == 0)
    return;
  size_t n = t->n;
  bool *mark = xcalloc(n, sizeof *mark);
  size_t *by_ppid = xmalloc(n * sizeof *by_ppid);
  size_t *queue = xmalloc(n * sizeof *queue);
  size_t head = 0, tail = 0;
  for (size_t i = 0; i < n; i++) {
    by_ppid[i] = i;
    const ReaperProc *p = &t->procs[i];
    if (reaper_in(roots, nroots, p->pid) || reaper_in(groups, ngroups, p->pgrp) ||
        reaper_in(groups, ngroups, p->sid)) {
      mark[i] = true;
      queue[tail++] = i;
    }
  }
  reaper_sort_table = t;
  qsort(by_ppid, n, sizeof *by_ppid, reaper_cmp_ppid);
  while (head < tail) {
    pid_t parent = t->procs[queue[head++]].pid;
    /* The first index whose ppid is >= parent. */
    size_t lo = 0, hi = n;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (t->procs[by_ppid[mid]].ppid < parent)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (size_t k = lo; k < n && t->procs[by_ppid[k]].ppid == parent; k++) {
      size_t child = by_ppid[k];
      if (!mark[child]) {
        mark[child] = true;
        queue[tail++] = child;
      }
    }
  }
  /* Each process is marked once, so only what out held before can repeat. */
  pid_t self = getpid();
  size_t before = out->n;
  for (size_t i = 0; i < n; i++) {
    if (mark[i] && t->procs[i].state != 'Z' && t->procs[i].pid != self &&
        !reaper_in(out->pids, before, t->procs[i].pid))
      pidlist_add(out, t->procs[i].pid);
  }
  free(queue);
  free(by_ppid);
  free(mark);
}

/* See reaper.h. The owner of /proc/PID is the process's effective uid,
 * which is its real uid unless it runs a set-uid program. */
uint64_t
reaper_user_tasks(uid_t uid)
{
  uint64_t tasks = 0;
  DIR *d = opendir("/proc");
  if (d == NULL)
    return 0;
  struct dirent *de;
  char path[64];
  while ((de = readdir(d)) != NULL) {
    pid_t pid = reaper_pid_name(de->d_name);
    if (pid == 0)
      continue;
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    ReaperProc rp;
    if (stat(path, &st) == 0 && st.st_uid == uid && reaper_read(pid, &rp))
      tasks += rp.threads > 0 ? (uint64_t)rp.threads : 1;
  }
  closedir(d);
  return tasks;
}

void
reaper_table_free(ReaperTable *t)
{
  free(t->procs);
  memset(t, 0, sizeof *t);
}
