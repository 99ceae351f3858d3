/*
 * The cgroup hierarchies the engine uses (see cgroup.h): found once at
 * start-up, the engine's own vigil-PID group in each, which group a process
 * is in, and the removal of what the engine made when it exits. One
 * monitor's groups inside them are cgroup_set.c's.
 *
 * Paths: /proc/self/mountinfo says where each hierarchy is mounted and which
 * part of it the mount shows (its root); /proc/self/cgroup says which group
 * of each hierarchy this process is in. The group's directory is the mount
 * point plus the group's path below the mount's root. Files are read and
 * written with plain open/read/write: a few short system calls each, only
 * when a monitor starts or ends, never periodically (the duty cycle, which
 * runs periodically, reads one file per tick).
 */
#include "proc/cgroup.h"

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

#include "proc/cgroup_internal.h"
#include "base/memory.h"
#include "proc/procfs.h"

static const char *const cgroup_v1_names[kV1Count] = {"pids", "cpu", "memory"};

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

/* --- files -------------------------------------------------------------- */

/* See cgroup_internal.h. */
char *
cgroup__path(const char *dir, const char *name)
{
  size_t a = strlen(dir), b = strlen(name);
  char *s = xmalloc(a + 1 + b + 1);
  memcpy(s, dir, a);
  s[a] = '/';
  memcpy(s + a + 1, name, b + 1);
  return s;
}

/* See cgroup_internal.h. */
ssize_t
cgroup__read(const char *dir, const char *name, char *buf, size_t cap)
{
  char *path = cgroup__path(dir, name);
  ssize_t n = procfs_read(path, buf, cap);
  int saved = errno;
  free(path);
  errno = saved;
  return n;
}

/* See cgroup_internal.h. */
int
cgroup__write(const char *dir, const char *name, const char *s)
{
  char *path = cgroup__path(dir, name);
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
  char *path = cgroup__path(dir, name);
  bool ok = access(path, F_OK) == 0;
  free(path);
  return ok;
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

/* See cgroup_internal.h. */
void
cgroup__each_subgroup(const char *dir, int depth, CgroupVisit *visit, void *ctx)
{
  DIR *d = opendir(dir);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_type != DT_DIR || de->d_name[0] == '.')
      continue;
    char *sub = cgroup__path(dir, de->d_name);
    visit(sub, depth - 1, ctx);
    free(sub);
  }
  closedir(d);
}

/* cgroup__rmdir_tree as a CgroupVisit. */
static void
cgroup_rmdir_visit(const char *dir, int depth, void *ctx)
{
  cgroup__rmdir_tree(dir, depth);
}

/* See cgroup_internal.h. */
int
cgroup__rmdir_tree(const char *dir, int depth)
{
  if (depth > 0)
    cgroup__each_subgroup(dir, depth, cgroup_rmdir_visit, NULL);
  return rmdir(dir) == 0 ? 0 : errno;
}

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
  return strcmp(rel, "/") == 0 ? cgroup__path("", name) : cgroup__path(rel, name);
}

/* Whether our group's cgroup.procs lists no process but this one. */
static bool
cgroup_alone_in(const char *dir)
{
  char buf[4096];
  if (cgroup__read(dir, "cgroup.procs", buf, sizeof buf) < 0)
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
  if (cgroup__read(dir, "cgroup.controllers", avail, sizeof avail) < 0)
    return errno;
  cgroup__read(dir, "cgroup.subtree_control", enabled, sizeof enabled);
  int first = 0;
  for (size_t i = 0; i < n; i++) {
    if (!cgroup_word_in(avail, want[i]) || cgroup_word_in(enabled, want[i]))
      continue;
    char cmd[32];
    snprintf(cmd, sizeof cmd, "+%s", want[i]);
    if (cgroup__write(dir, "cgroup.subtree_control", cmd) != 0 && first == 0)
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
    char *dir = cgroup__path(base, de->d_name);
    cgroup__rmdir_tree(dir, CGROUP_MEMBERS_DEPTH + 1);
    free(dir);
  }
  closedir(d);
}

/* Our group's directory in the hierarchy of mount m, given its path there
 * (NULL when the mount does not show it), with what engines that are gone
 * left in it swept away; name gets the engine's own group's name in it,
 * vigil-PID. */
static char *
cgroup_own_base(const CgroupMount *m, const char *path, char *name, size_t cap)
{
  char *base = cgroup_dir_of(m, path);
  if (base == NULL)
    return NULL;
  cgroup_sweep_stale(base);
  snprintf(name, cap, "vigil-%d", (int)getpid());
  return base;
}

/* Sets up the v2 group vigil-PID under our own v2 group. */
static void
cgroup_init_v2(const CgroupMount *m, const char *path)
{
  char name[32];
  char *base = cgroup_own_base(m, path, name, sizeof name);
  if (base == NULL)
    return;
  char *dir = cgroup__path(base, name);
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
    char *daemon = cgroup__path(dir, "daemon");
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if ((mkdir(daemon, 0755) == 0 || errno == EEXIST) &&
        cgroup__write(daemon, "cgroup.procs", pid) == 0) {
      cg.info.v2_moved = true;
      cgroup_enable(base, want, 3);
    }
    free(daemon);
  }
  cgroup_enable(dir, want, 3);
  char enabled[1024];
  cgroup__read(dir, "cgroup.subtree_control", enabled, sizeof enabled);
  cg.info.v2_cpu = cgroup_word_in(enabled, "cpu");
  cg.info.v2_memory = cgroup_word_in(enabled, "memory");
  cg.info.v2_pids = cgroup_word_in(enabled, "pids");
}

/* Checks that a v1 hierarchy lets us make our vigil-PID group there (made
 * and removed again: it is made when a monitor needs it). */
static void
cgroup_init_v1(int i, const CgroupMount *m, const char *path)
{
  char name[32];
  char *base = cgroup_own_base(m, path, name, sizeof name);
  if (base == NULL)
    return;
  char *dir = cgroup__path(base, name);
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

/* --- the engine's own groups ------------------------------------------ */

/* See cgroup_internal.h. */
const char *
cgroup__v1_group(CgroupV1 i, VigilError *err)
{
  if (!cg.v1_dir_made[i]) {
    if (mkdir(cg.v1[i].dir, 0755) != 0 && errno != EEXIST) {
      error_set(err, kErrSpawnFailed, "cgroup: cannot make %s: %s", cg.v1[i].dir,
                strerror(errno));
      return NULL;
    }
    cg.v1_dir_made[i] = true;
  }
  return cg.v1[i].dir;
}

/* See cgroup_internal.h. rmdir refuses while another monitor's group is
 * still in it, which is what keeps it for them. */
void
cgroup__v1_group_release(CgroupV1 i)
{
  if (cg.v1_dir_made[i] && rmdir(cg.v1[i].dir) == 0)
    cg.v1_dir_made[i] = false;
}

/* See cgroup.h. */
bool
cgroup_tag_of(pid_t pid, char *tag, size_t cap)
{
  const CgroupHier *h = cg.info.v2 ? &cg.v2 : cg.info.v1_tracking ? &cg.v1[kV1Pids] : NULL;
  if (h == NULL)
    return false;
  char buf[4096];
  if (procfs_read_pid(pid, "cgroup", buf, sizeof buf) <= 0)
    return false;
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
  for (int i = 0; i < kV1Count; i++)
    cgroup__v1_group_release((CgroupV1)i);
  if (cg.info.v2 && !cg.info.v2_moved)
    rmdir(cg.v2.dir);
}
