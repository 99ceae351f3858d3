/*
 * The state directory's files (statefile.h): the header, the write through
 * a temporary name, the checked open and read, setting a bad file aside,
 * and the msgpack field readers every kind of state file uses.
 *
 * aside/ is bounded (STATEFILE_ASIDE_KEEP entries): setting one more aside
 * removes the oldest, so a file that is set aside at every start (a disk
 * that garbles it) cannot fill the directory. Each removal is logged.
 */
#include "store/statefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fdcloser.h"
#include "base/log.h"
#include "base/memory.h"

/* How many files aside/ keeps; the oldest goes first. */
#define STATEFILE_ASIDE_KEEP 32

uint64_t
statefile_sum(const void *p, size_t n)
{
  const unsigned char *b = p;
  uint64_t x = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    x ^= b[i];
    x *= 0x100000001b3ULL;
  }
  return x;
}

/* Writes all of p to fd (a regular file: short writes only on error). */
static bool
statefile_write_all(int fd, const void *p, size_t n)
{
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

int
statefile_write(int dir_fd, const char *name, const char magic[8], uint32_t version,
                const void *body, size_t len, const char *what, VigilError *err)
{
  char head[STATEFILE_HEADER], tmp[512];
  uint32_t len32 = (uint32_t)len;
  uint64_t sum = statefile_sum(body, len);
  memcpy(head, magic, 8);
  memcpy(head + 8, &version, 4);
  memcpy(head + 12, &len32, 4);
  memcpy(head + 16, &sum, 8);
  snprintf(tmp, sizeof tmp, "%s.tmp", name);
  unlinkat(dir_fd, tmp, 0);
  int fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && len <= UINT32_MAX && statefile_write_all(fd, head, sizeof head) &&
            statefile_write_all(fd, body, len);
  int saved = errno;
  if (fd >= 0 && close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  /* The file replaced is held open across the rename, so that freeing its
   * blocks (which may wait for the disk: 989 waits on the loop in a burst
   * of 1000 starts, each rewriting its spec) is the pool's close
   * (fdcloser.h), not the rename's. */
  int old = ok ? fdcloser_open_held(dir_fd, name) : -1;
  if (ok && renameat(dir_fd, tmp, dir_fd, name) != 0) {
    ok = false;
    saved = errno;
  }
  if (old >= 0)
    fdcloser_close(old);
  if (!ok) {
    unlinkat(dir_fd, tmp, 0);
    return error_set(err, kErrInternal, "%s: cannot write %s: %s", what, name, strerror(saved));
  }
  return 0;
}

int
statefile_open(int dir_fd, const char *name, size_t max_bytes, const char *what, size_t *size,
               VigilError *err)
{
  int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error_set(err, kErrInvalidParams, "%s: cannot open %s: %s", what, name, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 077) != 0 || (uint64_t)st.st_size > max_bytes) {
    close(fd);
    error_set(err, kErrInvalidParams,
              "%s: %s is not a private regular file of this user of at most %zu bytes", what,
              name, max_bytes);
    return -1;
  }
  *size = (size_t)st.st_size;
  return fd;
}

size_t
statefile_read_fd(int fd, size_t size, char **out)
{
  char *buf = xmalloc(size + 1);
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, buf + got, size - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  *out = buf;
  return got;
}

int
statefile_read(int dir_fd, const char *name, const char magic[8], uint32_t version,
               size_t max_bytes, const char *what, char **body, size_t *len, VigilError *err)
{
  size_t size = 0;
  int fd = statefile_open(dir_fd, name, max_bytes, what, &size, err);
  if (fd < 0)
    return -1;
  char *buf = NULL;
  size_t got = statefile_read_fd(fd, size, &buf);
  close(fd);
  uint32_t v = 0, l = 0;
  uint64_t sum = 0;
  if (got >= STATEFILE_HEADER) {
    memcpy(&v, buf + 8, 4);
    memcpy(&l, buf + 12, 4);
    memcpy(&sum, buf + 16, 8);
  }
  if (got < STATEFILE_HEADER || memcmp(buf, magic, 8) != 0 || v != version ||
      (size_t)l != got - STATEFILE_HEADER ||
      statefile_sum(buf + STATEFILE_HEADER, l) != sum) {
    free(buf);
    return error_set(err, kErrInvalidParams, "%s: %s is not a vigil %s of version %u, or torn "
                     "(its magic, length or sum does not match)", what, name, what, version);
  }
  memmove(buf, buf + STATEFILE_HEADER, l);
  *body = buf;
  *len = l;
  return 0;
}

/* Removes the oldest entries of aside/ past STATEFILE_ASIDE_KEEP. */
static void
statefile_prune_aside(int aside_fd)
{
  for (;;) {
    int dup_fd = fcntl(aside_fd, F_DUPFD_CLOEXEC, 3);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (d == NULL) {
      if (dup_fd >= 0)
        close(dup_fd);
      return;
    }
    size_t count = 0;
    char oldest[256] = "";
    struct timespec oldest_at = {0, 0};
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      struct stat st;
      if (de->d_name[0] == '.' || fstatat(aside_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      count++;
      if (oldest[0] == '\0' || st.st_mtim.tv_sec < oldest_at.tv_sec ||
          (st.st_mtim.tv_sec == oldest_at.tv_sec && st.st_mtim.tv_nsec < oldest_at.tv_nsec)) {
        snprintf(oldest, sizeof oldest, "%s", de->d_name);
        oldest_at = st.st_mtim;
      }
    }
    closedir(d);
    if (count <= STATEFILE_ASIDE_KEEP || oldest[0] == '\0' || unlinkat(aside_fd, oldest, 0) != 0)
      return;
    LOG_INFO("state", "aside/%s removed: aside keeps the last %d files set aside", oldest,
             STATEFILE_ASIDE_KEEP);
  }
}

void
statefile_set_aside(int state_fd, int dir_fd, const char *name, const char *as, char *out,
                    size_t size)
{
  if (size > 0)
    out[0] = '\0';
  if (mkdirat(state_fd, STATEFILE_ASIDE_NAME, 0700) != 0 && errno != EEXIST) {
    unlinkat(dir_fd, name, 0);
    return;
  }
  int aside_fd = openat(state_fd, STATEFILE_ASIDE_NAME,
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (aside_fd < 0 || fstat(aside_fd, &st) != 0 || st.st_uid != getuid() ||
      (st.st_mode & 077) != 0) {
    if (aside_fd >= 0)
      close(aside_fd);
    unlinkat(dir_fd, name, 0);
    return;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char to[512];
  snprintf(to, sizeof to, "%.400s.%lld.%09ld", as, (long long)now.tv_sec, now.tv_nsec);
  if (renameat(dir_fd, name, aside_fd, to) == 0) {
    snprintf(out, size, "%s/%s", STATEFILE_ASIDE_NAME, to);
    statefile_prune_aside(aside_fd);
  } else {
    unlinkat(dir_fd, name, 0);
  }
  close(aside_fd);
}

/* --- reading a msgpack body ---------------------------------------------- */

const msgpack_object *
statefile_get(const msgpack_object *map, const char *key)
{
  if (map == NULL || map->type != MSGPACK_OBJECT_MAP)
    return NULL;
  size_t n = strlen(key);
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    const msgpack_object_kv *kv = &map->via.map.ptr[i];
    if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == n &&
        memcmp(kv->key.via.str.ptr, key, n) == 0)
      return &kv->val;
  }
  return NULL;
}

bool
statefile_get_str(const char *what, const msgpack_object *map, const char *key, bool nil_ok,
                  char **out, VigilError *err)
{
  const msgpack_object *o = statefile_get(map, key);
  if (o != NULL && o->type == MSGPACK_OBJECT_NIL && nil_ok) {
    *out = NULL;
    return true;
  }
  if (o == NULL || o->type != MSGPACK_OBJECT_STR ||
      memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL) {
    error_set(err, kErrInvalidParams, "%s: %s: missing or not a string", what, key);
    return false;
  }
  *out = xmemdupz(o->via.str.ptr, o->via.str.size);
  return true;
}

bool
statefile_get_strv(const char *what, const msgpack_object *map, const char *key, char ***out,
                   VigilError *err)
{
  const msgpack_object *o = statefile_get(map, key);
  if (o == NULL || o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > 65536) {
    error_set(err, kErrInvalidParams, "%s: %s: missing or not an array", what, key);
    return false;
  }
  char **v = xcalloc(o->via.array.size + 1, sizeof *v);
  *out = v;
  for (uint32_t i = 0; i < o->via.array.size; i++) {
    const msgpack_object *e = &o->via.array.ptr[i];
    if (e->type != MSGPACK_OBJECT_STR || memchr(e->via.str.ptr, '\0', e->via.str.size)) {
      error_set(err, kErrInvalidParams, "%s: %s[%u]: not a string", what, key, i);
      return false;
    }
    v[i] = xmemdupz(e->via.str.ptr, e->via.str.size);
  }
  return true;
}

bool
statefile_get_int(const char *what, const msgpack_object *map, const char *key, int64_t lo,
                  int64_t hi, int64_t *out, VigilError *err)
{
  const msgpack_object *o = statefile_get(map, key);
  int64_t v;
  if (o != NULL && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
    v = (int64_t)o->via.u64;
  else if (o != NULL && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    v = o->via.i64;
  else {
    error_set(err, kErrInvalidParams, "%s: %s: missing or not an integer", what, key);
    return false;
  }
  if (v < lo || v > hi) {
    error_set(err, kErrInvalidParams, "%s: %s must be %lld..%lld, got %lld", what, key,
              (long long)lo, (long long)hi, (long long)v);
    return false;
  }
  *out = v;
  return true;
}

bool
statefile_get_uint(const char *what, const msgpack_object *map, const char *key, uint64_t hi,
                   uint64_t *out, VigilError *err)
{
  const msgpack_object *o = statefile_get(map, key);
  if (o == NULL || o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
    error_set(err, kErrInvalidParams, "%s: %s: missing or not an unsigned integer", what, key);
    return false;
  }
  if (o->via.u64 > hi) {
    error_set(err, kErrInvalidParams, "%s: %s must be at most %llu, got %llu", what, key,
              (unsigned long long)hi, (unsigned long long)o->via.u64);
    return false;
  }
  *out = o->via.u64;
  return true;
}

bool
statefile_get_bool(const char *what, const msgpack_object *map, const char *key, bool *out,
                   VigilError *err)
{
  const msgpack_object *o = statefile_get(map, key);
  if (o == NULL || o->type != MSGPACK_OBJECT_BOOLEAN) {
    error_set(err, kErrInvalidParams, "%s: %s: missing or not a boolean", what, key);
    return false;
  }
  *out = o->via.boolean;
  return true;
}

/* --- writing a msgpack body ---------------------------------------------- */

void
statefile_pack_strn(msgpack_packer *pk, const char *s, size_t n)
{
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

void
statefile_pack_str(msgpack_packer *pk, const char *s)
{
  if (s == NULL)
    msgpack_pack_nil(pk);
  else
    statefile_pack_strn(pk, s, strlen(s));
}

void
statefile_pack_strv(msgpack_packer *pk, char *const *v)
{
  size_t n = 0;
  while (v != NULL && v[n] != NULL)
    n++;
  msgpack_pack_array(pk, n);
  for (size_t i = 0; i < n; i++)
    statefile_pack_str(pk, v[i]);
}

void
statefile_pack_bool(msgpack_packer *pk, bool b)
{
  if (b)
    msgpack_pack_true(pk);
  else
    msgpack_pack_false(pk);
}
