/*
 * The spool file (see spool.h). The header's fixed part is checked by a
 * 64-bit FNV-1a sum: it catches a garbled or foreign file, not an attacker
 * (the directory is private to the engine's user, statedir.c). The two
 * counters change with every append, so they are checked by how they
 * relate (cut <= head) instead of a sum.
 *
 * The data is mapped whole and never copied to the heap: reads return
 * spans into the mapping, as capture_read returns spans into its buffer.
 *
 * The blocks under the data are reserved SPOOL_RESERVE_STEP (a page) of
 * the file at a time ahead of the head while the spool fills the first time (after that every
 * byte has its block): a spool that wrote little still holds little, and
 * no write through the mapping ever meets a full file system. The header's
 * page is reserved when the spool is made; a checkpoint, an event log or
 * an engine writing the same file system may still take the room the next
 * step needs, and then the spool breaks (spool.h), which its owner sees
 * as a false spool_append.
 */
#include "pipeline/spool.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mapfile.h"

static const char spool_magic[8] = {'V', 'I', 'G', 'L', 'S', 'P', 'O', 'L'};

struct SpoolHeader {
  char magic[8];
  uint32_t version;
  uint32_t stream;
  uint64_t cap;
  uint64_t sum;  /* FNV-1a of the fields above */
  uint64_t head; /* bytes ever appended */
  uint64_t cut;  /* processed by an engine up to here */
};

/* FNV-1a over the header's fixed fields. */
static uint64_t
spool_sum(const SpoolHeader *h)
{
  uint64_t x = 0xcbf29ce484222325ULL;
  const unsigned char *p = (const unsigned char *)h;
  for (size_t i = 0; i < offsetof(SpoolHeader, sum); i++) {
    x ^= p[i];
    x *= 0x100000001b3ULL;
  }
  return x;
}

_Static_assert(sizeof(SpoolHeader) <= SPOOL_OWNER_OFFSET, "the header's fields fit before the "
               "owner's part");
_Static_assert(SPOOL_OWNER_OFFSET + SPOOL_OWNER_BYTES <= SPOOL_HEADER_BYTES,
               "the owner's part fits the header");

/* The header's size a spool of version v has. */
static size_t
spool_header_bytes(uint32_t version)
{
  return version == 1 ? SPOOL_HEADER_V1_BYTES : SPOOL_HEADER_BYTES;
}

/* Sets s up for the opened file fd of version's header and cap bytes,
 * not mapped yet (spool_mapped maps it at its first use). */
static void
spool_setup(Spool *s, int fd, uint32_t version, uint64_t cap)
{
  s->fd = fd;
  s->header = spool_header_bytes(version);
  s->version = version;
  s->cap = cap;
}

/* Breaks the spool (spool.h): the first reason is kept. lost: pages of the
 * mapping are gone, so what it kept cannot be read either. */
static void __attribute__((format(printf, 3, 4)))
spool_break(Spool *s, bool lost, const char *fmt, ...)
{
  s->map_lost = s->map_lost || lost;
  if (s->broken)
    return;
  s->broken = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->why, sizeof s->why, fmt, ap);
  va_end(ap);
}

/* Maps the file (header and data, shared) unless it is mapped already.
 * The mapping is made at the first append, read of a byte, cut or owner's
 * area, never at spool_create or spool_open: a stream that never writes
 * (a quiet monitor's stderr) costs no page of the engine's memory, and a
 * keeper that drains one stream maps one file. Whether it is mapped; a
 * mapping that cannot be made breaks the spool. */
static bool
spool_mapped(Spool *s)
{
  if (s->map != NULL)
    return true;
  if (s->fd < 0 || s->map_lost)
    return false;
  size_t bytes = s->header + (size_t)s->cap;
  void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
  if (map == MAP_FAILED) {
    spool_break(s, true, "it cannot be mapped: %s", strerror(errno));
    return false;
  }
  s->map = map;
  s->h = map;
  s->data = s->map + s->header;
  s->guard = mapfile_guard(map, bytes);
  return true;
}

