/*
 * The cgroups the engine uses (see cgroup.h).
 *
 * Paths: /proc/self/mountinfo says where each hierarchy is mounted and which
 * part of it the mount shows (its root); /proc/self/cgroup says which group
 * of each hierarchy this process is in. The group's directory is the mount
 * point plus the group's path below the mount's root. Files are read and
 * written with plain open/read/write: a few short system calls each, only
 * when a monitor starts or ends, never periodically (the duty cycle, which
 * runs periodically, reads one file per tick).
 */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memory.h"

/* The v1 controllers used for limits, in this order everywhere. */
typedef enum { kV1Pids = 0, kV1Cpu, kV1Memory, kV1Count } CgroupV1;
static const char *const cgroup_v1_names[kV1Count] = {"pids", "cpu", "memory"};

/* The CFS period cpu.max and cpu.cfs_period_us get, and the kernel's
 * smallest quota: a limit whose quota would be smaller gets a 1 s period. */
#define CGROUP_CPU_PERIOD_US 100000
#define CGROUP_CPU_MIN_QUOTA_US 1000
/* Rounds of read-and-signal when there is no cgroup.kill. */
#define CGROUP_SIGNAL_ROUNDS 8
/* How deep below a monitor's group its members are looked for: a monitored
 * program may make groups of its own (a nested vigild does). */
#define CGROUP_MEMBERS_DEPTH 8

typedef struct {
  char *base;    /* the engine's group in this hierarchy (a directory) */
  char *rel;     /* its path as /proc/PID/cgroup shows it */
  char *dir;     /* base/vigil-PID */
} CgroupHier;

static struct {
  bool done;
  CgroupInfo info;
  CgroupHier v2;
  CgroupHier v1[kV1Count];
  bool v1_dir_made[kV1Count]; /* v1[i].dir exists now (made lazily) */
} cg;

struct CgroupSet {
  char tag[CGROUP_TAG_MAX + 1];
  char *v2;              /* this monitor's v2 group, or NULL */
  char *v1[kV1Count];    /* its v1 groups, or NULL */
  int fds[CGROUP_JOIN_MAX];
  size_t nfds;
  bool memory, cpu, pids;
};

/* --- files -------------------------------------------------------------- */

/* dir + "/" + name, in a new string. */
static char *
cgroup_path(const char *dir, const char *name)
{
  size_t a = strlen(dir), b = strlen(name);
  char *s = xmalloc(a + 1 + b + 1);
  memcpy(s, dir, a);
  s[a] = '/';
  memcpy(s + a + 1, name, b + 1);
  return s;
}

/* Reads dir/name (cap-1 bytes at most) into buf. Returns the length or -1. */
static ssize_t
cgroup_read(const char *dir, const char *name, char *buf, size_t cap)
{
  char *path = cgroup_path(dir, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  free(path);
  buf[0] = '\0';
  if (fd < 0)
    return -1;
  size_t len = 0;
  while (len < cap - 1) {
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  close(fd);
  buf[len] = '\0';
  return (ssize_t)len;
}

/* Writes s to dir/name in one write. Returns 0, or -1 with errno set. */
static int
cgroup_write(const char *dir, const char *name, const char *s)
{
  char *path = cgroup_path(dir, name);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  free(path);
  if (fd < 0)
    return -1;
  size_t len = strlen(s);
  ssize_t n;
  do
    n = write(fd, s, len);
  while (n < 0 && errno == EINTR);
  int saved = errno;
  close(fd);
  errno = saved;
  return n == (ssize_t)len ? 0 : -1;
}

/* Whether dir/name exists. */
static bool
cgroup_has(const char *dir, const char *name)
{
  char *path = cgroup_path(dir, name);
  bool ok = access(path, F_OK) == 0;
  free(path);
  return ok;
}

/* The number after "key " at the start of a line of text, or 0. */
static uint64_t
cgroup_field(const char *text, const char *key)
{
  size_t n = strlen(key);
  for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
    if (strncmp(s, key, n) == 0 && s[n] == ' ')
      return strtoull(s + n + 1, NULL, 10);
  }
  return 0;
}

/* Whether the first len bytes of a space- or comma-separated list hold word. */
static bool
cgroup_word_in_n(const char *list, size_t len, const char *word)
{
  size_t n = strlen(word);
  const char *end = list + len;
  for (const char *s = list; s < end;) {
    size_t w = 0;
    while (s + w < end && s[w] != ' ' && s[w] != ',' && s[w] != '\n')
      w++;
    if (w == n && strncmp(s, word, n) == 0)
      return true;
    s += w + 1;
  }
  return false;
}

/* Whether a space- or comma-separated list holds word. */
static bool
cgroup_word_in(const char *list, const char *word)
{
  return cgroup_word_in_n(list, strlen(list), word);
}

static int cgroup_rmdir_tree(const char *dir, int depth);

/* --- detection ---------------------------------------------------------- */

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void
cgroup_unescape(char *s)
{
  char *out = s;
  for (; *s; s++) {
    if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
        s[3] >= '0' && s[3] <= '7') {
      *out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
      s += 3;
    } else {
      *out++ = *s;
    }
  }
  *out = '\0';
}

