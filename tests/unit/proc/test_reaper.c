/*
 * Tests of reaper.c's reading of /proc/PID/stat, which the engine, the
 * tests' support (check.c) and the benchmarks all use: the fields of this
 * very process, its own CPU time apart from its reaped children's, and a
 * scan of /proc that finds it.
 */
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "proc/reaper.h"

/* Runs on the CPU until this process's own user time reaches ms. */
static void
burn_cpu_ms(long ms)
{
  volatile unsigned long x = 0;
  for (;;) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (ru.ru_utime.tv_sec * 1000L + ru.ru_utime.tv_usec / 1000 >= ms)
      return;
    for (int i = 0; i < 100000; i++)
      x += (unsigned long)i;
  }
}

TEST(reads_this_process)
{
  ReaperProc rp;
  CHECK(reaper_read(getpid(), &rp));
  CHECK_INT(rp.pid, getpid());
  CHECK_INT(rp.ppid, getppid());
  CHECK_INT(rp.pgrp, getpgrp());
  CHECK_INT(rp.sid, getsid(0));
  CHECK_INT(rp.state, 'R');
  CHECK(rp.threads >= 1);
  CHECK(!reaper_read(-1, &rp));
}

/* self_ticks is what the process ran itself; cpu_ticks adds its reaped
 * children's, so a benchmark that measures the engine alone reads the
 * first and the CPU limit of a monitor the second. */
TEST(own_cpu_time_apart_from_reaped_children)
{
  long hz = sysconf(_SC_CLK_TCK);
  CHECK(hz > 0);
  burn_cpu_ms(100);
  pid_t child = fork();
  if (child == 0) {
    burn_cpu_ms(300);
    _exit(0);
  }
  int status;
  CHECK_INT(waitpid(child, &status, 0), child);
  ReaperProc rp;
  CHECK(reaper_read(getpid(), &rp));
  /* At least half of what each ran, in ticks (the kernel rounds). */
  CHECK(rp.self_ticks >= (uint64_t)(hz * 100 / 1000 / 2));
  CHECK(rp.cpu_ticks >= rp.self_ticks + (uint64_t)(hz * 300 / 1000 / 2));
}

TEST(a_scan_finds_this_process)
{
  ReaperTable t = {0};
  reaper_scan(&t);
  const ReaperProc *me = reaper_find(&t, getpid());
  CHECK(me != NULL);
  if (me != NULL)
    CHECK_INT(me->pgrp, getpgrp());
  reaper_table_free(&t);
}

int
main(void)
{
  RUN(reads_this_process);
  RUN(own_cpu_time_apart_from_reaped_children);
  RUN(a_scan_finds_this_process);
  return check_summary();
}
