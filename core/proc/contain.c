/*
 * Containment of one monitored child and its descendants (see contain.h).
 *
 * Every Contain is on one list, so an adopted orphan can be matched to its
 * monitor by group tag, by session or group id, or by VIGIL_MONITOR_ID.
 * Nothing here runs periodically except a limited monitor's duty cycle;
 * the rest runs when a monitor starts, is signalled or ends, and at SIGCHLD.
 */
#include "proc/contain.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proc/cpulimit.h"
#include "base/log.h"
#include "base/memory.h"
#include "proc/reaper.h"

/* The most of /proc/PID/environ read when looking for VIGIL_MONITOR_ID. The
 * variable comes after the engine's own environment (a few KiB as a rule),
 * so this is generous; it bounds what a process with a huge environment
 * costs each sweep. */
#define CONTAIN_ENVIRON_MAX (256 * 1024)

struct Contain {
  Contain *prev, *next;     /* contain_list */
  uv_loop_t *loop;
  char tag[CGROUP_TAG_MAX + 1];
  char group[CGROUP_TAG_MAX + 1]; /* its cgroup's name: the tag, or a run's own */
  char *env_kv;             /* "VIGIL_MONITOR_ID=tag" */
  char **env;               /* the caller's list plus env_kv */
  double cpu_limit;
  CgroupSet *cg;            /* NULL when no cgroup is used */
  ContainChild child;
  pid_t leader;             /* 0 until started */
  pid_t keeper;             /* the leader's parent when a keeper started it; 0: none */
  bool ended;               /* contain_end ran: what is left is killed on sight */
  CpuLimit *cpulimit;       /* the duty cycle, while it runs */
  PidList stopped;          /* pids the duty cycle stopped with SIGSTOP */
  PidList sample;           /* members found by the last usage sample */
};

static Contain *contain_list;
static bool contain_ready;
static pid_t contain_pid;          /* the process contain_init ran in */
static uint64_t contain_serial;    /* for tags of children without a monitor */
static size_t contain_last_adopted;
static uint64_t contain_reaped, contain_killed, contain_scans_truncated;
/* Orphans killed and not yet reaped (a sweep meets them again while they
 * die: they are counted once). Our own children, so bounded by them. */
static PidList contain_doomed;
/* Groups of freed Contains whose removal must be retried. */
static CgroupSet **contain_pending_sets;
static size_t contain_npending, contain_pending_cap;

/* --- start-up ----------------------------------------------------------- */

/* See contain.h. */
void
contain_init(void)
{
  if (contain_ready)
    return;
  contain_ready = true;
  contain_pid = getpid();
  reaper_init();
  const char *mode = getenv("VIGIL_CGROUP");
  cgroup_init(mode);
  if (mode != NULL && strcmp(mode, cgroup_info()->mode) != 0)
    LOG_WARN("contain", "VIGIL_CGROUP=\"%s\" is not auto, v2, v1 or none; using auto", mode);
  ContainInfo ci;
  contain_info(&ci);
  LOG_INFO("contain",
           "tracking: %s%s%s; subreaper: %s; max_processes: %s; cpu_limit: %s; "
           "memory_limit: %s (VIGIL_CGROUP=%s)",
           ci.tracking, ci.cgroup ? " at " : "", ci.cgroup ? ci.cgroup : "",
           ci.subreaper ? "yes" : "no (orphans go to init)", ci.max_processes, ci.cpu_limit,
           ci.memory_limit, ci.mode);
  atexit(contain_shutdown);
}

