/*
 * The /proc snapshot that one round of the loop shares (contain_internal.h).
 *
 * Without a cgroup (VIGIL_CGROUP=none, or a machine without one), finding a
 * monitor's processes means walking /proc: every process's stat line read
 * to build the tree. Each ending walked it again, so 1000 monitors ending
 * together read /proc/PID/stat about a million times, and the last ending
 * came seconds after the last child (issue 27, bench/scale). Here the walk
 * and the engine's list of children (and of its monitors' own children,
 * sorted) are taken once per round of the loop and shared by every ending
 * (and every signal) of that round.
 *
 * A round is what runs at one value of uv_now(loop): libuv updates that time
 * once per iteration, before the callbacks of what the poll returned, so the
 * keeper messages, SIGCHLDs and requests handled together share one walk.
 * (Two iterations inside one millisecond share it too: the snapshot is then
 * at most that much older.)
 *
 * Why a snapshot a little old is still safe: a monitor's processes are
 * signalled by their group and session (killpg, and reaper_collect's
 * group and session ids), which a fork inherits; a process forked after the
 * walk by a member that is then killed is orphaned, re-parented to the
 * subreaper (the engine, or the monitor's keeper) and killed by the next
 * sweep, since its monitor has ended (orphans.c, contain_sweep). The sweep
 * itself always reads the children afresh: it is what reaps.
 */
#include "proc/contain_internal.h"

#include <stdlib.h>
#include <string.h>

static struct {
  const uv_loop_t *loop;  /* the round's loop, NULL: none taken */
  uint64_t at;            /* its uv_now */
  bool have_procs, have_children, have_leaders;
  ReaperTable procs;
  PidList children;
  PidList leaders;
} contain_round;

static uint64_t contain_round_walks;

/* Starts a new round when loop's time has moved on since the last. */
static void
contain_round_at(uv_loop_t *loop)
{
  uint64_t now = uv_now(loop);
  if (contain_round.loop == loop && contain_round.at == now)
    return;
  contain_round.loop = loop;
  contain_round.at = now;
  contain_round.have_procs = contain_round.have_children = contain_round.have_leaders = false;
  pidlist_free(&contain_round.children);
  pidlist_free(&contain_round.leaders);
}

/* See contain_internal.h. */
ReaperTable *
contain__round_procs(uv_loop_t *loop)
{
  contain_round_at(loop);
  if (!contain_round.have_procs) {
    reaper_scan(&contain_round.procs);
    contain_round.have_procs = true;
    contain_round_walks++;
  }
  return &contain_round.procs;
}

/* See contain_internal.h. */
const PidList *
contain__round_children(uv_loop_t *loop)
{
  contain_round_at(loop);
  if (!contain_round.have_children) {
    reaper_children(&contain_round.children);
    contain_round.have_children = true;
  }
  return &contain_round.children;
}

/* See contain_internal.h. */
const PidList *
contain__round_leaders(uv_loop_t *loop, void (*fill)(PidList *out))
{
  contain_round_at(loop);
  if (!contain_round.have_leaders) {
    fill(&contain_round.leaders);
    contain_round.have_leaders = true;
  }
  return &contain_round.leaders;
}

/* See contain_internal.h. */
uint64_t
contain__round_walks(void)
{
  return contain_round_walks;
}

/* See contain_internal.h. */
void
contain__round_free(void)
{
  reaper_table_free(&contain_round.procs);
  pidlist_free(&contain_round.children);
  pidlist_free(&contain_round.leaders);
  memset(&contain_round, 0, sizeof contain_round);
}