/* Breaks the spool when its mapping took a SIGBUS (mapfile.h). Whether it
 * is whole. */
static bool
spool_whole(Spool *s)
{
  if (mapfile_hit(s->guard))
    spool_break(s, true, "its file was cut short under it (a SIGBUS caught)");
  return !s->map_lost;
}

/* Reserves the blocks of the data's bytes up to upto (at most cap), a step
 * at a time. Whether they are there; else the spool is broken. */
static bool
spool_reserve(Spool *s, uint64_t upto)
{
  uint64_t need = upto < s->cap ? upto : s->cap;
  if (need <= s->reserved)
    return true;
  /* To the end of a step of the file (the header before the data counts),
   * so the last block reserved is one the data will fill. */
  uint64_t end = (s->header + need + SPOOL_RESERVE_STEP - 1) / SPOOL_RESERVE_STEP *
                 SPOOL_RESERVE_STEP;
  uint64_t to = end - s->header;
  if (to > s->cap)
    to = s->cap;
  int e = mapfile_reserve(s->fd, s->header + s->reserved, to - s->reserved);
  if (e != 0) {
    spool_break(s, false, "no room to grow it: %s", strerror(e));
    return false;
  }
  s->reserved = to;
  return true;
}

/* An empty spool structure (no file). */
static void
spool_clear(Spool *s)
{
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->guard = -1;
  s->dir_fd = -1;
}

/* See spool.h. */
void
spool_defer(Spool *s, int dir_fd, const char *name, int stream, uint64_t cap)
{
  assert(s != NULL && name != NULL && cap >= SPOOL_MIN_CAP && cap <= SPOOL_MAX_CAP);
  assert(stream == 0 || stream == 1);
  spool_clear(s);
  s->deferred = true;
  s->dir_fd = dir_fd;
  s->name = name;
  s->stream = stream;
  s->cap = cap;
}

/* See spool.h. */
bool
spool_deferred(const Spool *s)
{
  assert(s != NULL);
  return s->deferred;
}

/* Makes a deferred spool's file (spool_defer): spool_create under
 * name.tmp (one an earlier try left is replaced), then renamed into place.
 * Whether it is made; else the spool is broken, saying why. */
static bool
spool_make_deferred(Spool *s)
{
  char tmp[128];
  int n = snprintf(tmp, sizeof tmp, "%s.tmp", s->name);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    spool_break(s, false, "its file cannot be made: its name is too long");
    return false;
  }
  Spool made;
  VigilError err = VIGIL_ERROR_INIT;
  unlinkat(s->dir_fd, tmp, 0);
  if (spool_create(&made, s->dir_fd, tmp, s->stream, s->cap, &err) != 0) {
    spool_break(s, false, "its file cannot be made: %s", err.msg);
    return false;
  }
  if (made.broken || renameat(s->dir_fd, tmp, s->dir_fd, s->name) != 0) {
    if (!made.broken)
      spool_break(&made, false, "its file cannot be made: rename: %s", strerror(errno));
    spool_break(s, false, "%s", made.why);
    spool_close(&made);
    unlinkat(s->dir_fd, tmp, 0);
    return false;
  }
  uint64_t unkept = s->unkept;
  *s = made;
  s->unkept = unkept;
  return true;
}

