/*
 * The pages of a mapped state file (mapfile.h): reserving them, and the
 * SIGBUS handler that stands a private zero page in for one that has no
 * file behind it.
 *
 * Why a replaced page rather than sigsetjmp around each access: a spool's
 * bytes are read in place, as spans that travel far from spool.c (into a
 * reply being packed, through the line splitter and the matchers during a
 * replay), so no jump could leave every one of those consistent. A page
 * replaced under the faulting access lets it finish with zeros, wherever
 * it is; the owners check mapfile_hit at the points where they can give
 * the mapping up (spool.c, eventkeep.c, monitor_keep.c). It costs nothing
 * while nothing fails.
 *
 * The guarded mappings are a table of address ranges the handler reads.
 * It is changed only by the thread that touches the mappings, between
 * accesses, so the handler (which runs in that thread, on a fault of that
 * thread) never sees it half changed; a slot is filled before it is marked
 * used, and the table is swapped whole when it grows.
 */
#include "base/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/memory.h"

typedef struct {
  uintptr_t start, end;
  volatile sig_atomic_t hit;
  volatile sig_atomic_t used;
} MapSlot;

static MapSlot *volatile mapfile_slots;
static volatile size_t mapfile_nslots;
static uintptr_t mapfile_page;
static bool mapfile_installed;
static struct sigaction mapfile_previous;
static volatile uint64_t mapfile_replaced;

int
mapfile_reserve(int fd, uint64_t offset, uint64_t len)
{
  if (len == 0)
    return 0;
  int e;
  do
    e = posix_fallocate(fd, (off_t)offset, (off_t)len);
  while (e == EINTR);
  return e;
}

/* The SIGBUS handler (file comment). Async-signal-safe: it reads the table,
 * makes one mmap system call, and otherwise puts the earlier action back
 * and lets the signal come again (a fault re-executes; a sent signal is
 * raised again), so what is not ours ends as it would have. */
static void
mapfile_on_sigbus(int sig, siginfo_t *si, void *ctx)
{
  (void)ctx;
  if (si->si_code == BUS_ADRERR) {
    uintptr_t at = (uintptr_t)si->si_addr;
    MapSlot *slots = mapfile_slots;
    size_t n = mapfile_nslots;
    for (size_t i = 0; i < n; i++) {
      if (!slots[i].used || at < slots[i].start || at >= slots[i].end)
        continue;
      void *page = (void *)(at & ~(mapfile_page - 1));
      if (mmap(page, (size_t)mapfile_page, PROT_READ | PROT_WRITE,
               MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
        break;
      slots[i].hit = 1;
      mapfile_replaced++;
      return;
    }
  }
  sigaction(sig, &mapfile_previous, NULL);
  if (si->si_code <= 0)
    raise(sig);
}

/* Installs the handler, once. */
static bool
mapfile_install(void)
{
  if (mapfile_installed)
    return true;
  long page = sysconf(_SC_PAGESIZE);
  mapfile_page = page > 0 ? (uintptr_t)page : 4096;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = mapfile_on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGBUS, &sa, &mapfile_previous) != 0)
    return false;
  mapfile_installed = true;
  return true;
}

int
mapfile_guard(void *addr, size_t len)
{
  /* Advice only: a kernel that refuses it reads ahead as before. */
  (void)madvise(addr, len, MADV_RANDOM);
  if (!mapfile_install())
    return -1;
  size_t n = mapfile_nslots;
  size_t i = 0;
  while (i < n && mapfile_slots[i].used)
    i++;
  if (i == n) {
    /* A bigger table, filled, then swapped in whole. */
    size_t grown = n ? n * 2 : 16;
    MapSlot *slots = xcalloc(grown, sizeof *slots);
    if (n)
      memcpy(slots, mapfile_slots, n * sizeof *slots);
    MapSlot *old = mapfile_slots;
    mapfile_slots = slots;
    mapfile_nslots = grown;
    free(old);
  }
  MapSlot *s = &mapfile_slots[i];
  s->start = (uintptr_t)addr;
  s->end = (uintptr_t)addr + len;
  s->hit = 0;
  s->used = 1;
  return (int)i;
}

bool
mapfile_hit(int slot)
{
  return slot >= 0 && (size_t)slot < mapfile_nslots && mapfile_slots[slot].hit;
}

void
mapfile_unguard(int slot)
{
  if (slot >= 0 && (size_t)slot < mapfile_nslots)
    mapfile_slots[slot].used = 0;
}

uint64_t
mapfile_pages_replaced(void)
{
  return mapfile_replaced;
}
