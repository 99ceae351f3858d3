/*
 * One monitor's groups (see cgroup.h): made when the monitor starts, in
 * every hierarchy cgroup.c found usable and the monitor's limits need, with
 * the limits written before the child joins them; then listed, signalled,
 * frozen and read for CPU time and counters while it runs, and removed when
 * it has ended (rmdir fails while a member is still dying, so the caller
 * retries).
 *
 * The engine-wide part (which hierarchies, the engine's own vigil-PID group
 * in each) is cgroup.c's; this file reaches it only through cgroup_info()
 * and cgroup_internal.h.
 */
#include "proc/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/cgroup_internal.h"
#include "base/memory.h"
#include "proc/procfs.h"

/* The CFS period cpu.max and cpu.cfs_period_us get, and the kernel's
 * smallest quota: a limit whose quota would be smaller gets a 1 s period. */
#define CGROUP_CPU_PERIOD_US 100000
#define CGROUP_CPU_MIN_QUOTA_US 1000
/* Rounds of read-and-signal when there is no cgroup.kill. */
#define CGROUP_SIGNAL_ROUNDS 8

struct CgroupSet {
  char tag[CGROUP_TAG_MAX + 1];
  char *v2;              /* this monitor's v2 group, or NULL */
  char *v1[kV1Count];    /* its v1 groups, or NULL */
  int fds[CGROUP_JOIN_MAX];
  size_t nfds;
  bool memory, cpu, pids;
};

/* Makes dir/tag; returns it, or NULL with err set. */
static char *
cgroup_make(const char *dir, const char *tag, VigilError *err)
{
  char *g = cgroup__path(dir, tag);
  if (mkdir(g, 0755) != 0) {
    error_set(err, kErrSpawnFailed, "cgroup: cannot make %s: %s", g, strerror(errno));
    free(g);
    return NULL;
  }
  return g;
}

/* Writes a limit; on failure sets err naming the file and the value. */
static int
cgroup_limit(const char *dir, const char *name, const char *value, VigilError *err)
{
  if (cgroup__write(dir, name, value) == 0)
    return 0;
  return error_set(err, kErrSpawnFailed, "cgroup: writing \"%s\" to %s/%s: %s", value, dir, name,
                   strerror(errno));
}

/* The quota and period of a cpu limit, in microseconds. */
static void
cgroup_cpu_quota(double cores, long long *quota, long long *period)
{
  *period = CGROUP_CPU_PERIOD_US;
  *quota = (long long)(cores * CGROUP_CPU_PERIOD_US + 0.5);
  if (*quota < CGROUP_CPU_MIN_QUOTA_US) {
    *period = CGROUP_CPU_PERIOD_US * 10;
    *quota = (long long)(cores * (double)*period + 0.5);
    if (*quota < CGROUP_CPU_MIN_QUOTA_US)
      *quota = CGROUP_CPU_MIN_QUOTA_US;
  }
}

/* Makes the v1 group of hierarchy i for s, making our vigil-PID group
 * there first if needed. */
static int
cgroup_make_v1(CgroupSet *s, CgroupV1 i, VigilError *err)
{
  const char *parent = cgroup__v1_group(i, err);
  if (parent == NULL)
    return -1;
  s->v1[i] = cgroup_make(parent, s->tag, err);
  return s->v1[i] != NULL ? 0 : -1;
}

/* Sets the limits in the groups made so far. */
static int
cgroup_set_limits(CgroupSet *s, const CgroupLimits *lim, VigilError *err)
{
  const CgroupInfo *ci = cgroup_info();
  char v[64];
  if (lim->max_processes > 0) {
    snprintf(v, sizeof v, "%lld", (long long)lim->max_processes);
    const char *dir = ci->v2_pids ? s->v2 : s->v1[kV1Pids];
    if (dir != NULL) {
      if (cgroup_limit(dir, "pids.max", v, err) != 0)
        return -1;
      s->pids = true;
    }
  }
  if (lim->memory_limit > 0) {
    snprintf(v, sizeof v, "%lld", (long long)lim->memory_limit);
    if (ci->v2_memory && s->v2 != NULL) {
      if (cgroup_limit(s->v2, "memory.max", v, err) != 0)
        return -1;
      /* No swapping past the limit (where swap is accounted at all). */
      cgroup__write(s->v2, "memory.swap.max", "0");
      s->memory = true;
    } else if (s->v1[kV1Memory] != NULL) {
      if (cgroup_limit(s->v1[kV1Memory], "memory.limit_in_bytes", v, err) != 0)
        return -1;
      cgroup__write(s->v1[kV1Memory], "memory.memsw.limit_in_bytes", v);
      s->memory = true;
    }
  }
  if (lim->cpu_limit > 0) {
    long long quota, period;
    cgroup_cpu_quota(lim->cpu_limit, &quota, &period);
    if (ci->v2_cpu && s->v2 != NULL) {
      snprintf(v, sizeof v, "%lld %lld", quota, period);
      if (cgroup_limit(s->v2, "cpu.max", v, err) != 0)
        return -1;
      s->cpu = true;
    } else if (s->v1[kV1Cpu] != NULL) {
      snprintf(v, sizeof v, "%lld", period);
      if (cgroup_limit(s->v1[kV1Cpu], "cpu.cfs_period_us", v, err) != 0)
        return -1;
      snprintf(v, sizeof v, "%lld", quota);
      if (cgroup_limit(s->v1[kV1Cpu], "cpu.cfs_quota_us", v, err) != 0)
        return -1;
      s->cpu = true;
    }
  }
  return 0;
}

