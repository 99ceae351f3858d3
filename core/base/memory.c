/*
 * Allocation that never returns NULL: on failure print one line and abort.
 */
#include "base/memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
memory_die(size_t size)
{
  fprintf(stderr, "vigil: out of memory allocating %zu bytes\n", size);
  abort();
}

void *
xmalloc(size_t size)
{
  void *p = malloc(size ? size : 1);
  if (p == NULL)
    memory_die(size);
  return p;
}

void *
xcalloc(size_t count, size_t size)
{
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (p == NULL)
    memory_die(count * size);
  return p;
}

void *
xrealloc(void *ptr, size_t size)
{
  void *p = realloc(ptr, size ? size : 1);
  if (p == NULL)
    memory_die(size);
  return p;
}

char *
xstrdup(const char *s)
{
  return xmemdupz(s, strlen(s));
}

char *
xmemdupz(const char *s, size_t len)
{
  char *p = xmalloc(len + 1);
  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

void *
xgrow_zeroed(void *ptr, size_t *cap, size_t first, size_t max, size_t elem)
{
  size_t grown = *cap ? 2 * *cap : first;
  if (grown > max)
    grown = max;
  if (grown <= *cap)
    return ptr;
  char *p = xrealloc(ptr, grown * elem);
  memset(p + *cap * elem, 0, (grown - *cap) * elem);
  *cap = grown;
  return p;
}

char **
xstrv_dup(const char *const *v)
{
  if (v == NULL)
    return NULL;
  size_t n = 0;
  while (v[n] != NULL)
    n++;
  char **out = xcalloc(n + 1, sizeof *out);
  for (size_t i = 0; i < n; i++)
    out[i] = xstrdup(v[i]);
  return out;
}

void
xstrv_free(char **v)
{
  for (size_t i = 0; v != NULL && v[i] != NULL; i++)
    free(v[i]);
  free(v);
}
