/*
 * The cgroups the engine may use, found once at start-up, and one group per
 * monitor in each of them. A process placed in a group stays there with
 * every descendant, whatever setsid() or double forks it does, so a group
 * gives exact tracking (its member list), an atomic SIGKILL of all of them
 * (cgroup.kill), a freeze, CPU accounting, and the limits of its
 * controllers: pids.max, memory.max, cpu.max.
 *
 * What is looked for, in order:
 *   - cgroup v2 (the unified hierarchy): the engine's own group, from
 *     /proc/self/cgroup, must let it make a sub-group "vigil-PID". Then each
 *     monitor gets vigil-PID/TAG. Where the engine's group offers the cpu,
 *     memory or pids controllers they are enabled for the monitors' groups;
 *     when that needs the engine's group to hold no process (the v2 rule for
 *     a delegated, non-root group) and the engine is alone in it, the engine
 *     moves itself into vigil-PID/daemon first. Without controllers (a v2
 *     hierarchy mounted next to v1 ones) the group still tracks, kills and
 *     freezes.
 *   - cgroup v1 controllers (pids, cpu, memory) for the limits v2 cannot
 *     give: a group ENGINE/vigil-PID/TAG in each hierarchy a monitor needs,
 *     made when it starts and removed when it ends. Without v2, the v1 pids
 *     hierarchy also tracks the members.
 * The mode "auto" uses whatever works; "v2" only the unified hierarchy; "v1"
 * only v1 controllers; "none" nothing (VIGIL_CGROUP chooses, for tests and
 * for hosts whose cgroups should not be touched).
 *
 * A group is removed when its monitor has ended; rmdir fails while a member
 * is still dying, so contain.c retries later. At start-up, the empty groups
 * of engines that are gone (killed with SIGKILL) are removed.
 */
#ifndef VIGIL_CGROUP_H
#define VIGIL_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "proc/reaper.h"

/* The most descriptors a child writes its pid to: one per hierarchy. */
#define CGROUP_JOIN_MAX 4
/* A monitor group's name: [A-Za-z0-9_.-], at most this long. */
#define CGROUP_TAG_MAX 64

typedef struct {
  bool v2;            /* monitors get a v2 group: tracking, kill, freeze */
  bool v2_kill;       /* cgroup.kill exists (Linux 5.14) */
  bool v2_freeze;     /* cgroup.freeze exists (Linux 5.2) */
  bool v2_cpu;        /* controllers enabled for the monitors' v2 groups */
  bool v2_memory;
  bool v2_pids;
  bool v2_moved;      /* the engine moved itself to vigil-PID/daemon */
  bool v1_pids;       /* usable v1 hierarchies */
  bool v1_cpu;
  bool v1_memory;
  bool v1_tracking;   /* no v2: the v1 pids group tracks the members */
  const char *mode;   /* "auto", "v2", "v1" or "none" as asked */
  const char *v2_dir; /* the engine's v2 group, or NULL */
} CgroupInfo;

typedef struct {
  int64_t memory_limit;  /* bytes; 0: none */
  double cpu_limit;      /* cores; 0: none */
  int64_t max_processes; /* 0: none */
} CgroupLimits;

typedef struct CgroupSet CgroupSet;

/* Finds what this process may use (once; later calls do nothing). mode is
 * "auto", "v2", "v1" or "none"; NULL or anything else is "auto" (the
 * caller warns). Never fails: what cannot be used is simply not used. */
void cgroup_init(const char *mode);

/* What cgroup_init found (all false before it). */
const CgroupInfo *cgroup_info(void);

/* Makes the groups of one monitor named tag (a new name, [A-Za-z0-9_.-]),
 * sets the limits the groups can enforce, and opens the files the child
 * writes itself into. Returns NULL with spawn_failed naming the file and
 * the OS error when a group cannot be made or a limit cannot be written
 * (nothing is left behind then). Returns a set with no group at all when
 * nothing is used. */
CgroupSet *cgroup_set_new(const char *tag, const CgroupLimits *lim, VigilError *err);

/* Which of the limits asked for the groups enforce. */
bool cgroup_set_has_memory(const CgroupSet *s);
bool cgroup_set_has_cpu(const CgroupSet *s);
bool cgroup_set_has_pids(const CgroupSet *s);
/* Whether the members can be listed (and so every descendant is tracked). */
bool cgroup_set_tracks(const CgroupSet *s);

/* The descriptors the child writes "0" to, between fork and exec, to enter
 * every group of the set (close-on-exec). Returns how many (at most
 * CGROUP_JOIN_MAX). */
size_t cgroup_set_join_fds(const CgroupSet *s, int *fds);
/* The child has been forked: closes those descriptors in the parent. */
void cgroup_set_joined(CgroupSet *s);

/* Appends every member of the tracking group (none when not tracking). */
void cgroup_set_members(const CgroupSet *s, PidList *out);
/* Sends sig to every member. SIGKILL goes through cgroup.kill where it
 * exists (atomic: a member forking at that moment cannot slip out); else
 * the member list is read and signalled until a round finds no new member
 * (at most a few rounds). */
void cgroup_set_signal(CgroupSet *s, int sig);
/* Freezes (true) or thaws the v2 group. Returns false when it cannot. */
bool cgroup_set_freeze(CgroupSet *s, bool frozen);
/* CPU time used by the members, dead ones included (v2 cpu.stat), in ns.
 * Returns false when the group does not tell. */
bool cgroup_set_cpu_ns(const CgroupSet *s, uint64_t *ns);
/* Processes the OOM killer killed in the groups, and forks pids.max refused. */
void cgroup_set_counters(const CgroupSet *s, uint64_t *oom_kills, uint64_t *forks_refused);

/* Removes the groups. Returns true when every one is gone; false when one
 * still has a member (a process still dying): call again later. */
bool cgroup_set_remove(CgroupSet *s);
/* Frees the set (without removing anything). */
void cgroup_set_free(CgroupSet *s);

/* Whether pid is in a monitor group of this engine (in the tracking
 * hierarchy); if so copies the group's tag into tag (cap bytes). */
bool cgroup_tag_of(pid_t pid, char *tag, size_t cap);

/* Removes the engine's own groups (at exit; what is busy stays). */
void cgroup_shutdown(void);

#endif