/* The mount of a hierarchy: its mount point and the part of the hierarchy
 * it shows (root). */
typedef struct {
  char *point;
  char *root;
} CgroupMount;

/* Finds the mounts of the v2 hierarchy and of the v1 hierarchies holding
 * the controllers we use, from /proc/self/mountinfo. */
static void
cgroup_find_mounts(CgroupMount *v2, CgroupMount v1[kV1Count])
{
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL)
    return;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    /* id parent major:minor root point options [optional...] - type source superopts */
    char *sep = strstr(line, " - ");
    if (sep == NULL)
      continue;
    *sep = '\0';
    char type[32], superopts[1024];
    if (sscanf(sep + 3, "%31s %*s %1023s", type, superopts) != 2)
      continue;
    char root[PATH_MAX], point[PATH_MAX];
    if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2)
      continue;
    cgroup_unescape(root);
    cgroup_unescape(point);
    if (strcmp(type, "cgroup2") == 0 && v2->point == NULL) {
      v2->point = xstrdup(point);
      v2->root = xstrdup(root);
    } else if (strcmp(type, "cgroup") == 0) {
      for (int i = 0; i < kV1Count; i++) {
        if (v1[i].point == NULL && cgroup_word_in(superopts, cgroup_v1_names[i])) {
          v1[i].point = xstrdup(point);
          v1[i].root = xstrdup(root);
        }
      }
    }
  }
  fclose(f);
}

/* The directory of our group under a mount, given its path from
 * /proc/self/cgroup; NULL when the mount does not show it. */
static char *
cgroup_dir_of(const CgroupMount *m, const char *path)
{
  if (m->point == NULL || path == NULL || path[0] != '/')
    return NULL;
  const char *below = path;
  if (strcmp(m->root, "/") != 0) {
    size_t n = strlen(m->root);
    if (strncmp(path, m->root, n) != 0 || (path[n] != '/' && path[n] != '\0'))
      return NULL;
    below = path + n;
  }
  size_t a = strlen(m->point), b = strlen(below);
  char *dir = xmalloc(a + b + 1);
  memcpy(dir, m->point, a);
  memcpy(dir + a, below, b + 1);
  /* "/sys/fs/cgroup/unified" + "/" */
  if (b == 1)
    dir[a] = '\0';
  return dir;
}

/* Our group's path in the v2 hierarchy and in the v1 hierarchies we use,
 * from /proc/self/cgroup ("0::/path", "4:memory:/path", "2:cpu,cpuacct:/"). */
static void
cgroup_find_paths(char **v2, char *v1[kV1Count])
{
  FILE *f = fopen("/proc/self/cgroup", "re");
  if (f == NULL)
    return;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2 == NULL)
      continue;
    *c1 = '\0';
    *c2 = '\0';
    const char *controllers = c1 + 1, *path = c2 + 1;
    if (strcmp(line, "0") == 0 && controllers[0] == '\0') {
      free(*v2);
      *v2 = xstrdup(path);
      continue;
    }
    for (int i = 0; i < kV1Count; i++) {
      if (v1[i] == NULL && cgroup_word_in(controllers, cgroup_v1_names[i]))
        v1[i] = xstrdup(path);
    }
  }
  fclose(f);
}

