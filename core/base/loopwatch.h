/*
 * How long the engine's loop is busy between two waits, turn by turn: the
 * figure behind "nothing blocks the loop". A turn's busy time is the wall
 * time from one wait's end (epoll returning) to the next wait's start, read
 * with libuv's idle-time metric; beside it the loop thread's own CPU time
 * over the same turn. A turn long by the wall clock but short in CPU was the
 * loop waiting: for a CPU (the machine is loaded) or in a system call that
 * slept (a file system, a cgroup); long in both, it was the engine's own
 * work. Counted, never logged: the counters go out in api_info's "loop".
 */
#ifndef VIGIL_LOOPWATCH_H
#define VIGIL_LOOPWATCH_H

#include <stdint.h>
#include <uv.h>

/* The thresholds, in ms, of LoopWatchStats' turns_over counts. */
#define LOOPWATCH_THRESHOLDS 5
extern const unsigned loopwatch_threshold_ms[LOOPWATCH_THRESHOLDS];

typedef struct {
  uint64_t turns;                                /* turns measured */
  uint64_t busy_ms;                              /* wall time busy, all turns */
  double longest_ms;                             /* the longest turn, wall */
  double longest_cpu_ms;                         /* the most CPU one turn took */
  uint64_t over[LOOPWATCH_THRESHOLDS];           /* turns busier than each threshold, wall */
  uint64_t over_cpu[LOOPWATCH_THRESHOLDS];       /* the same by the thread's CPU time */
} LoopWatchStats;

/* Configures loop to account its idle time (before it first runs, as libuv
 * requires) and starts watching it. Returns 0 or a libuv error; a loop
 * that cannot be watched runs as before, with zero counts. */
int loopwatch_start(uv_loop_t *loop);

/* The counts so far (zero before loopwatch_start). */
void loopwatch_stats(LoopWatchStats *out);

/* Closes the watch's handle (at shutdown, so uv_loop_close finds none). */
void loopwatch_stop(void);

#endif
