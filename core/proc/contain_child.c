/*
 * What a monitored child does about its containment between fork and exec
 * (contain.h): join its cgroups and take its rlimits. Apart from the rest
 * of contain.c because the keeper (keeper/keeper.c) runs it too, in the
 * child it forks, and links nothing else of the engine's containment.
 */
#include "proc/contain.h"

#include <errno.h>
#include <sys/resource.h>
#include <unistd.h>

/* See contain.h. write, setrlimit: async-signal-safe. */
int
contain_child_enter(const ContainChild *cc)
{
  for (size_t i = 0; i < cc->njoin; i++) {
    ssize_t n;
    do
      n = write(cc->join_fds[i], "0", 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
      return kContainStepCgroup;
  }
  if (cc->rlimit_as > 0) {
    struct rlimit rl = {(rlim_t)cc->rlimit_as, (rlim_t)cc->rlimit_as};
    if (setrlimit(RLIMIT_AS, &rl) != 0)
      return kContainStepRlimitAs;
  }
  if (cc->rlimit_nproc > 0) {
    struct rlimit rl = {(rlim_t)cc->rlimit_nproc, (rlim_t)cc->rlimit_nproc};
    if (setrlimit(RLIMIT_NPROC, &rl) != 0)
      return kContainStepRlimitNproc;
  }
  return 0;
}

const char *
contain_step_name(int step)
{
  switch (step) {
  case kContainStepCgroup: return "joining its cgroup";
  case kContainStepRlimitAs: return "setrlimit(RLIMIT_AS)";
  case kContainStepRlimitNproc: return "setrlimit(RLIMIT_NPROC)";
  default: return "containment";
  }
}