/* rel + "/" + name for a group path, without a double slash at the root. */
static char *
cgroup_rel_join(const char *rel, const char *name)
{
  return strcmp(rel, "/") == 0 ? cgroup_path("", name) : cgroup_path(rel, name);
}

/* Whether our group's cgroup.procs lists no process but this one. */
static bool
cgroup_alone_in(const char *dir)
{
  char buf[4096];
  if (cgroup_read(dir, "cgroup.procs", buf, sizeof buf) < 0)
    return false;
  char *end;
  long first = strtol(buf, &end, 10);
  while (*end == '\n' || *end == ' ')
    end++;
  return first == (long)getpid() && *end == '\0';
}

/* Enables, in dir's subtree_control, every controller of `want` that dir
 * offers. Returns the errno of the first refusal, 0 when none. */
static int
cgroup_enable(const char *dir, const char *const *want, size_t n)
{
  char avail[1024], enabled[1024];
  if (cgroup_read(dir, "cgroup.controllers", avail, sizeof avail) < 0)
    return errno;
  cgroup_read(dir, "cgroup.subtree_control", enabled, sizeof enabled);
  int first = 0;
  for (size_t i = 0; i < n; i++) {
    if (!cgroup_word_in(avail, want[i]) || cgroup_word_in(enabled, want[i]))
      continue;
    char cmd[32];
    snprintf(cmd, sizeof cmd, "+%s", want[i]);
    if (cgroup_write(dir, "cgroup.subtree_control", cmd) != 0 && first == 0)
      first = errno;
  }
  return first;
}

/* Removes the groups an engine that is gone left in base (vigil-PID, with
 * its monitors' groups, what they made below, and its daemon leaf): an engine
 * killed with SIGKILL cannot remove them, and an empty v1 group left inside
 * someone else's group would keep that group from being removed. rmdir
 * removes only empty groups, so a group whose processes still run (the
 * monitors of a SIGKILLed engine) stays. "Gone" is judged in our pid
 * namespace. */
static void
cgroup_sweep_stale(const char *base)
{
  DIR *d = opendir(base);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char *end;
    if (strncmp(de->d_name, "vigil-", 6) != 0)
      continue;
    long pid = strtol(de->d_name + 6, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == (long)getpid() ||
        !(kill((pid_t)pid, 0) != 0 && errno == ESRCH))
      continue;
    char *dir = cgroup_path(base, de->d_name);
    cgroup_rmdir_tree(dir, CGROUP_MEMBERS_DEPTH + 1);
    free(dir);
  }
  closedir(d);
}

/* Sets up the v2 group vigil-PID under our own v2 group. */
static void
cgroup_init_v2(const CgroupMount *m, const char *path)
{
  char *base = cgroup_dir_of(m, path);
  if (base == NULL)
    return;
  cgroup_sweep_stale(base);
  char name[32];
  snprintf(name, sizeof name, "vigil-%d", (int)getpid());
  char *dir = cgroup_path(base, name);
  if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || !cgroup_has(dir, "cgroup.procs")) {
    free(base);
    free(dir);
    return;
  }
  cg.v2.base = base;
  cg.v2.dir = dir;
  cg.v2.rel = cgroup_rel_join(path, name);
  cg.info.v2 = true;
  cg.info.v2_dir = dir;
  cg.info.v2_kill = cgroup_has(dir, "cgroup.kill");
  cg.info.v2_freeze = cgroup_has(dir, "cgroup.freeze");

  static const char *const want[] = {"cpu", "memory", "pids"};
  int rc = cgroup_enable(base, want, 3);
  if (rc == EBUSY && strcmp(path, "/") != 0 && cgroup_alone_in(base)) {
    /* A delegated group may not both hold processes and hand controllers
     * down: the engine, alone in it, moves into a leaf of its own. */
    char *daemon = cgroup_path(dir, "daemon");
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if ((mkdir(daemon, 0755) == 0 || errno == EEXIST) &&
        cgroup_write(daemon, "cgroup.procs", pid) == 0) {
      cg.info.v2_moved = true;
      cgroup_enable(base, want, 3);
    }
    free(daemon);
  }
  cgroup_enable(dir, want, 3);
  char enabled[1024];
  cgroup_read(dir, "cgroup.subtree_control", enabled, sizeof enabled);
  cg.info.v2_cpu = cgroup_word_in(enabled, "cpu");
  cg.info.v2_memory = cgroup_word_in(enabled, "memory");
  cg.info.v2_pids = cgroup_word_in(enabled, "pids");
}