/* See contain.h. */
void
contain_info(ContainInfo *out)
{
  contain_init();
  const CgroupInfo *g = cgroup_info();
  memset(out, 0, sizeof *out);
  out->mode = g->mode;
  out->tracking = g->v2 ? "cgroup2" : g->v1_tracking ? "cgroup1" : "proc";
  out->subreaper = reaper_is_subreaper();
  out->cgroup = g->v2_dir;
  out->max_processes = g->v2_pids   ? "cgroup2 pids.max"
                       : g->v1_pids ? "cgroup1 pids.max"
                       : geteuid() == 0 ? "none (RLIMIT_NPROC, the fallback, does not bind root)"
                                        : "RLIMIT_NPROC (per user)";
  out->cpu_limit = g->v2_cpu                   ? "cgroup2 cpu.max"
                   : g->v1_cpu                 ? "cgroup1 cpu.cfs_quota_us"
                   : g->v2 && g->v2_freeze     ? "duty cycle (cgroup2 freeze)"
                                               : "duty cycle (SIGSTOP/SIGCONT)";
  out->memory_limit = g->v2_memory   ? "cgroup2 memory.max"
                      : g->v1_memory ? "cgroup1 memory.limit_in_bytes"
                                     : "RLIMIT_AS";
  out->orphans_reaped = contain_reaped;
  out->orphans_killed = contain_killed;
  out->scans_truncated = contain_scans_truncated;
}

/* --- one child ---------------------------------------------------------- */

/* See contain.h. */
Contain *
contain_new(uv_loop_t *loop, const ContainOptions *opts, VigilError *err)
{
  contain_init();
  Contain *c = xcalloc(1, sizeof *c);
  c->loop = loop;
  if (opts->tag != NULL)
    snprintf(c->tag, sizeof c->tag, "%s", opts->tag);
  else
    snprintf(c->tag, sizeof c->tag, "proc-%" PRIu64, ++contain_serial);
  snprintf(c->group, sizeof c->group, "%s", opts->group != NULL ? opts->group : c->tag);
  c->cpu_limit = opts->adopted ? 0 : opts->cpu_limit;

  CgroupLimits lim = {opts->memory_limit, opts->cpu_limit, opts->max_processes};
  c->cg = opts->adopted ? NULL : cgroup_set_new(c->group, &lim, err);
  if (c->cg == NULL && !opts->adopted) {
    free(c);
    return NULL;
  }
  if (opts->adopted)
    lim = (CgroupLimits){0, 0, 0};
  c->child.njoin = c->cg == NULL ? 0 : cgroup_set_join_fds(c->cg, c->child.join_fds);
  if (lim.memory_limit > 0 && !cgroup_set_has_memory(c->cg))
    c->child.rlimit_as = opts->memory_limit;
  if (lim.max_processes > 0 && !cgroup_set_has_pids(c->cg) && geteuid() != 0) {
    /* RLIMIT_NPROC counts every task of the user, so the monitor may add
     * max_processes to what the user runs now (never above the hard limit
     * the engine itself has). Root is not held to it: not set then. */
    uint64_t n = reaper_user_tasks(getuid()) + (uint64_t)opts->max_processes;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && n > rl.rlim_max)
      n = rl.rlim_max;
    c->child.rlimit_nproc = (int64_t)n;
  }

  size_t n = 0;
  while (opts->env_extra != NULL && opts->env_extra[n] != NULL)
    n++;
  size_t kvlen = strlen(CONTAIN_ENV_NAME) + 1 + strlen(c->tag) + 1;
  c->env_kv = xmalloc(kvlen);
  snprintf(c->env_kv, kvlen, "%s=%s", CONTAIN_ENV_NAME, c->tag);
  c->env = xmalloc((n + 2) * sizeof *c->env);
  for (size_t i = 0; i < n; i++)
    c->env[i] = opts->env_extra[i];
  c->env[n] = c->env_kv;
  c->env[n + 1] = NULL;

  c->next = contain_list;
  if (contain_list != NULL)
    contain_list->prev = c;
  contain_list = c;
  return c;
}

char *const *
contain_env(const Contain *c)
{
  return c->env;
}

const ContainChild *
contain_child(const Contain *c)
{
  return &c->child;
}

/* See contain.h. */
void
contain_set_keeper(Contain *c, pid_t keeper)
{
  c->keeper = keeper;
}

/* --- finding the monitor's processes ------------------------------------ */

/* The registered Contain with this tag (group: with this cgroup name),
 * or NULL. */
static Contain *
contain_by_tag(const char *tag, bool group)
{
  for (Contain *c = contain_list; c != NULL; c = c->next) {
    if (strcmp(group ? c->group : c->tag, tag) == 0)
      return c;
  }
  return NULL;
}

static int
contain_pid_cmp(const void *a, const void *b)
{
  pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
  return x < y ? -1 : x > y;
}

