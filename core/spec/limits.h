/*
 * The limits that can end a monitor, by their protocol names
 * ("memory_limit", "max_processes", "cpu_time": docs/protocol.md section 6,
 * `exceeded`). Here, below the process layer, because the pipeline's event
 * log and the session's journal write and read them too, and neither may
 * include proc/.
 */
#ifndef VIGIL_SPEC_LIMITS_H
#define VIGIL_SPEC_LIMITS_H

/* A limit that ended a monitor. */
typedef enum {
  kLimitNone = 0,
  kLimitMemory,    /* "memory_limit": the OOM killer in its memory group */
  kLimitProcesses, /* "max_processes": forks refused at pids.max */
  kLimitCpuTime,   /* "cpu_time": SIGXCPU (an RLIMIT_CPU set outside vigil) */
} LimitKind;

/* The protocol name of a limit ("memory_limit"), NULL for none. */
const char *limit_name(LimitKind limit);
/* The limit a name from limit_name stands for; kLimitNone for NULL or a
 * name that is none (a file read back, say). */
LimitKind limit_by_name(const char *name);

#endif
