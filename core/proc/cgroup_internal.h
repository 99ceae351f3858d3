/*
 * What cgroup.c (the engine's hierarchies, found once) shares with
 * cgroup_set.c (one monitor's groups in them): the names of the v1
 * controllers, reading and writing a group's files, removing a subtree of
 * groups, and the engine's own vigil-PID group of a v1 hierarchy, which
 * exists only while some monitor has a group there. Not for other modules:
 * cgroup.h is the interface.
 */
#ifndef VIGIL_CGROUP_INTERNAL_H
#define VIGIL_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/cgroup.h"
#include "base/error.h"

/* The v1 controllers used for limits, in this order everywhere. */
typedef enum { kV1Pids = 0, kV1Cpu, kV1Memory, kV1Count } CgroupV1;

/* How deep below a monitor's group its members are looked for: a monitored
 * program may make groups of its own (a nested vigild does). */
#define CGROUP_MEMBERS_DEPTH 8

/* dir + "/" + name, in a new string. */
char *cgroup__path(const char *dir, const char *name);
/* Reads dir/name (cap-1 bytes at most) into buf, NUL-terminated. Returns the
 * length, or -1 with errno set. */
ssize_t cgroup__read(const char *dir, const char *name, char *buf, size_t cap);
/* Writes s to dir/name in one write. Returns 0, or -1 with errno set. */
int cgroup__write(const char *dir, const char *name, const char *s);
/* What cgroup__each_subgroup calls for each group: its path and the depth
 * left below it. */
typedef void CgroupVisit(const char *dir, int depth, void *ctx);
/* Calls visit(sub, depth - 1, ctx) for every group directly below dir
 * (nothing when dir cannot be read). */
void cgroup__each_subgroup(const char *dir, int depth, CgroupVisit *visit, void *ctx);
/* Removes the groups below dir (deepest first, depth levels down), then
 * dir. Returns 0 or the errno of rmdir(dir). */
int cgroup__rmdir_tree(const char *dir, int depth);

/* The engine's vigil-PID group in v1 hierarchy i (which cgroup_init found
 * usable), made now if it is not there. Returns its path, or NULL with err
 * set to spawn_failed. */
const char *cgroup__v1_group(CgroupV1 i, VigilError *err);
/* Removes that group again if it is empty, so nothing of the engine stays in
 * a hierarchy no monitor uses now. */
void cgroup__v1_group_release(CgroupV1 i);

#endif