/* See spool.h. */
int
spool_create(Spool *s, int dir_fd, const char *name, int stream, uint64_t cap, VigilError *err)
{
  assert(s != NULL && name != NULL);
  spool_clear(s);
  if (cap < SPOOL_MIN_CAP || cap > SPOOL_MAX_CAP || (stream != 0 && stream != 1))
    return error_set(err, kErrInternal, "spool %s: capacity %llu (bounds %d..%llu) or stream %d",
                     name, (unsigned long long)cap, SPOOL_MIN_CAP,
                     (unsigned long long)SPOOL_MAX_CAP, stream);
  int fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return error_set(err, kErrInternal, "spool %s: cannot create: %s", name, strerror(errno));
  /* ftruncate makes it sparse: no block is used until written. */
  if (ftruncate(fd, (off_t)(SPOOL_HEADER_BYTES + cap)) != 0) {
    error_set(err, kErrInternal, "spool %s: cannot size it: %s", name, strerror(errno));
    goto fail;
  }
  spool_setup(s, fd, SPOOL_VERSION, cap);
  s->stream = stream;
  /* The header's block first: without it the header stays a hole (a
   * keeper or a later engine refuses the file) and the spool is broken
   * from the start. It is written with pwrite, not through a mapping, so
   * that making a spool maps nothing (spool_mapped). */
  int e = mapfile_reserve(fd, 0, SPOOL_HEADER_BYTES);
  SpoolHeader h = {.version = SPOOL_VERSION, .stream = (uint32_t)stream, .cap = cap};
  memcpy(h.magic, spool_magic, sizeof spool_magic);
  h.sum = spool_sum(&h);
  if (e == 0 && pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
    e = errno != 0 ? errno : EIO;
  if (e != 0)
    spool_break(s, false, "no room for its header: %s", strerror(e));
  return 0;
fail:
  close(fd);
  unlinkat(dir_fd, name, 0);
  return -1;
}

/* See spool.h. */
int
spool_open(Spool *s, int dir_fd, const char *name, VigilError *err)
{
  assert(s != NULL && name != NULL);
  spool_clear(s);
  int fd = openat(dir_fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return error_set(err, kErrInternal, "spool %s: cannot open: %s", name, strerror(errno));
  struct stat st;
  SpoolHeader h;
  const char *why = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (st.st_uid != geteuid() || (st.st_mode & 077) != 0 || st.st_nlink != 1)
    why = "not private to this user (owner, mode or links)";
  else if ((uint64_t)st.st_size < SPOOL_HEADER_BYTES ||
           pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
    why = "shorter than its header";
  else if (memcmp(h.magic, spool_magic, sizeof spool_magic) != 0)
    why = "not a spool (bad magic)";
  else if (h.version != SPOOL_VERSION && h.version != 1)
    why = "a spool of another version";
  else if (h.sum != spool_sum(&h))
    why = "its header's checksum does not match";
  else if (h.cap < SPOOL_MIN_CAP || h.cap > SPOOL_MAX_CAP || h.stream > 1)
    why = "its capacity or stream is out of bounds";
  else if ((uint64_t)st.st_size != spool_header_bytes(h.version) + h.cap)
    why = "its size is not what its header declares";
  else if (h.cut > h.head)
    why = "its counters disagree (processed past what was written)";
  else if (h.head > SPOOL_MAX_HEAD)
    why = "its head counts bytes beyond what any stream writes (more than 2^62)";
  if (why != NULL) {
    close(fd);
    return error_set(err, kErrInternal, "spool %s refused: %s", name, why);
  }
  spool_setup(s, fd, h.version, h.cap);
  /* The counters as read: the mapping's may change under a reader only
   * if two writers shared the file, which the keeper protocol rules out.
   * Nothing is taken as reserved: reserving blocks that are there already
   * costs a call and no room. */
  s->stream = (int)h.stream;
  s->head = h.head;
  s->cut = h.cut;
  return 0;
}

/* See spool.h. */
bool
spool_append(Spool *s, const char *data, size_t len)
{
  /* An open spool (made or opened, not closed: its cap is the divisor
   * below), whose counters this process keeps in order, and a text that
   * exists. What the file says was checked by spool_open. */
  assert(s != NULL && (s->fd >= 0 || s->deferred) && s->cap >= SPOOL_MIN_CAP &&
         s->cut <= s->head);
  assert(data != NULL || len == 0);
  if (len > 0 && s->deferred && !s->broken)
    spool_make_deferred(s);
  if (s->broken || !spool_mapped(s) || !spool_whole(s) || !spool_reserve(s, s->head + len)) {
    s->unkept += len;
    return false;
  }
  uint64_t before = s->head;
  if (len > s->cap) {
    /* Only the last cap bytes can be kept; the head moves past the rest. */
    s->head += len - s->cap;
    data += len - s->cap;
    len = (size_t)s->cap;
  }
  size_t at = (size_t)(s->head % s->cap);
  size_t first = (size_t)s->cap - at;
  if (first >= len) {
    memcpy(s->data + at, data, len);
  } else {
    memcpy(s->data + at, data, first);
    memcpy(s->data, data + first, len - first);
  }
  s->head += len;
  s->h->head = s->head;
  if (!spool_whole(s)) {
    /* What was written went to pages with no file behind them. */
    s->unkept += s->head - before;
    s->head = before;
    return false;
  }
  return true;
}

/* See spool.h. */
uint64_t
spool_start(const Spool *s)
{
  assert(s != NULL);
  return s->head > s->cap ? s->head - s->cap : 0;
}

/* See spool.h. Offset o is at o mod cap, so the oldest kept byte is at
 * start mod cap. The file's size is checked first: a page past a file cut
 * short would be a SIGBUS (caught, but then the read would be zeros). */
CaptureSpan
spool_read(Spool *s, uint64_t offset, uint64_t limit)
{
  assert(s != NULL);
  if (s->map == NULL && offset >= s->head)
    /* Nothing to read: no page is mapped for it (spool_mapped). */
    return capture_span(NULL, (size_t)s->cap, 0, s->head, s->head, offset, limit);
  struct stat st;
  if (!s->map_lost && s->fd >= 0 &&
      (fstat(s->fd, &st) != 0 || (uint64_t)st.st_size < s->header + s->cap))
    spool_break(s, true, "its file was cut short under it");
  if (!spool_mapped(s) || !spool_whole(s))
    return capture_span(s->data, (size_t)s->cap, 0, s->head, s->head, offset, limit);
  uint64_t start = spool_start(s);
  return capture_span(s->data, (size_t)s->cap, (size_t)(start % s->cap), start, s->head,
                      offset, limit);
}

/* See spool.h. */
const char *
spool_why(const Spool *s)
{
  assert(s != NULL);
  return s->broken ? s->why : NULL;
}

/* See spool.h. */
bool
spool_readable(const Spool *s)
{
  assert(s != NULL);
  return (s->fd >= 0 || s->deferred) && !s->map_lost &&
         (s->map == NULL || !mapfile_hit(s->guard));
}

/* See spool.h. */
uint64_t
spool_unkept(const Spool *s)
{
  assert(s != NULL);
  return s->unkept;
}

int
spool_stream(const Spool *s)
{
  assert(s != NULL);
  return s->stream;
}

uint64_t
spool_head(const Spool *s)
{
  assert(s != NULL);
  return s->head;
}

uint64_t
spool_cut(const Spool *s)
{
  assert(s != NULL);
  return s->cut;
}

/* See spool.h. */
void
spool_set_cut(Spool *s, uint64_t offset)
{
  assert(s != NULL && s->cut <= s->head);
  if (offset > s->head)
    offset = s->head;
  if (offset <= s->cut)
    return;
  s->cut = offset;
  /* A broken spool's header is left as it was: it may be a hole with no
   * room, or a page with no file. */
  if (!s->broken && spool_mapped(s) && spool_whole(s))
    s->h->cut = offset;
}

/* See spool.h. */
uint64_t
spool_lost(const Spool *s)
{
  assert(s != NULL);
  uint64_t start = spool_start(s);
  return start > s->cut ? start - s->cut : 0;
}

/* See spool.h. A spool broken at its making has a header that may be a
 * hole with no room behind it: nothing is written there. */
void *
spool_owner_area(Spool *s)
{
  assert(s != NULL);
  if (s->version < 2 || !spool_mapped(s) || !spool_readable(s) ||
      memcmp(s->h->magic, spool_magic, sizeof spool_magic) != 0)
    return NULL;
  return s->map + SPOOL_OWNER_OFFSET;
}

/* See spool.h. */
void
spool_close(Spool *s)
{
  assert(s != NULL);
  if (s->map != NULL) {
    mapfile_unguard(s->guard);
    munmap(s->map, s->header + s->cap);
  }
  if (s->fd >= 0)
    close(s->fd);
  spool_clear(s);
}
