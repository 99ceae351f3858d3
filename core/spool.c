/*
 * The spool file (see spool.h). The header's fixed part is checked by a
 * 64-bit FNV-1a sum: it catches a garbled or foreign file, not an attacker
 * (the directory is private to the engine's user, statedir.c). The two
 * counters change with every append, so they are checked by how they
 * relate (cut <= head) instead of a sum.
 *
 * The data is mapped whole and never copied to the heap: reads return
 * spans into the mapping, as capture_read returns spans into its buffer.
 */
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Maps the opened file of size SPOOL_HEADER_BYTES + cap into s. */
static int
spool_map(Spool *s, int fd, uint64_t cap, const char *name, VigilError *err)
{
  void *map = mmap(NULL, SPOOL_HEADER_BYTES + cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED)
    return error_set(err, kErrInternal, "spool %s: mmap: %s", name, strerror(errno));
  s->fd = fd;
  s->map = map;
  s->h = map;
  s->data = s->map + SPOOL_HEADER_BYTES;
  s->cap = cap;
  return 0;
}

/* See spool.h. */
int
spool_create(Spool *s, int dir_fd, const char *name, int stream, uint64_t cap, VigilError *err)
{
  memset(s, 0, sizeof *s);
  s->fd = -1;
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
  if (spool_map(s, fd, cap, name, err) != 0)
    goto fail;
  memcpy(s->h->magic, spool_magic, sizeof spool_magic);
  s->h->version = SPOOL_VERSION;
  s->h->stream = (uint32_t)stream;
  s->h->cap = cap;
  s->h->sum = spool_sum(s->h);
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
  memset(s, 0, sizeof *s);
  s->fd = -1;
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
  else if (h.version != SPOOL_VERSION)
    why = "a spool of another version";
  else if (h.sum != spool_sum(&h))
    why = "its header's checksum does not match";
  else if (h.cap < SPOOL_MIN_CAP || h.cap > SPOOL_MAX_CAP || h.stream > 1)
    why = "its capacity or stream is out of bounds";
  else if ((uint64_t)st.st_size != SPOOL_HEADER_BYTES + h.cap)
    why = "its size is not what its header declares";
  else if (h.cut > h.head)
    why = "its counters disagree (processed past what was written)";
  if (why != NULL) {
    close(fd);
    return error_set(err, kErrInternal, "spool %s refused: %s", name, why);
  }
  if (spool_map(s, fd, h.cap, name, err) != 0) {
    close(fd);
    return -1;
  }
  return 0;
}

/* See spool.h. */
void
spool_append(Spool *s, const char *data, size_t len)
{
  if (len > s->cap) {
    /* Only the last cap bytes can be kept; the head moves past the rest. */
    s->h->head += len - s->cap;
    data += len - s->cap;
    len = (size_t)s->cap;
  }
  size_t at = (size_t)(s->h->head % s->cap);
  size_t first = (size_t)s->cap - at;
  if (first >= len) {
    memcpy(s->data + at, data, len);
  } else {
    memcpy(s->data + at, data, first);
    memcpy(s->data, data + first, len - first);
  }
  s->h->head += len;
}

/* See spool.h. */
uint64_t
spool_start(const Spool *s)
{
  return s->h->head > s->cap ? s->h->head - s->cap : 0;
}

/* See spool.h. Offset o is at o mod cap, so the oldest kept byte is at
 * start mod cap. */
CaptureSpan
spool_read(const Spool *s, uint64_t offset, uint64_t limit)
{
  uint64_t start = spool_start(s);
  return capture_span(s->data, (size_t)s->cap, (size_t)(start % s->cap), start, s->h->head,
                      offset, limit);
}

int
spool_stream(const Spool *s)
{
  return (int)s->h->stream;
}

uint64_t
spool_head(const Spool *s)
{
  return s->h->head;
}

uint64_t
spool_cut(const Spool *s)
{
  return s->h->cut;
}

/* See spool.h. */
void
spool_set_cut(Spool *s, uint64_t offset)
{
  if (offset > s->h->head)
    offset = s->h->head;
  if (offset > s->h->cut)
    s->h->cut = offset;
}

/* See spool.h. */
uint64_t
spool_lost(const Spool *s)
{
  uint64_t start = spool_start(s);
  return start > s->h->cut ? start - s->h->cut : 0;
}

/* See spool.h. */
void
spool_close(Spool *s)
{
  if (s->map != NULL)
    munmap(s->map, SPOOL_HEADER_BYTES + s->cap);
  if (s->fd >= 0)
    close(s->fd);
  memset(s, 0, sizeof *s);
  s->fd = -1;
}
