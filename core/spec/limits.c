/*
 * The limits that can end a monitor, by name (see limits.h).
 */
#include "spec/limits.h"

#include <stddef.h>
#include <string.h>

/* See limits.h. */
const char *
limit_name(LimitKind limit)
{
  switch (limit) {
  case kLimitMemory: return "memory_limit";
  case kLimitProcesses: return "max_processes";
  case kLimitCpuTime: return "cpu_time";
  default: return NULL;
  }
}

/* See limits.h. */
LimitKind
limit_by_name(const char *name)
{
  static const LimitKind limits[] = {kLimitMemory, kLimitProcesses, kLimitCpuTime};
  for (size_t i = 0; name != NULL && i < sizeof limits / sizeof *limits; i++)
    if (strcmp(limit_name(limits[i]), name) == 0)
      return limits[i];
  return kLimitNone;
}
