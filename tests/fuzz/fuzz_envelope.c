/*
 * libFuzzer harness for what stands between process output and the agent:
 * the escaping (textfmt_escape, textfmt_sanitize), the built-in envelope and
 * its frame, and the prefix-rule check of a policy's body
 * (envelope_check_policy_body). A harness reports a bug by aborting.
 *
 * Input: byte 0 chooses the notification's shape (type, streams, seqs,
 * patterns, truncation, and whether the body starts from the built-in
 * one); the rest is split at its first NUL: before it, lines separated by
 * '\n' (the first is the label, at most 64 more are the notification's
 * lines); after it, a policy's body.
 *
 * Properties:
 *   - escaping gives valid UTF-8 with no raw control and no invisible
 *     character (textfmt_invisible), and decodes back to its input
 *     (injective), also for two pieces joined; sanitizing is idempotent and
 *     leaves escaped text unchanged;
 *   - the envelope is valid UTF-8, holds no raw control but its newlines
 *     and no invisible character, opens with the BEGIN marker and the
 *     declaration, closes with the END marker, has no other marker line,
 *     and every other line starts with a prefix of one of n's lines or with
 *     one of vigil's own words;
 *   - the built-in body always passes the check, unchanged;
 *   - the check agrees with a plain reference implementation of the rule
 *     (docs/policies.md section 5), written the slow and obvious way;
 *   - a body that passes comes out clean (no raw control but newlines, no
 *     invisible character), and framed it cannot close the frame: the END
 *     marker is its last line and the only one; a body that is refused
 *     leaves nothing behind.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/envelope.h"
#include "pipeline/notification.h"
#include "base/strbuf.h"
#include "base/textfmt.h"
#include "utf8check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NONCE "f00dfacef00dfacef00dfacef00dface"
#define FUZZ_MAX_LINES 64

/* Whether s[0..len) holds a raw control (newlines too unless keep_nl) or
 * an invisible code point. s is valid UTF-8 (checked first). */
static bool
fuzz_has_raw(const char *s, size_t len, bool keep_nl)
{
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    unsigned char b = p[i];
    if (b < 0x80) {
      if ((b < 0x20 && !(keep_nl && b == '\n')) || b == 0x7f)
        return true;
      i++;
      continue;
    }
    size_t n = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
    uint32_t cp = b & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
    for (size_t k = 1; k < n; k++)
      cp = (cp << 6) | (p[i + k] & 0x3f);
    if (textfmt_invisible(cp))
      return true;
    i += n;
  }
  return false;
}

/* The inverse of textfmt_escape (the grammar in textfmt.h), into out (room
 * for len bytes). Returns the length, or SIZE_MAX on text the escape could
 * not have written. */
static size_t
fuzz_unescape(const char *s, size_t len, unsigned char *out)
{
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    if (s[i] != '\\' || i + 1 == len) {
      if (s[i] == '\\')
        return SIZE_MAX; /* a lone backslash at the end is always doubled */
      out[o++] = (unsigned char)s[i++];
      continue;
    }
    char c = s[i + 1];
    if (c == '\\' || c == 't' || c == 'n' || c == 'r' || c == 'e') {
      out[o++] = c == '\\' ? '\\' : c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : 0x1b;
      i += 2;
    } else if (c == 'x') {
      unsigned v;
      if (i + 4 > len || sscanf(s + i + 2, "%2x", &v) != 1)
        return SIZE_MAX;
      out[o++] = (unsigned char)v;
      i += 4;
    } else if (c == 'u') {
      const char *close = memchr(s + i, '}', len - i);
      unsigned long cp;
      if (i + 3 > len || s[i + 2] != '{' || close == NULL ||
          sscanf(s + i + 3, "%lx", &cp) != 1 || cp > 0x10ffff)
        return SIZE_MAX;
      if (cp < 0x800) {
        out[o++] = (unsigned char)(0xc0 | cp >> 6);
      } else if (cp < 0x10000) {
        out[o++] = (unsigned char)(0xe0 | cp >> 12);
        out[o++] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
      } else {
        out[o++] = (unsigned char)(0xf0 | cp >> 18);
        out[o++] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
        out[o++] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
      }
      out[o++] = (unsigned char)(0x80 | (cp & 0x3f));
      i = (size_t)(close - s) + 1;
    } else {
      out[o++] = '\\';
      i++;
    }
  }
  return o;
}

