/*
 * The engine-wide half of containment: children the engine adopted as a
 * subreaper (orphans of some monitor's processes) are attributed to their
 * monitor by cgroup name, by session or group id, or by VIGIL_MONITOR_ID in
 * their environment; those whose monitor has ended are killed, and every
 * one is reaped (contain_sweep, at SIGCHLD). One monitor's own containment
 * is contain.c's; they share the list of Contains (contain_internal.h).
 */
#include "proc/contain.h"
#include "proc/contain_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/memory.h"
#include "proc/cgroup.h"

/* The most of /proc/PID/environ read when looking for VIGIL_MONITOR_ID. The
 * variable comes after the engine's own environment (a few KiB as a rule),
 * so this is generous; it bounds what a process with a huge environment
 * costs each sweep. */
#define CONTAIN_ENVIRON_MAX (256 * 1024)

static size_t contain_last_adopted;
static uint64_t contain_reaped, contain_killed;
/* Orphans killed and not yet reaped (a sweep meets them again while they
 * die: they are counted once). Our own children, so bounded by them. */
static PidList contain_doomed;


/* The registered Contain with this tag (group: with this cgroup name),
 * or NULL. */
static Contain *
contain_by_tag(const char *tag, bool group)
{
  for (Contain *c = contain__list; c != NULL; c = c->next) {
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
  for (Contain *c = contain__list; c != NULL; c = c->next) {
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
  for (Contain *c = contain__list; c != NULL; c = c->next)
    n += (c->leader > 0 || c->launching) && !c->ended;
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
  for (Contain *c = contain__list; c != NULL; c = c->next) {
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

/* See contain_internal.h. */
void
orphans__of(Contain *c, PidList *out)
{
  /* The round's list of children (contain_round.c): an orphan adopted
   * since is the next sweep's, which kills it once its monitor ended. */
  const PidList *kids = contain__round_children(c->loop);
  const PidList *leaders = contain__round_leaders(c->loop, contain_leaders);
  pid_t own_sid = getsid(0);
  for (size_t i = 0; i < kids->n; i++) {
    ReaperProc rp;
    bool stale;
    if (contain_adopted_orphan(leaders, kids->pids[i], own_sid, &rp) && rp.state != 'Z' &&
        contain_owner(kids->pids[i], &rp, &stale) == c)
      pidlist_add(out, kids->pids[i]);
  }
}

/* See contain_internal.h. */
void
orphans__counts(uint64_t *reaped, uint64_t *killed)
{
  *reaped = contain_reaped;
  *killed = contain_killed;
}

/* See contain_internal.h. */
void
orphans__free(void)
{
  pidlist_free(&contain_doomed);
}


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
  if (!contain__ready)
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
  if (contain__npending > 0)
    contain__retry_pending();
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
  return contain__npending > 0;
}