/* The children of registered Contains (proc.c reaps those), sorted: a sweep
 * asks about every child of the engine, and a walk of the list for each
 * made it quadratic in the monitors (a million steps per SIGCHLD with 1000
 * of them, most of the engine's time while they ended: bench/scale). */
static void
contain_leaders(PidList *out)
{
  for (Contain *c = contain_list; c != NULL; c = c->next) {
    if (c->leader > 0)
      pidlist_add(out, c->leader);
    if (c->keeper > 0)
      pidlist_add(out, c->keeper); /* proc.c reaps it too; never an orphan */
  }
  if (out->n > 1)
    qsort(out->pids, out->n, sizeof *out->pids, contain_pid_cmp);
}

/* Whether pid is in the sorted leaders. */
static bool
contain_is_leader(const PidList *leaders, pid_t pid)
{
  return leaders->n > 0 &&
         bsearch(&pid, leaders->pids, leaders->n, sizeof *leaders->pids, contain_pid_cmp) != NULL;
}

/* How many Contains are started and not ended. */
static size_t
contain_running(void)
{
  size_t n = 0;
  for (Contain *c = contain_list; c != NULL; c = c->next)
    n += c->leader > 0 && !c->ended;
  return n;
}

/* The value of VIGIL_MONITOR_ID in pid's environment, copied into tag.
 * Returns false when it has none (or its environment cannot be read). The
 * environment is read in chunks; a match cut at a chunk's end is found by
 * keeping the chunk's tail. */
static bool
contain_environ_tag(pid_t pid, char *tag, size_t cap)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  static const char key[] = CONTAIN_ENV_NAME "=";
  const size_t klen = sizeof key - 1;
  /* entry gathers the start of the entry being read (across reads); a
   * longer entry cannot be ours and is skipped. */
  char buf[8192];
  char entry[sizeof key + CGROUP_TAG_MAX + 2];
  size_t elen = 0, total = 0;
  bool found = false, overflow = false;
  while (!found && total < CONTAIN_ENVIRON_MAX) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    total += (size_t)n;
    for (ssize_t i = 0; i < n && !found; i++) {
      if (buf[i] != '\0') {
        if (elen < sizeof entry - 1)
          entry[elen++] = buf[i];
        else
          overflow = true;
        continue;
      }
      entry[elen] = '\0';
      if (!overflow && elen > klen && strncmp(entry, key, klen) == 0 &&
          elen - klen < cap) {
        memcpy(tag, entry + klen, elen - klen + 1);
        found = true;
      }
      elen = 0;
      overflow = false;
    }
  }
  close(fd);
  return found;
}

/* The Contain an adopted orphan belongs to, or NULL. *stale is set when it
 * is in a group of this engine whose monitor is gone. */
static Contain *
contain_owner(pid_t pid, const ReaperProc *rp, bool *stale)
{
  char tag[CGROUP_TAG_MAX + 1];
  *stale = false;
  if (cgroup_tag_of(pid, tag, sizeof tag)) {
    Contain *c = contain_by_tag(tag, true);
    *stale = c == NULL;
    return c;
  }
  for (Contain *c = contain_list; c != NULL; c = c->next) {
    if (c->leader > 0 && (rp->sid == c->leader || rp->pgrp == c->leader))
      return c;
  }
  if (contain_environ_tag(pid, tag, sizeof tag))
    return contain_by_tag(tag, false);
  return NULL;
}

/* Whether pid is an adopted orphan: a child of ours that is not a
 * registered child and came from a monitor (every monitor runs in a session
 * of its own, so one in our session is some other child of the process
 * hosting us, not ours to manage). */
static bool
contain_adopted_orphan(const PidList *leaders, pid_t pid, pid_t own_sid, ReaperProc *rp)
{
  return !contain_is_leader(leaders, pid) && reaper_read(pid, rp) && rp->sid != own_sid;
}

