/*
 * The duty-cycle CPU limiter, for a monitor with a cpu_limit where no cgroup
 * can cap its CPU (what the `cpulimit` tool does): a timer samples the CPU
 * time the monitor's processes have used, and pauses them (SIGSTOP or a
 * cgroup freeze, the caller's choice) for as long as it takes the allowance
 * of `cores` CPU-seconds per second to catch up, then resumes them.
 *
 * The controller (cpulimit_step) is pure: it is handed the time and the CPU
 * used so far, and says whether the processes should run and when to look
 * again. It keeps a debt: CPU used minus the allowance since the start. At
 * or below zero the processes run and it looks again after
 * CPULIMIT_PERIOD_MS; above zero they pause for debt / cores (at most
 * CPULIMIT_MAX_PAUSE_MS at a time). Unused allowance is kept for one period
 * at most, so an idle process cannot save up a burst.
 *
 * Precision: between two samples the processes run unchecked, so at any
 * moment they may be ahead of their allowance by up to CPULIMIT_PERIOD_MS of
 * CPU per busy thread (the next pause pays it back). Over a window of W
 * seconds their share is at most the limit + threads x 0.1 / W: one busy
 * thread under 0.2 gets at most 0.233 over 3 s, 0.21 over 10 s, and a
 * process that ends right after a run never pays for that last run. The
 * CPU figures are exact (cgroup cpu.stat, in us) or in clock ticks of 10 ms
 * (/proc). A process paused by SIGSTOP can see it (its parent's waitpid
 * with WUNTRACED); a frozen cgroup cannot be seen.
 *
 * The timer exists only while a limited monitor runs: an engine with none
 * has no periodic wake-up.
 */
#ifndef VIGIL_CPULIMIT_H
#define VIGIL_CPULIMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define CPULIMIT_PERIOD_MS 100
#define CPULIMIT_MAX_PAUSE_MS 1000

typedef struct {
  double cores;
  bool primed;            /* a first sample has been taken */
  bool paused;
  uint64_t last_ns;       /* when the last sample was taken */
  uint64_t last_usage_ns; /* CPU used at the last sample */
  int64_t debt_ns;        /* CPU used beyond the allowance; negative: credit */
} CpuLimitState;

typedef struct {
  bool pause;             /* whether the processes should be paused now */
  uint64_t next_ms;       /* when to sample again */
} CpuLimitStep;

void cpulimit_state_init(CpuLimitState *s, double cores);

/* Takes a sample: now_ns (monotonic) and usage_ns (CPU used so far by the
 * processes; a lower figure than last time, as when a process whose time
 * was counted is reaped by someone else, counts as no use). */
CpuLimitStep cpulimit_step(CpuLimitState *s, uint64_t now_ns, uint64_t usage_ns);

typedef struct {
  /* CPU time the processes have used so far, in ns; false when unknown. */
  bool (*usage_ns)(void *ctx, uint64_t *ns);
  /* Pauses (true) or resumes (false) the processes. */
  void (*pause)(void *ctx, bool paused);
} CpuLimitOps;

typedef struct CpuLimit CpuLimit;

/* Starts limiting on loop: samples at once, then as cpulimit_step says.
 * ops and ctx must stay valid until cpulimit_stop. */
CpuLimit *cpulimit_start(uv_loop_t *loop, double cores, const CpuLimitOps *ops, void *ctx);

/* Stops limiting: resumes the processes if they are paused, and frees the
 * limiter (its timer is closed, its memory goes in the close callback).
 * No call into ops follows. NULL is fine. */
void cpulimit_stop(CpuLimit *cl);

/* How many times the processes were paused. */
uint64_t cpulimit_pauses(const CpuLimit *cl);

#endif
