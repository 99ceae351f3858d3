/*
 * What the keeper's sources need from the C library and musl 1.2.3 lacks:
 * force-included (-include) into every keeper source only when the keeper
 * is linked against musl (CMakeLists.txt, VIGIL_KEEPER_MUSL), never into a
 * glibc build (and empty there, should it be included: tests/layers
 * compiles every header alone).
 *
 * close_range(2): glibc 2.34 has the wrapper, musl 1.2.3 only the syscall
 * number. proc_child.c checks its result and falls back to a close loop,
 * so a kernel without it (ENOSYS) behaves as under glibc.
 */
#ifndef VIGIL_KEEPER_MUSL_COMPAT_H
#define VIGIL_KEEPER_MUSL_COMPAT_H

#include <sys/syscall.h>
#include <unistd.h>

#ifndef __GLIBC__
static inline int
close_range(unsigned int first, unsigned int last, int flags)
{
  return (int)syscall(SYS_close_range, first, last, flags);
}
#endif

#endif