/* Checks that a v1 hierarchy lets us make our vigil-PID group there (made
 * and removed again: it is made when a monitor needs it). */
static void
cgroup_init_v1(int i, const CgroupMount *m, const char *path)
{
  char *base = cgroup_dir_of(m, path);
  if (base == NULL)
    return;
  cgroup_sweep_stale(base);
  char name[32];
  snprintf(name, sizeof name, "vigil-%d", (int)getpid());
  char *dir = cgroup_path(base, name);
  bool made = mkdir(dir, 0755) == 0;
  if (!made && errno != EEXIST) {
    free(base);
    free(dir);
    return;
  }
  /* A v1 group that cannot take a limit is no use to us. */
  static const char *const probe[kV1Count] = {"pids.max", "cpu.cfs_quota_us",
                                              "memory.limit_in_bytes"};
  bool ok = cgroup_has(dir, probe[i]) && cgroup_has(dir, "cgroup.procs");
  if (made)
    rmdir(dir);
  if (!ok) {
    free(base);
    free(dir);
    return;
  }
  cg.v1[i].base = base;
  cg.v1[i].dir = dir;
  cg.v1[i].rel = cgroup_rel_join(path, name);
  bool *flags[kV1Count] = {&cg.info.v1_pids, &cg.info.v1_cpu, &cg.info.v1_memory};
  *flags[i] = true;
}

/* See cgroup.h. */
void
cgroup_init(const char *mode)
{
  if (cg.done)
    return;
  cg.done = true;
  static const char *const modes[] = {"auto", "v2", "v1", "none"};
  cg.info.mode = modes[0];
  for (size_t i = 0; mode != NULL && i < 4; i++) {
    if (strcmp(mode, modes[i]) == 0)
      cg.info.mode = modes[i];
  }
  bool use_v2 = strcmp(cg.info.mode, "auto") == 0 || strcmp(cg.info.mode, "v2") == 0;
  bool use_v1 = strcmp(cg.info.mode, "auto") == 0 || strcmp(cg.info.mode, "v1") == 0;
  if (!use_v2 && !use_v1)
    return;
  CgroupMount v2m = {NULL, NULL}, v1m[kV1Count];
  memset(v1m, 0, sizeof v1m);
  char *v2p = NULL, *v1p[kV1Count] = {NULL, NULL, NULL};
  cgroup_find_mounts(&v2m, v1m);
  cgroup_find_paths(&v2p, v1p);
  if (use_v2)
    cgroup_init_v2(&v2m, v2p);
  if (use_v1) {
    bool have_v2[kV1Count] = {cg.info.v2_pids, cg.info.v2_cpu, cg.info.v2_memory};
    for (int i = 0; i < kV1Count; i++) {
      /* A v1 controller only where v2 lacks it. The pids hierarchy also
       * tracks when there is no v2 group. */
      if (!have_v2[i])
        cgroup_init_v1(i, &v1m[i], v1p[i]);
    }
  }
  cg.info.v1_tracking = !cg.info.v2 && cg.info.v1_pids;
  free(v2m.point);
  free(v2m.root);
  free(v2p);
  for (int i = 0; i < kV1Count; i++) {
    free(v1m[i].point);
    free(v1m[i].root);
    free(v1p[i]);
  }
}

const CgroupInfo *
cgroup_info(void)
{
  return &cg.info;
}

/* --- one monitor's groups ----------------------------------------------- */

