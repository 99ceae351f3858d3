/*
 * Containment of one monitored child and its descendants (see contain.h).
 *
 * Every Contain is on one list (contain_internal.h), so an adopted orphan
 * can be matched to its monitor (orphans.c). Nothing here runs
 * periodically except a limited monitor's duty cycle;
 * the rest runs when a monitor starts, is signalled or ends, and at SIGCHLD.
 */
#include "proc/contain.h"
#include "proc/contain_internal.h"

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


Contain *contain__list;
bool contain__ready;
static pid_t contain_pid;          /* the process contain_init ran in */
static uint64_t contain_serial;    /* for tags of children without a monitor */
static uint64_t contain_scans_truncated;
/* Groups of freed Contains whose removal must be retried. */
static CgroupSet **contain_pending_sets;
size_t contain__npending;
static size_t contain_pending_cap;

/* --- start-up ----------------------------------------------------------- */

/* See contain.h. */
void
contain_init(void)
{
  if (contain__ready)
    return;
  contain__ready = true;
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
  orphans__counts(&out->orphans_reaped, &out->orphans_killed);
  out->scans_truncated = contain_scans_truncated;
  out->proc_walks = contain__round_walks();
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

  c->next = contain__list;
  if (contain__list != NULL)
    contain__list->prev = c;
  contain__list = c;
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

/* See contain.h. */
void
contain_set_launching(Contain *c, bool launching)
{
  c->launching = launching;
}

/* Appends every live process of the monitor (the child included): its
 * group's members, or, without one, the /proc walk from the child and the
 * orphans attributed to it; plus those orphans in either case (a process
 * may leave a group where it may write to a higher cgroup.procs, as root
 * may). See contain.h. */
void
contain_members(Contain *c, PidList *out)
{
  contain_members_in(c, NULL, out);
}

/* See contain.h. */
void
contain_members_in(Contain *c, ReaperTable *procs, PidList *out)
{
  PidList orphans = {0};
  orphans__of(c, &orphans);
  if (c->cg != NULL && cgroup_set_tracks(c->cg)) {
    cgroup_set_members(c->cg, out);
    for (size_t i = 0; i < orphans.n; i++) {
      if (!pidlist_has(out, orphans.pids[i]))
        pidlist_add(out, orphans.pids[i]);
    }
  } else {
    /* A caller's table (a list's one walk for every row), else the
     * round's, shared by every ending of this round (contain_round.c). */
    ReaperTable *t = procs != NULL ? procs : contain__round_procs(c->loop);
    if (t->procs == NULL) /* the caller's, not read yet */
      reaper_scan(t);
    if (t->truncated > 0 && contain_scans_truncated++ == 0)
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
    reaper_collect(t, roots.pids, roots.n, &c->leader, 1, out);
    for (size_t i = from; c->keeper > 0 && i < out->n; i++) {
      if (out->pids[i] == c->keeper) {
        out->pids[i] = out->pids[--out->n];
        break;
      }
    }
    pidlist_free(&roots);
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
    orphans__of(c, &orphans);
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
  if (contain__npending == contain_pending_cap) {
    contain_pending_cap = contain_pending_cap ? contain_pending_cap * 2 : 8;
    contain_pending_sets =
        xrealloc(contain_pending_sets, contain_pending_cap * sizeof *contain_pending_sets);
  }
  contain_pending_sets[contain__npending++] = s;
}

/* Retries the removals; frees what is gone. */
/* See contain_internal.h. */
void
contain__retry_pending(void)
{
  size_t k = 0;
  for (size_t i = 0; i < contain__npending; i++) {
    if (cgroup_set_remove(contain_pending_sets[i]))
      cgroup_set_free(contain_pending_sets[i]);
    else
      contain_pending_sets[k++] = contain_pending_sets[i];
  }
  contain__npending = k;
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
  else if (contain__list == c)
    contain__list = c->next;
  if (c->next != NULL)
    c->next->prev = c->prev;
  free(c->env_kv);
  free(c->env);
  free(c);
}

/* See contain.h. Runs at exit (atexit) in the process that set things up,
 * never in a forked child that calls exit(). */
void
contain_shutdown(void)
{
  if (!contain__ready || getpid() != contain_pid)
    return;
  /* Children whose loop was torn down under them are never freed (proc.c
   * keeps them with the dead loop); their processes were killed then. */
  for (Contain *c = contain__list; c != NULL; c = c->next) {
    if (c->cg != NULL && cgroup_set_remove(c->cg)) {
      cgroup_set_free(c->cg);
      c->cg = NULL;
    }
  }
  if (contain__npending > 0)
    contain__retry_pending();
  for (size_t i = 0; i < contain__npending; i++)
    cgroup_set_free(contain_pending_sets[i]);
  if (contain__npending > 0)
    LOG_WARN("contain", "%zu monitor cgroup(s) still had a member at exit and were left",
             contain__npending);
  free(contain_pending_sets);
  contain_pending_sets = NULL;
  contain__npending = contain_pending_cap = 0;
  orphans__free();
  contain__round_free();
  cgroup_shutdown();
}
