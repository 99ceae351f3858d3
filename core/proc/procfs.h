/*
 * Reading the kernel's small text files: /proc/PID/stat, /proc/PID/io, a
 * cgroup's cpu.stat or cgroup.procs, /proc/sys values. Every one of them is
 * read the same way (open close-on-exec, read to EOF or to a bound, retry on
 * EINTR, never block on anything but the read) and most hold "key value"
 * lines or a list of pids, so the reading and the parsing live here once,
 * for proc.c, reaper.c and cgroup.c alike.
 *
 * It also holds PidList, the growable list those pid files are read into,
 * which reaper.h and cgroup.h hand to their callers.
 */
#ifndef VIGIL_PROCFS_H
#define VIGIL_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A growable list of pids. */
typedef struct {
  pid_t *pids;
  size_t n;
  size_t cap;
} PidList;

void pidlist_add(PidList *l, pid_t pid);
bool pidlist_has(const PidList *l, pid_t pid);
void pidlist_free(PidList *l);

/* Reads up to cap-1 bytes of path into buf, NUL-terminated (buf is "" when
 * the file cannot be opened). Returns the length, or -1 with errno set when
 * it cannot be opened. */
ssize_t procfs_read(const char *path, char *buf, size_t cap);

/* procfs_read of /proc/PID/NAME. */
ssize_t procfs_read_pid(pid_t pid, const char *name, char *buf, size_t cap);

/* Appends every pid a file lists (numbers separated by spaces or newlines,
 * as cgroup.procs and /proc/.../children hold them). The file is read in
 * chunks, so a list of any length is read whole. Returns false when the
 * file cannot be opened. */
bool procfs_read_pids(const char *path, PidList *out);

/* The number after `key` on the line of text that starts with key followed
 * by a space or a tab ("rchar: 12", "usage_usec 34", "VmHWM:\t56 kB"), or
 * 0 when there is no such line. */
uint64_t procfs_value(const char *text, const char *key);

#endif