/* See cgroup.h. */
CgroupSet *
cgroup_set_new(const char *tag, const CgroupLimits *lim, VigilError *err)
{
  const CgroupInfo *ci = cgroup_info();
  CgroupSet *s = xcalloc(1, sizeof *s);
  for (size_t i = 0; i < CGROUP_JOIN_MAX; i++)
    s->fds[i] = -1;
  size_t n = strlen(tag);
  bool ok = n > 0 && n <= CGROUP_TAG_MAX && tag[0] != '.';
  for (size_t i = 0; ok && i < n; i++)
    ok = (tag[i] >= 'a' && tag[i] <= 'z') || (tag[i] >= 'A' && tag[i] <= 'Z') ||
         (tag[i] >= '0' && tag[i] <= '9') || tag[i] == '_' || tag[i] == '-' || tag[i] == '.';
  if (!ok) {
    error_set(err, kErrSpawnFailed, "cgroup: \"%s\" is not a usable group name", tag);
    free(s);
    return NULL;
  }
  memcpy(s->tag, tag, n + 1);
  int rc = 0;
  if (ci->v2)
    rc = (s->v2 = cgroup_make(ci->v2_dir, tag, err)) != NULL ? 0 : -1;
  bool want_v1[kV1Count] = {
    ci->v1_pids && (ci->v1_tracking || (lim->max_processes > 0 && !ci->v2_pids)),
    ci->v1_cpu && lim->cpu_limit > 0 && !ci->v2_cpu,
    ci->v1_memory && lim->memory_limit > 0 && !ci->v2_memory,
  };
  for (int i = 0; rc == 0 && i < kV1Count; i++) {
    if (want_v1[i])
      rc = cgroup_make_v1(s, (CgroupV1)i, err);
  }
  if (rc == 0)
    rc = cgroup_set_limits(s, lim, err);
  const char *dirs[1 + kV1Count] = {s->v2, s->v1[0], s->v1[1], s->v1[2]};
  for (size_t i = 0; rc == 0 && i < 1 + kV1Count; i++) {
    if (dirs[i] == NULL)
      continue;
    char *path = cgroup__path(dirs[i], "cgroup.procs");
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      rc = error_set(err, kErrSpawnFailed, "cgroup: cannot open %s: %s", path, strerror(errno));
    else
      s->fds[s->nfds++] = fd;
    free(path);
  }
  if (rc != 0) {
    cgroup_set_joined(s);
    cgroup_set_remove(s);
    cgroup_set_free(s);
    return NULL;
  }
  return s;
}

bool
cgroup_set_has_memory(const CgroupSet *s)
{
  return s->memory;
}

bool
cgroup_set_has_cpu(const CgroupSet *s)
{
  return s->cpu;
}

bool
cgroup_set_has_pids(const CgroupSet *s)
{
  return s->pids;
}

/* The group whose members are listed: v2, else the v1 pids group. */
static const char *
cgroup_set_tracking_dir(const CgroupSet *s)
{
  const CgroupInfo *ci = cgroup_info();
  if (s->v2 != NULL)
    return s->v2;
  return ci->v1_tracking ? s->v1[kV1Pids] : NULL;
}

bool
cgroup_set_tracks(const CgroupSet *s)
{
  return cgroup_set_tracking_dir(s) != NULL;
}

size_t
cgroup_set_join_fds(const CgroupSet *s, int *fds)
{
  for (size_t i = 0; i < s->nfds; i++)
    fds[i] = s->fds[i];
  return s->nfds;
}

void
cgroup_set_joined(CgroupSet *s)
{
  for (size_t i = 0; i < s->nfds; i++) {
    if (s->fds[i] >= 0)
      close(s->fds[i]);
    s->fds[i] = -1;
  }
  s->nfds = 0;
}

/* Appends the pids of dir's cgroup.procs and, depth levels down, of the
 * groups below it (a CgroupVisit; ctx is the PidList). */
