/*
 * A session's silenced fingerprints (ignorelist.h): a bounded array, oldest
 * first, searched linearly; expired entries go where they are met.
 */
#include "pipeline/ignorelist.h"

#include <stdlib.h>
#include <string.h>

#include "base/memory.h"

void
ignorelist_init(IgnoreList *l, size_t max)
{
  memset(l, 0, sizeof *l);
  l->max = max > 0 ? max : 1;
}

void
ignorelist_free(IgnoreList *l)
{
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i].reason);
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

bool
ignorelist_parse(const char *text, uint64_t *fp)
{
  uint64_t x = 0;
  size_t i = 0;
  for (; text[i] != '\0'; i++) {
    char c = text[i];
    unsigned d;
    if (i == 16)
      return false;
    if (c >= '0' && c <= '9')
      d = (unsigned)(c - '0');
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
      d = (unsigned)((c | 0x20) - 'a' + 10);
    else
      return false;
    x = x << 4 | d;
  }
  if (i != 16)
    return false;
  *fp = x;
  return true;
}

/* Removes entry i, keeping the order. */
static void
ignorelist_drop(IgnoreList *l, size_t i)
{
  free(l->v[i].reason);
  memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof l->v[0]);
  l->n--;
}

/* Whether entry e has ended at now. */
static bool
ignorelist_ended(const IgnoreEntry *e, int64_t now)
{
  return e->expires_at != 0 && e->expires_at <= now;
}

size_t
ignorelist_expire(IgnoreList *l, int64_t now)
{
  size_t dropped = 0;
  for (size_t i = l->n; i-- > 0;) {
    if (ignorelist_ended(&l->v[i], now)) {
      ignorelist_drop(l, i);
      dropped++;
    }
  }
  l->expired += dropped;
  return dropped;
}

/* The index of fp's entry, or l->n. */
static size_t
ignorelist_find(const IgnoreList *l, uint64_t fp)
{
  size_t i = 0;
  while (i < l->n && l->v[i].fingerprint != fp)
    i++;
  return i;
}

int
ignorelist_add(IgnoreList *l, uint64_t fp, int64_t expires_at, const char *reason, int64_t now,
               bool *replaced, VigilError *err)
{
  ignorelist_expire(l, now);
  size_t i = ignorelist_find(l, fp);
  *replaced = i < l->n;
  if (!*replaced && l->n >= l->max) {
    l->refused++;
    return error_set(err, kErrLimitExceeded, "fingerprint: this session already ignores %zu "
                     "fingerprints, the bound (incident.ignore_max %zu); unignore one first",
                     l->n, l->max);
  }
  if (!*replaced) {
    l->v = xrealloc(l->v, (l->n + 1) * sizeof l->v[0]);
    memset(&l->v[l->n], 0, sizeof l->v[0]);
    l->n++;
  }
  IgnoreEntry *e = &l->v[i];
  free(e->reason);
  e->fingerprint = fp;
  e->added_at = now;
  e->expires_at = expires_at;
  e->reason = reason ? xstrdup(reason) : NULL;
  return 0;
}

bool
ignorelist_remove(IgnoreList *l, uint64_t fp, int64_t now)
{
  ignorelist_expire(l, now);
  size_t i = ignorelist_find(l, fp);
  if (i == l->n)
    return false;
  ignorelist_drop(l, i);
  return true;
}

bool
ignorelist_hit(IgnoreList *l, uint64_t fp, int64_t now)
{
  size_t i = ignorelist_find(l, fp);
  if (i == l->n)
    return false;
  if (ignorelist_ended(&l->v[i], now)) {
    ignorelist_drop(l, i);
    l->expired++;
    return false;
  }
  l->v[i].hits++;
  l->v[i].last_hit_at = now;
  return true;
}
