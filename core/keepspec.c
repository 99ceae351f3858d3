/*
 * The spec file of a kept monitor (keepspec.h): packed with msgpack-c,
 * read back into a KeepSpec with every field checked. The header is
 * 24 bytes: "VIGLSPEC", version (u32), body length (u32), FNV-1a of the
 * body (u64); a file whose sum does not match was torn or garbled and is
 * refused, never half-used.
 */
#include "keepspec.h"

#include <errno.h>
#include <fcntl.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memory.h"

#define KEEPSPEC_VERSION 1
#define KEEPSPEC_HEADER 24
static const char keepspec_magic[8] = {'V', 'I', 'G', 'L', 'S', 'P', 'E', 'C'};

static uint64_t
keepspec_sum(const char *p, size_t n)
{
  uint64_t x = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    x ^= (unsigned char)p[i];
    x *= 0x100000001b3ULL;
  }
  return x;
}

static void
pack_str(msgpack_packer *pk, const char *s)
{
  if (s == NULL) {
    msgpack_pack_nil(pk);
    return;
  }
  size_t n = strlen(s);
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

static void
pack_strv(msgpack_packer *pk, char *const *v)
{
  size_t n = 0;
  while (v != NULL && v[n] != NULL)
    n++;
  msgpack_pack_array(pk, n);
  for (size_t i = 0; i < n; i++)
    pack_str(pk, v[i]);
}

#define KEY(k) pack_str(pk, k)

/* See keepspec.h. */
int
keepspec_write(int dir_fd, const KeepSpec *s, VigilError *err)
{
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pkr;
  msgpack_packer *pk = &pkr;
  msgpack_packer_init(pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(pk, 24);
  KEY("id"); pack_str(pk, s->id);
  KEY("session"); pack_str(pk, s->session);
  KEY("session_anonymous"); s->session_anonymous ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  KEY("label"); pack_str(pk, s->label);
  KEY("description"); pack_str(pk, s->description);
  KEY("policy"); pack_str(pk, s->policy);
  KEY("argv"); pack_strv(pk, s->argv);
  KEY("program"); pack_str(pk, s->program);
  KEY("cwd"); pack_str(pk, s->cwd);
  KEY("patterns"); pack_strv(pk, s->patterns);
  KEY("builtin_patterns"); s->builtin_patterns ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  KEY("incidents"); s->incidents ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  KEY("envelope"); msgpack_pack_int64(pk, s->envelope);
  KEY("match_streams"); msgpack_pack_int64(pk, s->match_streams);
  KEY("notify"); msgpack_pack_int64(pk, s->notify);
  KEY("mode"); msgpack_pack_int64(pk, s->mode);
  KEY("timeout_ms"); msgpack_pack_int64(pk, s->timeout_ms);
  KEY("idle_timeout_ms"); msgpack_pack_int64(pk, s->idle_timeout_ms);
  KEY("memory_limit"); msgpack_pack_int64(pk, s->memory_limit);
  KEY("cpu_limit"); msgpack_pack_double(pk, s->cpu_limit);
  KEY("started_at_ms"); msgpack_pack_int64(pk, s->started_at_ms);
  KEY("pid"); msgpack_pack_int64(pk, s->pid);
  KEY("keeper"); msgpack_pack_int64(pk, s->keeper);
  KEY("settings");
  size_t nset = 0;
  for (const SettingSpec *sp = settings_table; sp->name; sp++)
    nset++;
  msgpack_pack_map(pk, nset);
  for (const SettingSpec *sp = settings_table; sp->name; sp++) {
    KEY(sp->name);
    int64_t v = settings_get(&s->settings, sp);
    if (sp->kind == kSettingEnum)
      pack_str(pk, sp->choices[v]);
    else
      msgpack_pack_int64(pk, v);
  }
  char head[KEEPSPEC_HEADER];
  uint32_t version = KEEPSPEC_VERSION, len = (uint32_t)sb.size;
  uint64_t sum = keepspec_sum(sb.data, sb.size);
  memcpy(head, keepspec_magic, 8);
  memcpy(head + 8, &version, 4);
  memcpy(head + 12, &len, 4);
  memcpy(head + 16, &sum, 8);
  unlinkat(dir_fd, KEEPSPEC_NAME ".tmp", 0);
  int fd = openat(dir_fd, KEEPSPEC_NAME ".tmp",
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int rc = 0;
  if (fd < 0 || write(fd, head, sizeof head) != (ssize_t)sizeof head ||
      write(fd, sb.data, sb.size) != (ssize_t)sb.size || close(fd) != 0 ||
      renameat(dir_fd, KEEPSPEC_NAME ".tmp", dir_fd, KEEPSPEC_NAME) != 0) {
    rc = error_set(err, kErrInternal, "spec: cannot write it: %s", strerror(errno));
    unlinkat(dir_fd, KEEPSPEC_NAME ".tmp", 0);
  }
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* --- reading ------------------------------------------------------------- */

static const msgpack_object *
get(const msgpack_object *map, const char *key)
{
  size_t n = strlen(key);
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    const msgpack_object_kv *kv = &map->via.map.ptr[i];
    if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == n &&
        memcmp(kv->key.via.str.ptr, key, n) == 0)
      return &kv->val;
  }
  return NULL;
}

/* A string field (or nil when nil_ok), copied; false names it in err. */
static bool
get_str(const msgpack_object *map, const char *key, bool nil_ok, char **out, VigilError *err)
{
  const msgpack_object *o = get(map, key);
  if (o != NULL && o->type == MSGPACK_OBJECT_NIL && nil_ok) {
    *out = NULL;
    return true;
  }
  if (o == NULL || o->type != MSGPACK_OBJECT_STR ||
      memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL) {
    error_set(err, kErrInvalidParams, "spec: %s: missing or not a string", key);
    return false;
  }
  *out = xmemdupz(o->via.str.ptr, o->via.str.size);
  return true;
}

static bool
get_strv(const msgpack_object *map, const char *key, char ***out, VigilError *err)
{
  const msgpack_object *o = get(map, key);
  if (o == NULL || o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > 65536) {
    error_set(err, kErrInvalidParams, "spec: %s: missing or not an array", key);
    return false;
  }
  char **v = xcalloc(o->via.array.size + 1, sizeof *v);
  *out = v;
  for (uint32_t i = 0; i < o->via.array.size; i++) {
    const msgpack_object *e = &o->via.array.ptr[i];
    if (e->type != MSGPACK_OBJECT_STR || memchr(e->via.str.ptr, '\0', e->via.str.size)) {
      error_set(err, kErrInvalidParams, "spec: %s[%u]: not a string", key, i);
      return false;
    }
    v[i] = xmemdupz(e->via.str.ptr, e->via.str.size);
  }
  return true;
}

static bool
get_int(const msgpack_object *map, const char *key, int64_t lo, int64_t hi, int64_t *out,
        VigilError *err)
{
  const msgpack_object *o = get(map, key);
  int64_t v;
  if (o != NULL && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
    v = (int64_t)o->via.u64;
  else if (o != NULL && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    v = o->via.i64;
  else {
    error_set(err, kErrInvalidParams, "spec: %s: missing or not an integer", key);
    return false;
  }
  if (v < lo || v > hi) {
    error_set(err, kErrInvalidParams, "spec: %s must be %lld..%lld, got %lld", key,
              (long long)lo, (long long)hi, (long long)v);
    return false;
  }
  *out = v;
  return true;
}

static bool
get_bool(const msgpack_object *map, const char *key, bool *out, VigilError *err)
{
  const msgpack_object *o = get(map, key);
  if (o == NULL || o->type != MSGPACK_OBJECT_BOOLEAN) {
    error_set(err, kErrInvalidParams, "spec: %s: missing or not a boolean", key);
    return false;
  }
  *out = o->via.boolean;
  return true;
}

/* The settings map: every known setting, each within its bounds. */
static bool
get_settings(const msgpack_object *map, VigilSettings *s, VigilError *err)
{
  const msgpack_object *o = get(map, "settings");
  if (o == NULL || o->type != MSGPACK_OBJECT_MAP) {
    error_set(err, kErrInvalidParams, "spec: settings: missing or not a map");
    return false;
  }
  settings_defaults(s);
  for (const SettingSpec *sp = settings_table; sp->name; sp++) {
    if (sp->kind == kSettingEnum) {
      char *choice = NULL;
      bool ok = get_str(o, sp->name, false, &choice, err) &&
                settings_set_choice(s, sp->name, choice, err) == 0;
      free(choice);
      if (!ok)
        return false;
    } else {
      int64_t v;
      if (!get_int(o, sp->name, INT64_MIN, INT64_MAX, &v, err) ||
          settings_set_int(s, sp->name, v, err) != 0)
        return false;
    }
  }
  return settings_check(s, err) == 0;
}

/* Reads the whole file (regular, ours, private, bounded) into *buf. */
static ssize_t
keepspec_load(int dir_fd, char **buf, VigilError *err)
{
  int fd = openat(dir_fd, KEEPSPEC_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    error_set(err, kErrInvalidParams, "spec: cannot open it: %s", strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 077) != 0 || st.st_size < KEEPSPEC_HEADER ||
      st.st_size > KEEPSPEC_MAX_BYTES) {
    close(fd);
    error_set(err, kErrInvalidParams, "spec: not a private regular file of this user of "
              "%d..%d bytes", KEEPSPEC_HEADER, KEEPSPEC_MAX_BYTES);
    return -1;
  }
  *buf = xmalloc((size_t)st.st_size);
  ssize_t got = 0;
  while (got < st.st_size) {
    ssize_t n = read(fd, *buf + got, (size_t)(st.st_size - got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += n;
  }
  close(fd);
  return got;
}

/* See keepspec.h. */
int
keepspec_read(int dir_fd, KeepSpec *s, VigilError *err)
{
  memset(s, 0, sizeof *s);
  char *buf = NULL;
  ssize_t n = keepspec_load(dir_fd, &buf, err);
  if (n < 0)
    return -1;
  uint32_t version, len;
  uint64_t sum;
  memcpy(&version, buf + 8, 4);
  memcpy(&len, buf + 12, 4);
  memcpy(&sum, buf + 16, 8);
  if (n < KEEPSPEC_HEADER || memcmp(buf, keepspec_magic, 8) != 0 ||
      version != KEEPSPEC_VERSION || (size_t)len != (size_t)n - KEEPSPEC_HEADER ||
      keepspec_sum(buf + KEEPSPEC_HEADER, len) != sum) {
    free(buf);
    return error_set(err, kErrInvalidParams, "spec: not a vigil spec of version %d, or torn "
                     "(its magic, length or sum does not match)", KEEPSPEC_VERSION);
  }
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  bool ok = msgpack_unpack_next(&u, buf + KEEPSPEC_HEADER, len, NULL) == MSGPACK_UNPACK_SUCCESS &&
            u.data.type == MSGPACK_OBJECT_MAP;
  if (!ok)
    error_set(err, kErrInvalidParams, "spec: its body is not a msgpack map");
  const msgpack_object *m = &u.data;
  int64_t v;
  ok = ok && get_str(m, "id", false, &s->id, err) &&
       get_str(m, "session", false, &s->session, err) &&
       get_bool(m, "session_anonymous", &s->session_anonymous, err) &&
       get_str(m, "label", false, &s->label, err) &&
       get_str(m, "description", true, &s->description, err) &&
       get_str(m, "policy", false, &s->policy, err) && get_strv(m, "argv", &s->argv, err) &&
       get_str(m, "program", false, &s->program, err) && get_str(m, "cwd", false, &s->cwd, err) &&
       get_strv(m, "patterns", &s->patterns, err) &&
       get_bool(m, "builtin_patterns", &s->builtin_patterns, err) &&
       get_bool(m, "incidents", &s->incidents, err);
  ok = ok && get_int(m, "envelope", 0, 16, &v, err) && ((s->envelope = (int)v), true);
  ok = ok && get_int(m, "match_streams", 0, 16, &v, err) && ((s->match_streams = (int)v), true);
  ok = ok && get_int(m, "notify", 0, 16, &v, err) && ((s->notify = (int)v), true);
  ok = ok && get_int(m, "mode", 0, 16, &v, err) && ((s->mode = (int)v), true);
  ok = ok && get_int(m, "timeout_ms", 0, INT64_MAX, &s->timeout_ms, err) &&
       get_int(m, "idle_timeout_ms", 0, INT64_MAX, &s->idle_timeout_ms, err) &&
       get_int(m, "memory_limit", 0, INT64_MAX, &s->memory_limit, err) &&
       get_int(m, "started_at_ms", 0, INT64_MAX, &s->started_at_ms, err);
  ok = ok && get_int(m, "pid", 2, INT32_MAX, &v, err) && ((s->pid = (pid_t)v), true);
  ok = ok && get_int(m, "keeper", 2, INT32_MAX, &v, err) && ((s->keeper = (pid_t)v), true);
  const msgpack_object *cpu = ok ? get(m, "cpu_limit") : NULL;
  if (ok && (cpu == NULL || (cpu->type != MSGPACK_OBJECT_FLOAT64 &&
                             cpu->type != MSGPACK_OBJECT_FLOAT32))) {
    ok = false;
    error_set(err, kErrInvalidParams, "spec: cpu_limit: missing or not a number");
  } else if (ok) {
    s->cpu_limit = cpu->via.f64;
  }
  ok = ok && get_settings(m, &s->settings, err);
  if (ok && s->argv[0] == NULL) {
    ok = false;
    error_set(err, kErrInvalidParams, "spec: argv: empty");
  }
  msgpack_unpacked_destroy(&u);
  free(buf);
  if (!ok) {
    keepspec_free(s);
    return -1;
  }
  return 0;
}

static void
free_strv(char **v)
{
  for (size_t i = 0; v != NULL && v[i] != NULL; i++)
    free(v[i]);
  free(v);
}

/* See keepspec.h. */
void
keepspec_free(KeepSpec *s)
{
  free(s->id);
  free(s->session);
  free(s->label);
  free(s->description);
  free(s->policy);
  free_strv(s->argv);
  free(s->program);
  free(s->cwd);
  free_strv(s->patterns);
  memset(s, 0, sizeof *s);
}