static void
cgroup_read_members(const char *dir, int depth, void *ctx)
{
  PidList *out = ctx;
  if (depth > 0)
    cgroup__each_subgroup(dir, depth, cgroup_read_members, out);
  char *path = cgroup__path(dir, "cgroup.procs");
  procfs_read_pids(path, out);
  free(path);
}

/* See cgroup.h. Groups the monitor made below its own count too. */
void
cgroup_set_members(const CgroupSet *s, PidList *out)
{
  const char *dir = cgroup_set_tracking_dir(s);
  if (dir != NULL)
    cgroup_read_members(dir, CGROUP_MEMBERS_DEPTH, out);
}

/* See cgroup.h. */
void
cgroup_set_signal(CgroupSet *s, int sig)
{
  const CgroupInfo *ci = cgroup_info();
  if (sig == SIGKILL && s->v2 != NULL && ci->v2_kill &&
      cgroup__write(s->v2, "cgroup.kill", "1") == 0)
    return;
  PidList done = {0};
  pid_t self = getpid();
  for (int round = 0; round < CGROUP_SIGNAL_ROUNDS; round++) {
    PidList now = {0};
    cgroup_set_members(s, &now);
    size_t fresh = 0;
    for (size_t i = 0; i < now.n; i++) {
      if (now.pids[i] == self || pidlist_has(&done, now.pids[i]))
        continue;
      kill(now.pids[i], sig);
      pidlist_add(&done, now.pids[i]);
      fresh++;
    }
    pidlist_free(&now);
    if (fresh == 0)
      break;
  }
  pidlist_free(&done);
}

bool
cgroup_set_freeze(CgroupSet *s, bool frozen)
{
  const CgroupInfo *ci = cgroup_info();
  if (s->v2 == NULL || !ci->v2_freeze)
    return false;
  return cgroup__write(s->v2, "cgroup.freeze", frozen ? "1" : "0") == 0;
}

bool
cgroup_set_cpu_ns(const CgroupSet *s, uint64_t *ns)
{
  char buf[1024];
  if (s->v2 == NULL || cgroup__read(s->v2, "cpu.stat", buf, sizeof buf) <= 0 ||
      strstr(buf, "usage_usec ") == NULL)
    return false;
  *ns = procfs_value(buf, "usage_usec") * 1000;
  return true;
}

void
cgroup_set_counters(const CgroupSet *s, uint64_t *oom_kills, uint64_t *forks_refused)
{
  const CgroupInfo *ci = cgroup_info();
  char buf[1024];
  *oom_kills = 0;
  *forks_refused = 0;
  if (s->v2 != NULL && ci->v2_memory &&
      cgroup__read(s->v2, "memory.events", buf, sizeof buf) > 0)
    *oom_kills += procfs_value(buf, "oom_kill");
  if (s->v1[kV1Memory] != NULL &&
      cgroup__read(s->v1[kV1Memory], "memory.oom_control", buf, sizeof buf) > 0)
    *oom_kills += procfs_value(buf, "oom_kill");
  if (s->v2 != NULL && ci->v2_pids && cgroup__read(s->v2, "pids.events", buf, sizeof buf) > 0)
    *forks_refused += procfs_value(buf, "max");
  if (s->v1[kV1Pids] != NULL && cgroup__read(s->v1[kV1Pids], "pids.events", buf, sizeof buf) > 0)
    *forks_refused += procfs_value(buf, "max");
}

/* Removes a monitor's group directory, with any group the monitor made
 * below it; true when it is gone. */
static bool
cgroup_rmdir(char **dir)
{
  if (*dir == NULL)
    return true;
  int rc = cgroup__rmdir_tree(*dir, CGROUP_MEMBERS_DEPTH);
  if (rc != 0 && rc != ENOENT)
    return false;
  free(*dir);
  *dir = NULL;
  return true;
}

/* See cgroup.h. Our vigil-PID group of a v1 hierarchy goes with its last
 * monitor group, so nothing of ours stays in a hierarchy we do not use. */
bool
cgroup_set_remove(CgroupSet *s)
{
  bool gone = cgroup_rmdir(&s->v2);
  for (int i = 0; i < kV1Count; i++) {
    bool had = s->v1[i] != NULL;
    bool ok = cgroup_rmdir(&s->v1[i]);
    gone = gone && ok;
    if (had && ok)
      cgroup__v1_group_release((CgroupV1)i);
  }
  return gone;
}

void
cgroup_set_free(CgroupSet *s)
{
  if (s == NULL)
    return;
  cgroup_set_joined(s);
  free(s->v2);
  for (int i = 0; i < kV1Count; i++)
    free(s->v1[i]);
  free(s);
}