/* Appends the live adopted orphans attributed to c. */
static void
contain_orphans_of(Contain *c, PidList *out)
{
  PidList kids = {0}, leaders = {0};
  reaper_children(&kids);
  contain_leaders(&leaders);
  pid_t own_sid = getsid(0);
  for (size_t i = 0; i < kids.n; i++) {
    ReaperProc rp;
    bool stale;
    if (contain_adopted_orphan(&leaders, kids.pids[i], own_sid, &rp) && rp.state != 'Z' &&
        contain_owner(kids.pids[i], &rp, &stale) == c)
      pidlist_add(out, kids.pids[i]);
  }
  pidlist_free(&kids);
  pidlist_free(&leaders);
}

/* Appends every live process of the monitor (the child included): its
 * group's members, or, without one, the /proc walk from the child and the
 * orphans attributed to it; plus those orphans in either case (a process
 * may leave a group where it may write to a higher cgroup.procs, as root
 * may). */
static void
contain_members(Contain *c, PidList *out)
{
  PidList orphans = {0};
  contain_orphans_of(c, &orphans);
  if (c->cg != NULL && cgroup_set_tracks(c->cg)) {
    cgroup_set_members(c->cg, out);
    for (size_t i = 0; i < orphans.n; i++) {
      if (!pidlist_has(out, orphans.pids[i]))
        pidlist_add(out, orphans.pids[i]);
    }
  } else {
    ReaperTable t = {0};
    reaper_scan(&t);
    if (t.truncated > 0 && contain_scans_truncated++ == 0)
      LOG_WARN("contain", "/proc lists more than %d processes; the walk for a monitor's "
               "descendants saw only the first %d (counted in api_info)", REAPER_SCAN_MAX,
               REAPER_SCAN_MAX);
    PidList roots = {0};
    pidlist_add(&roots, c->leader);
    for (size_t i = 0; i < orphans.n; i++)
      pidlist_add(&roots, orphans.pids[i]);
    /* With a keeper, orphans go to it (its subreaper), not to the engine:
     * everything under the keeper is the monitor's, but the keeper. */
    if (c->keeper > 0)
      pidlist_add(&roots, c->keeper);
    size_t from = out->n;
    reaper_collect(&t, roots.pids, roots.n, &c->leader, 1, out);
    for (size_t i = from; c->keeper > 0 && i < out->n; i++) {
      if (out->pids[i] == c->keeper) {
        out->pids[i] = out->pids[--out->n];
        break;
      }
    }
    pidlist_free(&roots);
    reaper_table_free(&t);
  }
  pidlist_free(&orphans);
}

/* Sends sig to each pid of a list but this process. */
static void
contain_kill_list(const PidList *l, int sig)
{
  pid_t self = getpid();
  for (size_t i = 0; i < l->n; i++) {
    if (l->pids[i] > 1 && l->pids[i] != self)
      kill(l->pids[i], sig);
  }
}

/* --- the duty cycle ------------------------------------------------------ */

/* CpuLimitOps.usage_ns: the group's cpu.stat, else the sum of the members'
 * /proc figures (which include their reaped children). */
static bool
contain_cpu_usage(void *ctx, uint64_t *ns)
{
  Contain *c = ctx;
  pidlist_free(&c->sample);
  if (c->cg != NULL && cgroup_set_cpu_ns(c->cg, ns))
    return true;
  contain_members(c, &c->sample);
  uint64_t ticks = 0;
  for (size_t i = 0; i < c->sample.n; i++) {
    ReaperProc rp;
    if (reaper_read(c->sample.pids[i], &rp))
      ticks += rp.cpu_ticks;
  }
  long hz = sysconf(_SC_CLK_TCK);
  *ns = hz > 0 ? ticks * (1000000000ULL / (uint64_t)hz) : 0;
  return c->sample.n > 0;
}

/* CpuLimitOps.pause: freezes the v2 group, else SIGSTOP to every member
 * (those the last sample found, or a fresh list) and SIGCONT to the same
 * ones to resume. */