/* Makes dir/tag; returns it, or NULL with err set. */
static char *
cgroup_make(const char *dir, const char *tag, VigilError *err)
{
  char *g = cgroup_path(dir, tag);
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
  if (cgroup_write(dir, name, value) == 0)
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
cgroup_make_v1(CgroupSet *s, int i, VigilError *err)
{
  if (!cg.v1_dir_made[i]) {
    if (mkdir(cg.v1[i].dir, 0755) != 0 && errno != EEXIST)
      return error_set(err, kErrSpawnFailed, "cgroup: cannot make %s: %s", cg.v1[i].dir,
                       strerror(errno));
    cg.v1_dir_made[i] = true;
  }
  s->v1[i] = cgroup_make(cg.v1[i].dir, s->tag, err);
  return s->v1[i] != NULL ? 0 : -1;
}

/* Sets the limits in the groups made so far. */
static int
cgroup_set_limits(CgroupSet *s, const CgroupLimits *lim, VigilError *err)
{
  char v[64];
  if (lim->max_processes > 0) {
    snprintf(v, sizeof v, "%lld", (long long)lim->max_processes);
    const char *dir = cg.info.v2_pids ? s->v2 : s->v1[kV1Pids];
    if (dir != NULL) {
      if (cgroup_limit(dir, "pids.max", v, err) != 0)
        return -1;
      s->pids = true;
    }
  }
  if (lim->memory_limit > 0) {
    snprintf(v, sizeof v, "%lld", (long long)lim->memory_limit);
    if (cg.info.v2_memory && s->v2 != NULL) {
      if (cgroup_limit(s->v2, "memory.max", v, err) != 0)
        return -1;
      /* No swapping past the limit (where swap is accounted at all). */
      cgroup_write(s->v2, "memory.swap.max", "0");
      s->memory = true;
    } else if (s->v1[kV1Memory] != NULL) {
      if (cgroup_limit(s->v1[kV1Memory], "memory.limit_in_bytes", v, err) != 0)
        return -1;
      cgroup_write(s->v1[kV1Memory], "memory.memsw.limit_in_bytes", v);
      s->memory = true;
    }
  }
  if (lim->cpu_limit > 0) {
    long long quota, period;
    cgroup_cpu_quota(lim->cpu_limit, &quota, &period);
    if (cg.info.v2_cpu && s->v2 != NULL) {
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
  if (cg.info.v2)
    rc = (s->v2 = cgroup_make(cg.v2.dir, tag, err)) != NULL ? 0 : -1;
  bool want_v1[kV1Count] = {
    cg.info.v1_pids && (cg.info.v1_tracking || (lim->max_processes > 0 && !cg.info.v2_pids)),
    cg.info.v1_cpu && lim->cpu_limit > 0 && !cg.info.v2_cpu,
    cg.info.v1_memory && lim->memory_limit > 0 && !cg.info.v2_memory,
  };
  for (int i = 0; rc == 0 && i < kV1Count; i++) {
    if (want_v1[i])
      rc = cgroup_make_v1(s, i, err);
  }
  if (rc == 0)
    rc = cgroup_set_limits(s, lim, err);
  const char *dirs[1 + kV1Count] = {s->v2, s->v1[0], s->v1[1], s->v1[2]};
  for (size_t i = 0; rc == 0 && i < 1 + kV1Count; i++) {
    if (dirs[i] == NULL)
      continue;
    char *path = cgroup_path(dirs[i], "cgroup.procs");
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
  if (s->v2 != NULL)
    return s->v2;
  return cg.info.v1_tracking ? s->v1[kV1Pids] : NULL;
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
 * groups below it. cgroup.procs is read in chunks (a fork bomb's group may
 * list thousands of pids). */
static void
cgroup_read_members(const char *dir, int depth, PidList *out)
{
  if (depth > 0) {
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
      if (de->d_type != DT_DIR || de->d_name[0] == '.')
        continue;
      char *sub = cgroup_path(dir, de->d_name);
      cgroup_read_members(sub, depth - 1, out);
      free(sub);
    }
    if (d != NULL)
      closedir(d);
  }
  char *path = cgroup_path(dir, "cgroup.procs");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  free(path);
  if (fd < 0)
    return;
  char buf[4096];
  long cur = 0;
  bool in_num = false;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        cur = cur * 10 + (buf[i] - '0');
        in_num = cur < (1L << 30);
      } else {
        if (in_num && cur > 0)
          pidlist_add(out, (pid_t)cur);
        cur = 0;
        in_num = false;
      }
    }
  }
  if (in_num && cur > 0)
    pidlist_add(out, (pid_t)cur);
  close(fd);
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
  if (sig == SIGKILL && s->v2 != NULL && cg.info.v2_kill &&
      cgroup_write(s->v2, "cgroup.kill", "1") == 0)
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
  if (s->v2 == NULL || !cg.info.v2_freeze)
    return false;
  return cgroup_write(s->v2, "cgroup.freeze", frozen ? "1" : "0") == 0;
}

bool
cgroup_set_cpu_ns(const CgroupSet *s, uint64_t *ns)
{
  char buf[1024];
  if (s->v2 == NULL || cgroup_read(s->v2, "cpu.stat", buf, sizeof buf) <= 0 ||
      strstr(buf, "usage_usec ") == NULL)
    return false;
  *ns = cgroup_field(buf, "usage_usec") * 1000;
  return true;
}

void
cgroup_set_counters(const CgroupSet *s, uint64_t *oom_kills, uint64_t *forks_refused)
{
  char buf[1024];
  *oom_kills = 0;
  *forks_refused = 0;
  if (s->v2 != NULL && cg.info.v2_memory &&
      cgroup_read(s->v2, "memory.events", buf, sizeof buf) > 0)
    *oom_kills += cgroup_field(buf, "oom_kill");
  if (s->v1[kV1Memory] != NULL &&
      cgroup_read(s->v1[kV1Memory], "memory.oom_control", buf, sizeof buf) > 0)
    *oom_kills += cgroup_field(buf, "oom_kill");
  if (s->v2 != NULL && cg.info.v2_pids && cgroup_read(s->v2, "pids.events", buf, sizeof buf) > 0)
    *forks_refused += cgroup_field(buf, "max");
  if (s->v1[kV1Pids] != NULL && cgroup_read(s->v1[kV1Pids], "pids.events", buf, sizeof buf) > 0)
    *forks_refused += cgroup_field(buf, "max");
}

/* Removes the groups below dir (deepest first, depth levels down), then
 * dir. Returns 0 or the errno of rmdir(dir). */
static int
cgroup_rmdir_tree(const char *dir, int depth)
{
  if (depth > 0) {
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
      if (de->d_type != DT_DIR || de->d_name[0] == '.')
        continue;
      char *sub = cgroup_path(dir, de->d_name);
      cgroup_rmdir_tree(sub, depth - 1);
      free(sub);
    }
    if (d != NULL)
      closedir(d);
  }
  return rmdir(dir) == 0 ? 0 : errno;
}

