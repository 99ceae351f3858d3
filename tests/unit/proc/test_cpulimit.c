/*
 * The duty-cycle controller on a fake clock: a simulated process that uses
 * `threads` cores while it runs and nothing while paused, sampled when the
 * controller asks. The share it gets over a window is what cpu_limit
 * promises; an idle process is never paused and cannot save up a burst.
 * (test_contain holds real burners to their share through the timer.)
 */
#include <stdio.h>

#include "check.h"
#include "proc/cpulimit.h"

#define MS 1000000ull

typedef struct {
  CpuLimitState s;
  uint64_t now;       /* ns */
  uint64_t usage;     /* ns of CPU used */
  bool paused;
  uint64_t pauses;
  uint64_t longest_run; /* longest stretch unpaused, ns */
} Sim;

/* Runs the simulated process for `ms` of fake time: busy with `threads`
 * cores when not paused (idle when threads is 0). */
static void
sim_run(Sim *sim, double threads, uint64_t ms)
{
  uint64_t end = sim->now + ms * MS;
  uint64_t run_start = sim->now;
  while (sim->now < end) {
    CpuLimitStep step = cpulimit_step(&sim->s, sim->now, sim->usage);
    if (step.pause && !sim->paused) {
      sim->pauses++;
      if (sim->now - run_start > sim->longest_run)
        sim->longest_run = sim->now - run_start;
    }
    if (!step.pause && sim->paused)
      run_start = sim->now;
    sim->paused = step.pause;
    CHECK(step.next_ms >= 1 && step.next_ms <= CPULIMIT_MAX_PAUSE_MS);
    uint64_t dt = step.next_ms * MS;
    if (sim->now + dt > end)
      dt = end - sim->now;
    if (!sim->paused)
      sim->usage += (uint64_t)(threads * (double)dt);
    sim->now += dt;
  }
}

static double
sim_share(const Sim *sim, uint64_t usage0, uint64_t now0)
{
  return (double)(sim->usage - usage0) / (double)(sim->now - now0);
}

TEST(a_busy_process_gets_its_share)
{
  const double limits[] = {0.2, 0.5, 1.0, 0.05};
  const double threads[] = {1, 2, 2, 1};
  for (int i = 0; i < 4; i++) {
    Sim sim = {0};
    cpulimit_state_init(&sim.s, limits[i]);
    sim_run(&sim, threads[i], 10000);
    double share = sim_share(&sim, 0, 0);
    printf("  limit %.2f, %g threads: %.4f over 10 s, %llu pauses\n", limits[i], threads[i],
           share, (unsigned long long)sim.pauses);
    /* Within one period's worth of overshoot over 10 s. */
    CHECK(share <= limits[i] * 1.02 + threads[i] * CPULIMIT_PERIOD_MS / 10000.0);
    CHECK(share >= limits[i] * 0.9);
    /* Any 2 s window later on holds too. */
    uint64_t u0 = sim.usage, t0 = sim.now;
    sim_run(&sim, threads[i], 2000);
    CHECK(sim_share(&sim, u0, t0) <= limits[i] + threads[i] * CPULIMIT_PERIOD_MS / 2000.0);
  }
}

TEST(a_process_within_its_limit_is_never_paused)
{
  Sim sim = {0};
  cpulimit_state_init(&sim.s, 1.5);
  sim_run(&sim, 1, 5000); /* one thread under a 1.5-core limit */
  CHECK_INT(sim.pauses, 0);
  Sim idle = {0};
  cpulimit_state_init(&idle.s, 0.1);
  sim_run(&idle, 0, 5000);
  CHECK_INT(idle.pauses, 0);
}

TEST(idle_time_is_not_saved_up_for_a_burst)
{
  /* 5 s idle, then busy on two cores: the first pause comes after at most
   * about one period of credit plus one period of use, not after 5 s x 0.2
   * of saved allowance. */
  Sim sim = {0};
  cpulimit_state_init(&sim.s, 0.2);
  sim_run(&sim, 0, 5000);
  uint64_t u0 = sim.usage;
  CpuLimitStep step;
  int samples = 0;
  for (;;) {
    step = cpulimit_step(&sim.s, sim.now, sim.usage);
    if (step.pause || ++samples == 100)
      break;
    sim.usage += 2 * step.next_ms * MS; /* busy on two cores until the next sample */
    sim.now += step.next_ms * MS;
  }
  CHECK(step.pause);
  CHECK(sim.usage - u0 <= 3 * CPULIMIT_PERIOD_MS * 2 * MS);
}

TEST(usage_that_goes_down_counts_as_none)
{
  /* A process whose time was counted is reaped elsewhere: the sum drops.
   * That is no use, not negative use that would buy a burst. */
  CpuLimitState s;
  cpulimit_state_init(&s, 0.5);
  cpulimit_step(&s, 0, 1000 * MS);
  CpuLimitStep step = cpulimit_step(&s, 100 * MS, 10 * MS);
  CHECK(!step.pause);
  CHECK(s.debt_ns >= -(int64_t)(0.5 * CPULIMIT_PERIOD_MS * MS));
  /* Then 200 ms of CPU in the next 100 ms is over the limit at once. */
  step = cpulimit_step(&s, 200 * MS, 210 * MS);
  CHECK(step.pause);
  CHECK(step.next_ms >= 100); /* (200 - 50 - credit) / 0.5 */
}

int
main(void)
{
  RUN(a_busy_process_gets_its_share);
  RUN(a_process_within_its_limit_is_never_paused);
  RUN(idle_time_is_not_saved_up_for_a_burst);
  RUN(usage_that_goes_down_counts_as_none);
  return check_summary();
}