static void
contain_cpu_pause(void *ctx, bool paused)
{
  Contain *c = ctx;
  if (c->cg != NULL && cgroup_set_freeze(c->cg, paused))
    return;
  if (paused) {
    if (c->sample.n == 0)
      contain_members(c, &c->sample);
    killpg(c->leader, SIGSTOP);
    contain_kill_list(&c->sample, SIGSTOP);
    for (size_t i = 0; i < c->sample.n; i++) {
      if (!pidlist_has(&c->stopped, c->sample.pids[i]))
        pidlist_add(&c->stopped, c->sample.pids[i]);
    }
    pidlist_free(&c->sample);
    return;
  }
  killpg(c->leader, SIGCONT);
  contain_kill_list(&c->stopped, SIGCONT);
  pidlist_free(&c->stopped);
}

static const CpuLimitOps contain_cpu_ops = {contain_cpu_usage, contain_cpu_pause};

/* Ends the duty cycle (resuming whatever it paused). */
static void
contain_cpu_release(Contain *c)
{
  cpulimit_stop(c->cpulimit);
  c->cpulimit = NULL;
  pidlist_free(&c->sample);
}

/* See contain.h. */
void
contain_started(Contain *c, pid_t pid)
{
  if (c->cg != NULL)
    cgroup_set_joined(c->cg);
  c->child.njoin = 0;
  c->leader = pid;
  if (c->cpu_limit > 0 && !cgroup_set_has_cpu(c->cg))
    c->cpulimit = cpulimit_start(c->loop, c->cpu_limit, &contain_cpu_ops, c);
}

/* --- signalling and ending ---------------------------------------------- */

/* See contain.h. */
void
contain_signal(Contain *c, int sig)
{
  if (c->leader <= 0)
    return;
  if (sig != SIGSTOP && sig != SIGCONT)
    contain_cpu_release(c);
  killpg(c->leader, sig);
  if (c->cg != NULL && cgroup_set_tracks(c->cg)) {
    cgroup_set_signal(c->cg, sig);
    PidList orphans = {0};
    contain_orphans_of(c, &orphans);
    contain_kill_list(&orphans, sig);
    pidlist_free(&orphans);
    return;
  }
  PidList all = {0};
  contain_members(c, &all);
  contain_kill_list(&all, sig);
  pidlist_free(&all);
}

/* See contain.h. */
void
contain_end(Contain *c)
{
  if (c->ended)
    return;
  contain_signal(c, SIGKILL);
  c->ended = true;
}

/* See contain.h. A limit is named only for a monitor that failed (killed by
 * a signal, or a non-zero exit): one that hit pids.max and still exited 0
 * coped with it. */
void
contain_finish(Contain *c, bool exited, int exit_code, int term_signal, ContainReport *out)
{
  contain_end(c);
  memset(out, 0, sizeof *out);
  if (c->cg != NULL)
    cgroup_set_counters(c->cg, &out->oom_kills, &out->forks_refused);
  bool failed = exited && (term_signal != 0 || exit_code != 0);
  if (!failed)
    out->exceeded = kLimitNone;
  else if (out->oom_kills > 0)
    out->exceeded = kLimitMemory;
  else if (term_signal == SIGXCPU)
    out->exceeded = kLimitCpuTime;
  else if (out->forks_refused > 0)
    out->exceeded = kLimitProcesses;
}

/* Keeps a group whose removal must be retried. */
static void
contain_pend(CgroupSet *s)
{
  if (contain_npending == contain_pending_cap) {
    contain_pending_cap = contain_pending_cap ? contain_pending_cap * 2 : 8;
    contain_pending_sets =
        xrealloc(contain_pending_sets, contain_pending_cap * sizeof *contain_pending_sets);
  }
  contain_pending_sets[contain_npending++] = s;
}

/* Retries the removals; frees what is gone. */
static void
contain_retry_pending(void)
{
  size_t k = 0;
  for (size_t i = 0; i < contain_npending; i++) {
    if (cgroup_set_remove(contain_pending_sets[i]))
      cgroup_set_free(contain_pending_sets[i]);
    else
      contain_pending_sets[k++] = contain_pending_sets[i];
  }
  contain_npending = k;
  if (k == 0) {
    free(contain_pending_sets);
    contain_pending_sets = NULL;
    contain_pending_cap = 0;
  }
}