/* Removes a monitor's group directory, with any group the monitor made
 * below it; true when it is gone. */
static bool
cgroup_rmdir(char **dir)
{
  if (*dir == NULL)
    return true;
  int rc = cgroup_rmdir_tree(*dir, CGROUP_MEMBERS_DEPTH);
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
    if (had && ok && cg.v1_dir_made[i] && rmdir(cg.v1[i].dir) == 0)
      cg.v1_dir_made[i] = false;
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

/* See cgroup.h. */
bool
cgroup_tag_of(pid_t pid, char *tag, size_t cap)
{
  const CgroupHier *h = cg.info.v2 ? &cg.v2 : cg.info.v1_tracking ? &cg.v1[kV1Pids] : NULL;
  if (h == NULL)
    return false;
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return false;
  buf[n] = '\0';
  size_t rl = strlen(h->rel);
  for (char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2 == NULL)
      continue;
    bool is_v2 = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
    bool wanted = cg.info.v2 ? is_v2 : !is_v2 && (size_t)(c2 - c1 - 1) < 256 &&
                                         cgroup_word_in_n(c1 + 1, (size_t)(c2 - c1 - 1), "pids");
    if (!wanted)
      continue;
    const char *p = c2 + 1;
    if (strncmp(p, h->rel, rl) != 0 || p[rl] != '/')
      return false;
    p += rl + 1;
    size_t len = strcspn(p, "/\n");
    if (len == 0 || len >= cap || (len == 6 && strncmp(p, "daemon", 6) == 0))
      return false;
    memcpy(tag, p, len);
    tag[len] = '\0';
    return true;
  }
  return false;
}

/* See cgroup.h. */
void
cgroup_shutdown(void)
{
  for (int i = 0; i < kV1Count; i++) {
    if (cg.v1_dir_made[i] && rmdir(cg.v1[i].dir) == 0)
      cg.v1_dir_made[i] = false;
  }
  if (cg.info.v2 && !cg.info.v2_moved)
    rmdir(cg.v2.dir);
}
