/*
 * What contain.c (one monitor's containment) and orphans.c (the engine-wide
 * attribution of adopted orphans) share, and nothing else includes: the
 * Contain record and the list of them all. Names with a double underscore
 * cross files inside proc/ and are not the folder's interface.
 */
#ifndef VIGIL_CONTAIN_INTERNAL_H
#define VIGIL_CONTAIN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/contain.h"
#include "proc/cpulimit.h"
#include "proc/reaper.h"

struct Contain {
  Contain *prev, *next;     /* contain__list */
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
  bool launching;           /* its keeper is being launched off the loop: a child of
                               ours with no pid here yet, which the sweep must
                               attribute (by its tag), not take for a stray */
  bool ended;               /* contain_end ran: what is left is killed on sight */
  CpuLimit *cpulimit;       /* the duty cycle, while it runs */
  PidList stopped;          /* pids the duty cycle stopped with SIGSTOP */
  PidList sample;           /* members found by the last usage sample */
};

/* Every Contain made and not freed; contain_init ran. */
extern Contain *contain__list;
extern bool contain__ready;
/* Groups of freed Contains whose removal is retried at each sweep. */
extern size_t contain__npending;
void contain__retry_pending(void);

/* --- contain_round.c ----------------------------------------------------- */

/* The /proc walk of this round of loop (one per uv_now), taken at the first
 * call of the round and shared by the rest; the caller must not free it. */
ReaperTable *contain__round_procs(uv_loop_t *loop);
/* The engine's children as this round first read them (reaper_children). */
const PidList *contain__round_children(uv_loop_t *loop);
/* The registered children (orphans.c's contain_leaders, which fill makes)
 * as this round first listed them. */
const PidList *contain__round_leaders(uv_loop_t *loop, void (*fill)(PidList *out));
/* How many /proc walks the rounds took, ever (api_info's containment). */
uint64_t contain__round_walks(void);
/* Frees the snapshot (at exit). */
void contain__round_free(void);

/* --- orphans.c ----------------------------------------------------------- */

/* Appends the live adopted orphans attributed to c. */
void orphans__of(Contain *c, PidList *out);
/* The orphans reaped and killed so far (api_info's containment). */
void orphans__counts(uint64_t *reaped, uint64_t *killed);
/* Frees what the sweep keeps (at exit). */
void orphans__free(void);

#endif