static void
fuzz_check_escape(const char *s, size_t len)
{
  StrBuf e = STRBUF_INIT, joined = STRBUF_INIT, once = STRBUF_INIT, twice = STRBUF_INIT,
         again = STRBUF_INIT;
  textfmt_escape(&e, s, len);
  if (!test_utf8_valid(e.data, e.len) || fuzz_has_raw(e.data, e.len, false))
    abort();
  unsigned char *back = malloc(len + 1);
  if (fuzz_unescape(strbuf_cstr(&e), e.len, back) != len || memcmp(back, s, len) != 0)
    abort();
  /* Two pieces, joined, read back as the whole. */
  size_t cut = len / 3;
  textfmt_escape(&joined, s, cut);
  textfmt_escape(&joined, s + cut, len - cut);
  if (fuzz_unescape(strbuf_cstr(&joined), joined.len, back) != len || memcmp(back, s, len) != 0)
    abort();
  free(back);
  textfmt_sanitize(&once, s, len);
  textfmt_sanitize(&twice, strbuf_cstr(&once), once.len);
  textfmt_sanitize(&again, strbuf_cstr(&e), e.len);
  if (!test_utf8_valid(once.data, once.len) || fuzz_has_raw(once.data, once.len, false) ||
      once.len != twice.len || memcmp(strbuf_cstr(&once), strbuf_cstr(&twice), once.len) != 0 ||
      again.len != e.len || memcmp(strbuf_cstr(&again), strbuf_cstr(&e), e.len) != 0)
    abort();
  strbuf_free(&e);
  strbuf_free(&joined);
  strbuf_free(&once);
  strbuf_free(&twice);
  strbuf_free(&again);
}

/* The prefix of line l, as the envelope writes it. */
static int
fuzz_prefix(const NoteLine *l, char *out, size_t cap)
{
  return snprintf(out, cap, "[%s seq=%" PRIu64 "] ", l->stream == 1 ? "stderr" : "stdout", l->seq);
}

/* Whether [p, end) begins with the prefix of one of n's lines; *text is then
 * where the line's text starts. */
static bool
fuzz_ref_prefixed(const Notification *n, const char *p, const char *end, const char **text)
{
  for (size_t i = 0; i < n->nlines; i++) {
    char prefix[64];
    int plen = fuzz_prefix(&n->lines[i], prefix, sizeof prefix);
    if ((size_t)(end - p) >= (size_t)plen && memcmp(p, prefix, (size_t)plen) == 0) {
      *text = p + plen;
      return true;
    }
  }
  return false;
}

/* The prefix rule the slow and obvious way: every occurrence of every
 * line's probe, each judged from its line. true when the body passes. */
static bool
fuzz_ref_check(const Notification *n, const char *body, size_t len)
{
  StrBuf builtin = STRBUF_INIT;
  envelope_body(n, &builtin);
  bool ok = true;
  for (size_t i = 0; i < n->nlines && ok; i++) {
    StrBuf probe = STRBUF_INIT;
    textfmt_escape(&probe, n->lines[i].text, n->lines[i].len);
    size_t plen = probe.len < ENVELOPE_PROBE_BYTES ? probe.len : ENVELOPE_PROBE_BYTES;
    for (size_t at = 0; ok && plen >= ENVELOPE_PROBE_MIN && at + plen <= len; at++) {
      if (memcmp(body + at, probe.data, plen) != 0)
        continue;
      size_t ls = at, le = at;
      while (ls > 0 && body[ls - 1] != '\n')
        ls--;
      while (le < len && body[le] != '\n')
        le++;
      const char *text = NULL;
      if (fuzz_ref_prefixed(n, body + ls, body + le, &text) && body + at >= text)
        continue;
      /* Exempt: a line the built-in body has word for word. */
      bool own = false;
      const char *b = strbuf_cstr(&builtin), *bend = b + builtin.len;
      while (b < bend && !own) {
        const char *nl = memchr(b, '\n', (size_t)(bend - b));
        const char *e = nl ? nl : bend;
        own = (size_t)(e - b) == le - ls && memcmp(b, body + ls, le - ls) == 0;
        b = nl ? nl + 1 : bend;
      }
      ok = own;
    }
    strbuf_free(&probe);
  }
  strbuf_free(&builtin);
  return ok;
}

