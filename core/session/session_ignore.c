/*
 * A session's silenced fingerprints, kept in the state directory
 * (session_ignore.h). The file is one statefile (a checked header, a
 * msgpack body): {"entries": [{fingerprint, added_at, expires_at, hits,
 * last_hit_at, reason}]}, each field checked as a request's would be.
 */
#include "session/session_ignore.h"

#include <fcntl.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "session/session_internal.h"
#include "store/statefile.h"

#define SESSION_IGNORE_VERSION 1
/* The most entries a file may hold (incident.ignore_max's upper bound),
 * and its size bound: that many entries with the longest reasons. */
#define SESSION_IGNORE_FILE_ENTRIES 4096
#define SESSION_IGNORE_FILE_MAX ((size_t)SESSION_IGNORE_FILE_ENTRIES * (IGNORE_REASON_MAX + 160))
static const char session_ignore_magic[8] = {'V', 'I', 'G', 'L', 'I', 'G', 'N', 'R'};

#define W "ignore"

/* The file name of s's list in sessions/. */
static void
session_ignore_name(const Session *s, char *out, size_t size)
{
  snprintf(out, size, SESSION_IGNORE_PREFIX "%s", s->name);
}

/* Whether s's list has a file. */
static bool
session_ignore_kept(const Session *s)
{
  return s->reg->store_fd >= 0 && !s->anonymous;
}

/* Reads one entry of the file into l. */
static bool
session_ignore_entry(IgnoreList *l, const msgpack_object *o, size_t i, VigilError *err)
{
  if (o->type != MSGPACK_OBJECT_MAP) {
    error_set(err, kErrInvalidParams, W ": entries[%zu]: not a map", i);
    return false;
  }
  uint64_t fp, hits;
  int64_t added, expires, last;
  char *reason = NULL;
  bool ok = statefile_get_uint(W, o, "fingerprint", UINT64_MAX, &fp, err) &&
            statefile_get_int(W, o, "added_at", 0, INT64_MAX, &added, err) &&
            statefile_get_int(W, o, "expires_at", 0, INT64_MAX, &expires, err) &&
            statefile_get_uint(W, o, "hits", UINT64_MAX, &hits, err) &&
            statefile_get_int(W, o, "last_hit_at", 0, INT64_MAX, &last, err) &&
            statefile_get_str(W, o, "reason", true, &reason, err);
  if (ok && reason != NULL && strlen(reason) > IGNORE_REASON_MAX) {
    error_set(err, kErrInvalidParams, W ": entries[%zu]: reason of %zu bytes, over %d", i,
              strlen(reason), IGNORE_REASON_MAX);
    ok = false;
  }
  bool replaced = false;
  if (ok && ignorelist_add(l, fp, expires, reason, added, &replaced, err) != 0)
    ok = false;
  if (ok && replaced) {
    error_set(err, kErrInvalidParams, W ": entries[%zu]: fingerprint %016llx twice", i,
              (unsigned long long)fp);
    ok = false;
  }
  if (ok) {
    IgnoreEntry *e = &l->v[l->n - 1];
    e->hits = hits;
    e->last_hit_at = last;
  }
  free(reason);
  return ok;
}

/* Reads s's file into s->ignores (empty when there is none). Returns 0, or
 * -1 with err set (the list then empty again). */
static int
session_ignore_read(Session *s, const char *name, VigilError *err)
{
  char *body = NULL;
  size_t len = 0;
  if (statefile_read(s->reg->store_fd, name, session_ignore_magic, SESSION_IGNORE_VERSION,
                     SESSION_IGNORE_FILE_MAX, W, &body, &len, err) != 0)
    return -1;
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  bool ok = msgpack_unpack_next(&u, body, len, NULL) == MSGPACK_UNPACK_SUCCESS &&
            u.data.type == MSGPACK_OBJECT_MAP;
  if (!ok)
    error_set(err, kErrInvalidParams, W ": the body is not a map");
  const msgpack_object *v = ok ? statefile_get(&u.data, "entries") : NULL;
  if (ok && (v == NULL || v->type != MSGPACK_OBJECT_ARRAY ||
             v->via.array.size > SESSION_IGNORE_FILE_ENTRIES)) {
    error_set(err, kErrInvalidParams, W ": entries: missing, not an array, or over %d",
              SESSION_IGNORE_FILE_ENTRIES);
    ok = false;
  }
  /* Read with room for every entry the file may hold; the session's bound
   * applies to adds only (a lowered bound drops nothing already kept). */
  size_t max = s->ignores.max;
  s->ignores.max = SESSION_IGNORE_FILE_ENTRIES;
  for (uint32_t i = 0; ok && i < v->via.array.size; i++)
    ok = session_ignore_entry(&s->ignores, &v->via.array.ptr[i], i, err);
  s->ignores.max = max;
  msgpack_unpacked_destroy(&u);
  free(body);
  if (ok)
    return 0;
  ignorelist_free(&s->ignores);
  return -1;
}

