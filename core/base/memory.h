/*
 * Allocation that never returns NULL. vigil treats running out of memory as
 * fatal (as Neovim does): every caller can use the result without a check,
 * and every bound that keeps memory in check lives in the module that owns
 * the buffer, not here.
 */
#ifndef VIGIL_MEMORY_H
#define VIGIL_MEMORY_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
char *xmemdupz(const char *s, size_t len); /* copy of len bytes plus a NUL */
/* A NULL-terminated list of strings (an argv, an env): a copy of every
 * string and of the list (NULL for NULL), and its free (NULL is fine). */
char **xstrv_dup(const char *const *v);
void xstrv_free(char **v);

/* Grows an array of *cap elements of elem bytes by doubling (from first
 * when empty), never past max, the new elements zeroed; *cap is updated.
 * The tables a monitor fills only as it goes (fingerprints, incidents)
 * start small this way instead of at their bounds. Returns the array. */
void *xgrow_zeroed(void *ptr, size_t *cap, size_t first, size_t max, size_t elem);

#endif