/* Whether a line of the envelope's body is vigil's own wording. */
static bool
fuzz_vigil_words(const char *p, size_t len)
{
  static const char *const words[] = {"monitor: ", "event: ", "status: ", "reason: ",
                                      "note: ", "matched: ", "last lines:"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (len >= strlen(words[i]) && memcmp(p, words[i], strlen(words[i])) == 0)
      return true;
  return false;
}

/* Checks a framed text: clean, the markers where they belong and only
 * there, every body line prefixed or vigil's (when strict). */
static void
fuzz_check_frame(const Notification *n, const char *t, size_t len, bool strict)
{
  static const char begin[] = "<<<VIGIL OBSERVATION " FUZZ_NONCE " BEGIN>>>\n"
                              "stream_policy: untrusted_observation\n";
  static const char end[] = "<<<VIGIL OBSERVATION " FUZZ_NONCE " END>>>\n";
  if (!test_utf8_valid(t, len) || fuzz_has_raw(t, len, true))
    abort();
  if (len < sizeof begin + sizeof end || memcmp(t, begin, sizeof begin - 1) != 0 ||
      memcmp(t + len - (sizeof end - 1), end, sizeof end - 1) != 0)
    abort();
  /* Skip the two marker-and-declaration lines at the top. */
  const char *p = t + sizeof begin - 1;
  p = memchr(p, '\n', len - (size_t)(p - t)) + 1;
  const char *stop = t + len - (sizeof end - 1);
  while (p < stop) {
    const char *nl = memchr(p, '\n', (size_t)(stop - p));
    if (nl == NULL)
      abort(); /* the body always ends with a newline before END */
    static const char marker[] = "<<<VIGIL OBSERVATION " FUZZ_NONCE;
    if ((size_t)(nl - p) >= sizeof marker - 1 && memcmp(p, marker, sizeof marker - 1) == 0)
      abort(); /* a second marker line with the frame's nonce */
    const char *text;
    if (strict && !fuzz_ref_prefixed(n, p, nl, &text) && !fuzz_vigil_words(p, (size_t)(nl - p)))
      abort();
    p = nl + 1;
  }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  unsigned flags = data[0];
  const char *rest = (const char *)data + 1;
  size_t rlen = size - 1;
  fuzz_check_escape(rest, rlen);

  const char *nul = memchr(rest, '\0', rlen);
  size_t llen = nul ? (size_t)(nul - rest) : rlen;
  const char *body = nul ? nul + 1 : "";
  size_t blen = nul ? rlen - llen - 1 : 0;
  /* The nonce must be one the input cannot hold, as a real nonce is. */
  bool nonce_free = memmem(data, size, FUZZ_NONCE, strlen(FUZZ_NONCE)) == NULL;

  static const NotificationType types[] = {kNotifOutput, kNotifExit, kNotifStopped,
                                           kNotifOutput};
  const char *nl = memchr(rest, '\n', llen);
  size_t label_len = nl ? (size_t)(nl - rest) : llen;
  char *label = strndup(rest, label_len);
  Notification *n = notification_new(types[flags & 3], "mon_fuzz0000000", label, kModeIdle);
  free(label);
  n->state = (flags & 3) == 1 ? kMonExited : (flags & 3) == 2 ? kMonStopped : kMonRunning;
  n->has_exit_code = (flags & 3) == 1;
  n->suppressed = flags >> 6;
  const char *p = nl ? nl + 1 : rest + llen, *lstop = rest + llen;
  uint64_t step = 1 + ((flags >> 4) & 3) * 7;
  for (size_t i = 0; p < lstop && i < FUZZ_MAX_LINES; i++) {
    const char *e = memchr(p, '\n', (size_t)(lstop - p));
    if (e == NULL)
      e = lstop;
    notification_add_line(n, 1 + i * step, (int)((flags >> (i % 8)) & 1),
                           (flags & 8) && i % 2 ? 0 : -1, (flags & 4) && i % 3 == 0, p,
                           (size_t)(e - p));
    p = e + 1;
  }

  /* The built-in envelope. */
  StrBuf text = STRBUF_INIT, builtin = STRBUF_INIT, out = STRBUF_INIT;
  envelope_render_with_nonce(n, FUZZ_NONCE, &text);
  if (nonce_free)
    fuzz_check_frame(n, strbuf_cstr(&text), text.len, true);
  envelope_body(n, &builtin);
  VigilError err = VIGIL_ERROR_INIT;
  if (envelope_check_policy_body(n, strbuf_cstr(&builtin), builtin.len, &out, &err) != 0 ||
      out.len != builtin.len || memcmp(strbuf_cstr(&out), strbuf_cstr(&builtin), out.len) != 0)
    abort();

  /* A policy's body: the fuzzed one, or the built-in one with it added. */
  StrBuf pbody = STRBUF_INIT, clean = STRBUF_INIT, framed = STRBUF_INIT;
  if (flags & 0x80)
    strbuf_append(&pbody, strbuf_cstr(&builtin), builtin.len);
  strbuf_append(&pbody, body, blen);
  strbuf_reset(&out);
  error_clear(&err);
  int rc = envelope_check_policy_body(n, strbuf_cstr(&pbody), pbody.len, &out, &err);
  /* The reference sees the body as the check does: sanitized line by line. */
  const char *q = strbuf_cstr(&pbody), *qstop = q + pbody.len;
  while (q < qstop) {
    const char *e = memchr(q, '\n', (size_t)(qstop - q));
    textfmt_sanitize(&clean, q, (size_t)((e ? e : qstop) - q));
    if (e)
      strbuf_putc(&clean, '\n');
    q = e ? e + 1 : qstop;
  }
  bool ref_ok = fuzz_ref_check(n, strbuf_cstr(&clean), clean.len);
  if ((rc == 0) != ref_ok)
    abort();
  if (rc == 0) {
    if (out.len != clean.len || memcmp(strbuf_cstr(&out), strbuf_cstr(&clean), out.len) != 0)
      abort();
    envelope_frame(strbuf_cstr(&out), out.len, FUZZ_NONCE, kEnvelopeReadable, &framed);
    if (nonce_free)
      fuzz_check_frame(n, strbuf_cstr(&framed), framed.len, false);
  } else if (out.len != 0) {
    abort();
  }
  strbuf_free(&text);
  strbuf_free(&builtin);
  strbuf_free(&out);
  strbuf_free(&pbody);
  strbuf_free(&clean);
  strbuf_free(&framed);
  notification_free(n);
  return 0;
}
