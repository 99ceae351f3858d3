/*
 * The pages of a state file mapped shared (a spool, a checkpoint, the kept
 * event log): the two ways a page of such a mapping can fail the process
 * that touches it, and what is done about each (docs/restart.md, "When the
 * state directory fails").
 *
 * No room: the files are sparse, so a page gets its block when it is first
 * written, through the mapping, where a full file system can only answer
 * with SIGBUS. So an owner reserves the blocks (mapfile_reserve, which is
 * posix_fallocate) before it writes a range for the first time: a full
 * file system is then an error it is told, at a point where it can stop
 * keeping and count instead.
 *
 * No file: a file cut short under its mapping (truncated by its user, or a
 * disk error; a copy-on-write file system that finds no room for a page
 * written again) turns the next touch of a page past its end into SIGBUS.
 * That cannot be checked for before every access, so it is caught: a
 * guarded mapping (mapfile_guard) that takes a SIGBUS has the page
 * replaced by a private zero page, the access is retried and succeeds,
 * and the owner finds the mapping hit (mapfile_hit) and stops using it.
 * A SIGBUS anywhere else is not ours: it gets the action it had before.
 */
#ifndef VIGIL_MAPFILE_H
#define VIGIL_MAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reserves the blocks of fd's bytes [offset, offset + len) (posix_fallocate:
 * the file does not shrink, and grows only to offset + len). Returns 0 or
 * the error (ENOSPC, EDQUOT, EFBIG, EIO...). */
int mapfile_reserve(int fd, uint64_t offset, uint64_t len);

/* Guards the mapping [addr, addr + len) (installing the SIGBUS handler the
 * first time). Returns its slot, or -1 when the handler could not be
 * installed (the mapping is then as unguarded as before). Only the thread
 * that guards, unguards and touches the mappings (the loop's) may rely on
 * the guard. It also turns the mapping's readahead off (MADV_RANDOM): a
 * state file is written a page at a time, and the first touch of a fresh
 * sparse file otherwise reads (zero-fills) a whole readahead window of
 * holes into the page cache, and maps it: 70% of a start's CPU and tens of
 * KiB per monitor (bench/capacity, issue 27). */
int mapfile_guard(void *addr, size_t len);

/* Whether the guarded mapping in slot has taken a SIGBUS (some of its pages
 * are private zero pages now: what they held is gone, and what is written
 * there goes nowhere). False for slot -1. */
bool mapfile_hit(int slot);

/* Forgets slot (before its mapping is unmapped). -1 is ignored. */
void mapfile_unguard(int slot);

/* Pages replaced after a SIGBUS since start, in every mapping. */
uint64_t mapfile_pages_replaced(void);

#endif