/* See contain.h. */
void
contain_free(Contain *c)
{
  if (c == NULL)
    return;
  contain_cpu_release(c);
  pidlist_free(&c->stopped);
  if (c->cg != NULL) {
    cgroup_set_joined(c->cg);
    if (cgroup_set_remove(c->cg))
      cgroup_set_free(c->cg);
    else
      contain_pend(c->cg);
  }
  if (c->prev != NULL)
    c->prev->next = c->next;
  else if (contain_list == c)
    contain_list = c->next;
  if (c->next != NULL)
    c->next->prev = c->prev;
  free(c->env_kv);
  free(c->env);
  free(c);
}

/* --- adopted orphans ----------------------------------------------------- */

/* Forgets a killed orphan once it is reaped. */
static void
contain_undoom(pid_t pid)
{
  for (size_t i = 0; i < contain_doomed.n; i++) {
    if (contain_doomed.pids[i] == pid) {
      contain_doomed.pids[i] = contain_doomed.pids[--contain_doomed.n];
      break;
    }
  }
  if (contain_doomed.n == 0)
    pidlist_free(&contain_doomed);
}

/* See contain.h. */
size_t
contain_sweep(void)
{
  if (!contain_ready)
    return 0;
  PidList kids = {0}, leaders = {0};
  reaper_children(&kids);
  contain_leaders(&leaders);
  pid_t own_sid = getsid(0);
  size_t running = contain_running();
  size_t remaining = 0;
  for (size_t i = 0; i < kids.n; i++) {
    pid_t pid = kids.pids[i];
    ReaperProc rp;
    if (!contain_adopted_orphan(&leaders, pid, own_sid, &rp))
      continue;
    if (rp.state == 'Z') {
      if (reaper_reap(pid)) {
        contain_reaped++;
        contain_undoom(pid);
      } else {
        remaining++;
      }
      continue;
    }
    remaining++;
    if (pidlist_has(&contain_doomed, pid)) {
      kill(pid, SIGKILL); /* still dying */
      continue;
    }
    /* With no monitor running every adopted orphan has outlived its own, so
     * none needs to be attributed (that reads /proc files per orphan). */
    bool stale = false;
    Contain *owner = running > 0 ? contain_owner(pid, &rp, &stale) : NULL;
    if (stale || (owner != NULL && owner->ended) || (owner == NULL && running == 0)) {
      kill(pid, SIGKILL);
      if (!pidlist_has(&contain_doomed, pid)) {
        LOG_DEBUG("contain", "killed pid %d: it outlived its monitor", (int)pid);
        pidlist_add(&contain_doomed, pid);
        contain_killed++;
      }
    }
  }
  /* A doomed pid that is no child of ours any more was reaped elsewhere. */
  for (size_t i = 0; i < contain_doomed.n;) {
    if (!pidlist_has(&kids, contain_doomed.pids[i]))
      contain_undoom(contain_doomed.pids[i]);
    else
      i++;
  }
  pidlist_free(&kids);
  pidlist_free(&leaders);
  if (contain_npending > 0)
    contain_retry_pending();
  contain_last_adopted = remaining;
  return remaining;
}

size_t
contain_adopted(void)
{
  return contain_last_adopted;
}

bool
contain_pending(void)
{
  return contain_npending > 0;
}

/* See contain.h. Runs at exit (atexit) in the process that set things up,
 * never in a forked child that calls exit(). */
void
contain_shutdown(void)
{
  if (!contain_ready || getpid() != contain_pid)
    return;
  /* Children whose loop was torn down under them are never freed (proc.c
   * keeps them with the dead loop); their processes were killed then. */
  for (Contain *c = contain_list; c != NULL; c = c->next) {
    if (c->cg != NULL && cgroup_set_remove(c->cg)) {
      cgroup_set_free(c->cg);
      c->cg = NULL;
    }
  }
  if (contain_npending > 0)
    contain_retry_pending();
  for (size_t i = 0; i < contain_npending; i++)
    cgroup_set_free(contain_pending_sets[i]);
  if (contain_npending > 0)
    LOG_WARN("contain", "%zu monitor cgroup(s) still had a member at exit and were left",
             contain_npending);
  free(contain_pending_sets);
  contain_pending_sets = NULL;
  contain_npending = contain_pending_cap = 0;
  pidlist_free(&contain_doomed);
  cgroup_shutdown();
}
