/*
 * A growable byte string, always NUL-terminated. Used to build messages,
 * envelopes and renderings; never on the per-line hot path. It has no cap of
 * its own: every caller bounds what it appends (a notification's lines are
 * already capped by batch_max_bytes).
 */
#ifndef VIGIL_STRBUF_H
#define VIGIL_STRBUF_H

#include <stddef.h>

typedef struct {
  char *data; /* NUL-terminated; NULL until the first append */
  size_t len;
  size_t cap;
} StrBuf;

#define STRBUF_INIT {NULL, 0, 0}

void strbuf_append(StrBuf *sb, const char *s, size_t len);
void strbuf_puts(StrBuf *sb, const char *s);
void strbuf_putc(StrBuf *sb, char c);
void strbuf_printf(StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The contents as a string ("" when empty); stays owned by sb. */
const char *strbuf_cstr(const StrBuf *sb);
/* Hands the contents to the caller (free() it) and empties sb. */
char *strbuf_take(StrBuf *sb);
/* strbuf_take for a text kept long (a notification's rendered envelope,
 * which a session keeps for resume): the block is shrunk to the text, so
 * the doubling's slack (up to half of it) is not kept with it. */
char *strbuf_take_fit(StrBuf *sb);
void strbuf_reset(StrBuf *sb);
void strbuf_free(StrBuf *sb);

#endif