IgnoreList *
session_ignores(Session *s)
{
  if (!s->ignores_loaded) {
    s->ignores_loaded = true;
    ignorelist_init(&s->ignores, s->reg->limits.ignore_max);
    char name[320];
    session_ignore_name(s, name, sizeof name);
    struct stat st;
    VigilError err = VIGIL_ERROR_INIT;
    /* No file (none was ever written) is an empty list; anything else at
     * that name is read and checked. */
    if (session_ignore_kept(s) &&
        fstatat(s->reg->store_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (session_ignore_read(s, name, &err) != 0) {
        char aside[512];
        statefile_set_aside(s->reg->state_fd, s->reg->store_fd, name, name, aside, sizeof aside);
        LOG_ERROR("state", "session %s: its ignored fingerprints (sessions/%s) are not read: %s;"
                  " the file is set aside%s%s; the session starts with none", s->name, name,
                  err.msg, aside[0] ? " as " : "", aside);
        s->reg->ignores_set_aside++;
      } else if (s->ignores.n > 0) {
        LOG_INFO("state", "session %s: %zu ignored fingerprint(s) read back", s->name,
                 s->ignores.n);
      }
    }
  }
  s->ignores.max = s->reg->limits.ignore_max > 0 ? s->reg->limits.ignore_max : 1;
  return &s->ignores;
}

void
session_ignore_save(Session *s)
{
  if (!session_ignore_kept(s) || !s->ignores_loaded)
    return;
  char name[320];
  session_ignore_name(s, name, sizeof name);
  /* An empty list is no file: sessions that never ignored anything leave
   * nothing behind. */
  if (s->ignores.n == 0) {
    unlinkat(s->reg->store_fd, name, 0);
    return;
  }
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  const IgnoreList *l = &s->ignores;
  msgpack_pack_map(&pk, 1);
  statefile_pack_str(&pk, "entries");
  msgpack_pack_array(&pk, l->n);
  for (size_t i = 0; i < l->n; i++) {
    const IgnoreEntry *e = &l->v[i];
    msgpack_pack_map(&pk, 6);
    statefile_pack_str(&pk, "fingerprint"); msgpack_pack_uint64(&pk, e->fingerprint);
    statefile_pack_str(&pk, "added_at"); msgpack_pack_int64(&pk, e->added_at);
    statefile_pack_str(&pk, "expires_at"); msgpack_pack_int64(&pk, e->expires_at);
    statefile_pack_str(&pk, "hits"); msgpack_pack_uint64(&pk, e->hits);
    statefile_pack_str(&pk, "last_hit_at"); msgpack_pack_int64(&pk, e->last_hit_at);
    statefile_pack_str(&pk, "reason"); statefile_pack_str(&pk, e->reason);
  }
  VigilError err = VIGIL_ERROR_INIT;
  if (statefile_write(s->reg->store_fd, name, session_ignore_magic, SESSION_IGNORE_VERSION,
                      sb.data, sb.size, W, &err) != 0)
    LOG_WARN("state", "session %s: its ignored fingerprints are not kept: %s", s->name, err.msg);
  msgpack_sbuffer_destroy(&sb);
}

bool
session_ignore_hit(Session *s, uint64_t fp, int64_t now)
{
  IgnoreList *l = session_ignores(s);
  size_t before = l->n;
  bool hit = ignorelist_hit(l, fp, now);
  if (l->n != before)
    session_ignore_save(s);
  return hit;
}

void
session_ignore__free(Session *s)
{
  if (s->ignores_loaded)
    ignorelist_free(&s->ignores);
}

uint64_t
session_registry_ignores_set_aside(const SessionRegistry *reg)
{
  return reg->ignores_set_aside;
}
