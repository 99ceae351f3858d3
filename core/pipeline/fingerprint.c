/*
 * Fingerprints of incidents (see fingerprint.h for the rules of the normal
 * form). One left-to-right scan over a bounded window of the line writes
 * the normal form into a sink that either appends to a StrBuf or feeds the
 * hash, so fingerprint_normalise and fingerprint_of cannot disagree and the
 * hash needs no buffer. Each rule is a small matcher that returns where its
 * match ends (0: no match); the scan tries them at token starts, in the
 * order of the header's list.
 */
#include "pipeline/fingerprint.h"

#include <stdbool.h>
#include <string.h>

#include "base/utf8.h"

/* 64-bit FNV-1a: simple, public and byte-order free, so the same line
 * hashes alike on every platform and in every release that keeps the
 * rules. */
#define FINGERPRINT_FNV_OFFSET 0xcbf29ce484222325ULL
#define FINGERPRINT_FNV_PRIME 0x100000001b3ULL

/* Where the normal form goes: out (when not NULL) and the running hash. */
typedef struct {
  StrBuf *out;
  uint64_t hash;
  size_t len;  /* bytes of normal form so far (at most FINGERPRINT_MAX_BYTES) */
  bool space;  /* a whitespace run was seen: one space before the next piece */
  bool full;   /* a piece did not fit: the normal form is complete */
} FingerprintSink;

/* The window being scanned. */
typedef struct {
  const unsigned char *s;
  size_t n;          /* bytes in the window */
  bool cut;          /* the line goes on past the window */
  bool structured;   /* JSON or logfmt: double quotes are punctuation */
  bool unclosed[3];  /* by quote kind: an earlier one found no closing quote */
} FingerprintScan;

/* Whether c is an ASCII letter or digit: the bytes that make a token. */
static bool
fingerprint_alnum(unsigned char c)
{
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* Whether c is an ASCII digit. */
static bool
fingerprint_digit(unsigned char c)
{
  return c >= '0' && c <= '9';
}

/* Whether c is a hex digit, either case. */
static bool
fingerprint_hexdigit(unsigned char c)
{
  return fingerprint_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* Whether c is ASCII whitespace (space, tab, LF, VT, FF, CR). */
static bool
fingerprint_space(unsigned char c)
{
  return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Whether a match that ends at i ends a token (no letter or digit follows;
 * the window's end counts as an end). */
static bool
fingerprint_boundary(const FingerprintScan *sc, size_t i)
{
  return i >= sc->n || !fingerprint_alnum(sc->s[i]);
}

/* Adds n bytes to the hash and to out. */
static void
fingerprint_sink_write(FingerprintSink *k, const char *p, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    k->hash ^= (unsigned char)p[i];
    k->hash *= FINGERPRINT_FNV_PRIME;
  }
  if (k->out)
    strbuf_append(k->out, p, n);
  k->len += n;
}

/* Emits a piece of the normal form, after the pending space if any (none
 * leads). A piece that does not fit in FINGERPRINT_MAX_BYTES marks the sink
 * full; a divisible one (a word) first gives what fits, cut at a character
 * boundary, while a placeholder or a single character is all or nothing. */
static void
fingerprint_put(FingerprintSink *k, const char *p, size_t n, bool divisible)
{
  if (k->full || n == 0)
    return;
  size_t sp = k->space && k->len > 0 ? 1 : 0;
  size_t room = FINGERPRINT_MAX_BYTES - k->len;
  if (sp + n > room) {
    k->full = true;
    if (!divisible || room <= sp)
      return;
    n = utf8_cut(p, n, room - sp);
    if (n == 0)
      return;
  }
  if (sp)
    fingerprint_sink_write(k, " ", 1);
  k->space = false;
  fingerprint_sink_write(k, p, n);
}

/* Emits a placeholder or other piece that is all or nothing. */
static void
fingerprint_puts(FingerprintSink *k, const char *s)
{
  fingerprint_put(k, s, strlen(s), false);
}

/* The number of digits at i, if there are between min and max of them and
 * no further digit follows; else 0. */
static size_t
fingerprint_digits(const FingerprintScan *sc, size_t i, size_t min, size_t max)
{
  size_t n = 0;
  while (i + n < sc->n && fingerprint_digit(sc->s[i + n]))
    n++;
  return n >= min && n <= max ? n : 0;
}

/* Whether the window holds the literal lit at i. */
static bool
fingerprint_at(const FingerprintScan *sc, size_t i, const char *lit)
{
  size_t n = strlen(lit);
  return i + n <= sc->n && memcmp(sc->s + i, lit, n) == 0;
}

/* A UTC offset at i: [+-]HH, [+-]HHMM or [+-]HH:MM, not followed by a
 * digit. Returns its end, or i. */
static size_t
fingerprint_offset(const FingerprintScan *sc, size_t i)
{
  if (i >= sc->n || (sc->s[i] != '+' && sc->s[i] != '-'))
    return i;
  size_t d = fingerprint_digits(sc, i + 1, 2, 4);
  if (d == 2 && i + 3 < sc->n && sc->s[i + 3] == ':' && fingerprint_digits(sc, i + 4, 2, 2))
    return i + 6;
  return d == 2 || d == 4 ? i + 1 + d : i;
}

/* The zone after a time at i: Z, an offset, or (after one space) an offset
 * of four digits, UTC or GMT, each optionally followed by an offset.
 * Returns its end, or i when there is none. */
static size_t
fingerprint_zone(const FingerprintScan *sc, size_t i)
{
  if (i < sc->n && sc->s[i] == 'Z' && fingerprint_boundary(sc, i + 1))
    return i + 1;
  size_t j = fingerprint_offset(sc, i);
  if (j > i)
    return j;
  if (i + 1 < sc->n && sc->s[i] == ' ') {
    if ((sc->s[i + 1] == '+' || sc->s[i + 1] == '-') && fingerprint_digits(sc, i + 2, 4, 4))
      return i + 6;
    if (fingerprint_at(sc, i + 1, "UTC") || fingerprint_at(sc, i + 1, "GMT")) {
      j = fingerprint_offset(sc, i + 4);
      if (fingerprint_boundary(sc, j))
        return j;
    }
  }
  return i;
}

/* A time of day at i: H:MM:SS (HH:MM too when need_seconds is false), an
 * optional fraction after '.' or ',', an optional zone. Returns its end,
 * or 0. */
static size_t
fingerprint_time(const FingerprintScan *sc, size_t i, bool need_seconds)
{
  size_t h = fingerprint_digits(sc, i, 1, 2);
  if (!h || i + h >= sc->n || sc->s[i + h] != ':' || !fingerprint_digits(sc, i + h + 1, 2, 2))
    return 0;
  size_t j = i + h + 3;
  if (j < sc->n && sc->s[j] == ':' && fingerprint_digits(sc, j + 1, 2, 2))
    j += 3;
  else if (need_seconds)
    return 0;
  if (j + 1 < sc->n && (sc->s[j] == '.' || sc->s[j] == ',') && fingerprint_digit(sc->s[j + 1])) {
    j++;
    while (j < sc->n && fingerprint_digit(sc->s[j]))
      j++;
  }
  j = fingerprint_zone(sc, j);
  return fingerprint_boundary(sc, j) ? j : 0;
}

/* An ISO date at i (YYYY-MM-DD or YYYY/MM/DD), alone or with a time after
 * T or one space. Returns its end, or 0. */
static size_t
fingerprint_iso_date(const FingerprintScan *sc, size_t i)
{
  if (fingerprint_digits(sc, i, 4, 4) != 4 || i + 10 > sc->n)
    return 0;
  unsigned char sep = sc->s[i + 4];
  if ((sep != '-' && sep != '/') || fingerprint_digits(sc, i + 5, 2, 2) != 2 ||
      sc->s[i + 7] != sep || fingerprint_digits(sc, i + 8, 2, 2) != 2)
    return 0;
  size_t j = i + 10;
  if (j < sc->n && (sc->s[j] == 'T' || sc->s[j] == ' ')) {
    size_t t = fingerprint_time(sc, j + 1, false);
    if (t)
      return t;
  }
  return fingerprint_boundary(sc, j) ? j : 0;
}

static const char *const fingerprint_months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char *const fingerprint_weekdays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

/* Whether the three bytes at i are one of names (count entries). */
static bool
fingerprint_name3(const FingerprintScan *sc, size_t i, const char *const *names, size_t count)
{
  if (i + 3 > sc->n)
    return false;
  for (size_t k = 0; k < count; k++)
    if (memcmp(sc->s + i, names[k], 3) == 0)
      return true;
  return false;
}

/* Skips the spaces at i; returns where they end. */
static size_t
fingerprint_skip_spaces(const FingerprintScan *sc, size_t i)
{
  while (i < sc->n && sc->s[i] == ' ')
    i++;
  return i;
}

/* A year after one space at i (ctime's trailing year); returns its end, or i. */
static size_t
fingerprint_year(const FingerprintScan *sc, size_t i)
{
  if (i < sc->n && sc->s[i] == ' ' && fingerprint_digits(sc, i + 1, 4, 4) &&
      fingerprint_boundary(sc, i + 5))
    return i + 5;
  return i;
}

/* A syslog, ctime or JavaScript date at i: [Wkd[,] ]Mon D[D] [YYYY ]time
 * [YYYY]. Returns its end, or 0. */
static size_t
fingerprint_named_date(const FingerprintScan *sc, size_t i)
{
  size_t j = i;
  if (fingerprint_name3(sc, j, fingerprint_weekdays, 7) && j + 3 < sc->n &&
      (sc->s[j + 3] == ' ' || sc->s[j + 3] == ',')) {
    j += 3;
    if (sc->s[j] == ',')
      j++;
    j = fingerprint_skip_spaces(sc, j);
  }
  if (!fingerprint_name3(sc, j, fingerprint_months, 12) || j + 3 >= sc->n || sc->s[j + 3] != ' ')
    return 0;
  j = fingerprint_skip_spaces(sc, j + 3);
  size_t d = fingerprint_digits(sc, j, 1, 2);
  if (!d || j + d >= sc->n || sc->s[j + d] != ' ')
    return 0;
  j += d + 1;
  if (fingerprint_digits(sc, j, 4, 4) && j + 4 < sc->n && sc->s[j + 4] == ' ')
    j += 5;
  size_t t = fingerprint_time(sc, j, true);
  return t ? fingerprint_year(sc, t) : 0;
}

/* A common log format date at i: DD/Mon/YYYY:HH:MM:SS[ zone]. */
static size_t
fingerprint_clf_date(const FingerprintScan *sc, size_t i)
{
  if (fingerprint_digits(sc, i, 2, 2) != 2 || i + 12 > sc->n || sc->s[i + 2] != '/' ||
      !fingerprint_name3(sc, i + 3, fingerprint_months, 12) || sc->s[i + 6] != '/' ||
      fingerprint_digits(sc, i + 7, 4, 4) != 4 || sc->s[i + 11] != ':')
    return 0;
  return fingerprint_time(sc, i + 12, true);
}

/* A timestamp of any kind the header lists, at i. */
static size_t
fingerprint_timestamp(const FingerprintScan *sc, size_t i)
{
  if (!fingerprint_digit(sc->s[i]))
    return fingerprint_named_date(sc, i);
  size_t j = fingerprint_iso_date(sc, i);
  if (!j)
    j = fingerprint_clf_date(sc, i);
  if (!j)
    j = fingerprint_time(sc, i, true);
  return j;
}

/* Exactly n hex digits at i. */
static bool
fingerprint_hex_run(const FingerprintScan *sc, size_t i, size_t n)
{
  if (i + n > sc->n)
    return false;
  for (size_t k = 0; k < n; k++)
    if (!fingerprint_hexdigit(sc->s[i + k]))
      return false;
  return true;
}

/* A UUID at i. */
static size_t
fingerprint_uuid(const FingerprintScan *sc, size_t i)
{
  static const size_t groups[] = {8, 4, 4, 4, 12};
  size_t j = i;
  for (size_t g = 0; g < 5; g++) {
    if (g > 0) {
      if (j >= sc->n || sc->s[j] != '-')
        return 0;
      j++;
    }
    if (!fingerprint_hex_run(sc, j, groups[g]))
      return 0;
    j += groups[g];
  }
  return fingerprint_boundary(sc, j) ? j : 0;
}

/* A hex id at i: 0x and hex digits, or a run of 8+ hex digits with a digit
 * (letters or not: an id drawn at random is all digits now and then, about
 * once in 40 for 8 hex digits, and must still look like its siblings). */
static size_t
fingerprint_hex_id(const FingerprintScan *sc, size_t i)
{
  size_t j = i;
  if (sc->s[i] == '0' && i + 2 < sc->n && (sc->s[i + 1] | 0x20) == 'x' &&
      fingerprint_hexdigit(sc->s[i + 2])) {
    j = i + 2;
    while (j < sc->n && fingerprint_hexdigit(sc->s[j]))
      j++;
    return fingerprint_boundary(sc, j) ? j : 0;
  }
  bool digit = false;
  while (j < sc->n && fingerprint_hexdigit(sc->s[j])) {
    digit = digit || fingerprint_digit(sc->s[j]);
    j++;
  }
  return j - i >= 8 && digit && fingerprint_boundary(sc, j) ? j : 0;
}

/* A version or IPv4 address at i: v/V and 2+ dotted numbers, or 3+. */
static size_t
fingerprint_version(const FingerprintScan *sc, size_t i)
{
  size_t j = i, parts = 0, need = 3;
  if (sc->s[j] == 'v' || sc->s[j] == 'V') {
    j++;
    need = 2;
  }
  for (;;) {
    size_t d = 0;
    while (j + d < sc->n && fingerprint_digit(sc->s[j + d]))
      d++;
    if (!d)
      return 0; /* "1.2." or "v" alone: a dot must lead to a number */
    j += d;
    parts++;
    if (j + 1 < sc->n && sc->s[j] == '.' && fingerprint_digit(sc->s[j + 1]))
      j++;
    else
      break;
  }
  return parts >= need && fingerprint_boundary(sc, j) ? j : 0;
}

/* A number at i: digits, and a fraction when a digit follows the dot.
 * Returns its end (i when there is no digit). */
static size_t
fingerprint_number(const FingerprintScan *sc, size_t i)
{
  size_t j = i;
  while (j < sc->n && fingerprint_digit(sc->s[j]))
    j++;
  if (j > i && j + 1 < sc->n && sc->s[j] == '.' && fingerprint_digit(sc->s[j + 1])) {
    j++;
    while (j < sc->n && fingerprint_digit(sc->s[j]))
      j++;
  }
  return j;
}

/* Units of a duration, longest first where one is the start of another. */
static const char *const fingerprint_units[] = {"ns", "us", "\xc2\xb5s", "\xce\xbcs", "ms", "secs",
                                       "sec", "s", "mins", "min", "m", "hrs", "hr", "h",
                                       "d"};

/* A duration at i: one or more numbers, each glued to a unit, the last
 * ending the token ("3m12s"). */
static size_t
fingerprint_duration(const FingerprintScan *sc, size_t i)
{
  size_t j = i, end = 0;
  while (j < sc->n && fingerprint_digit(sc->s[j])) {
    size_t u = fingerprint_number(sc, j);
    size_t next = 0;
    for (size_t k = 0; k < sizeof fingerprint_units / sizeof *fingerprint_units && !next; k++) {
      size_t n = strlen(fingerprint_units[k]);
      if (u + n <= sc->n && memcmp(sc->s + u, fingerprint_units[k], n) == 0 &&
          (fingerprint_boundary(sc, u + n) || fingerprint_digit(sc->s[u + n])))
        next = u + n;
    }
    if (!next)
      return 0;
    j = next;
    if (fingerprint_boundary(sc, j))
      end = j;
  }
  return end;
}

/* The rules of a token start, at i (an ASCII letter or digit): emits the
 * placeholder and returns where the token ends, or returns 0 when no rule
 * matches (the caller copies the word). */
static size_t
fingerprint_token(const FingerprintScan *sc, FingerprintSink *k, size_t i)
{
  size_t j;
  if ((j = fingerprint_uuid(sc, i))) {
    fingerprint_puts(k, "<U>");
    return j;
  }
  if ((j = fingerprint_timestamp(sc, i))) {
    fingerprint_puts(k, "<T>");
    return j;
  }
  if ((j = fingerprint_hex_id(sc, i))) {
    fingerprint_puts(k, "<H>");
    return j;
  }
  if ((j = fingerprint_version(sc, i))) {
    fingerprint_puts(k, "<V>");
    return j;
  }
  if (!fingerprint_digit(sc->s[i]))
    return 0;
  if ((j = fingerprint_duration(sc, i))) {
    fingerprint_puts(k, "<D>");
    return j;
  }
  j = fingerprint_number(sc, i);
  fingerprint_puts(k, "<N>");
  /* Letters glued after it are its unit ("512MB"), kept. */
  size_t w = j;
  while (w < sc->n && fingerprint_alnum(sc->s[w]))
    w++;
  fingerprint_put(k, (const char *)sc->s + j, w - j, true);
  return w;
}

/* Whether c may be part of a path segment. */
static bool
fingerprint_segment_byte(unsigned char c)
{
  return fingerprint_alnum(c) || c >= 0x80 || (c != 0 && strchr("._-~@+%", c) != NULL);
}

/* Directories whose next segments vary from run to run (temp dirs, user
 * names, store hashes): the root, how many segments below it become <P>,
 * and whether it must start a path (anchored) or may sit anywhere. */
static const struct {
  const char *root;
  int segments;
  bool anchored;
} fingerprint_roots[] = {
    {"/tmp/", 1, true},          {"/var/tmp/", 1, true},
    {"/dev/shm/", 1, true},      {"/private/tmp/", 1, true},
    {"/home/", 1, true},         {"/Users/", 1, true},
    {"/nix/store/", 1, true},    {"/var/folders/", 4, true},
    {"/private/var/folders/", 4, true}, {"/.pnpm/", 1, false},
};

/* A root of fingerprint_roots at i (a '/'): emits it with its varying segments as
 * <P> and returns where it ends, or 0. Only segments followed by '/' are
 * replaced, so a file directly under the root keeps its name. */
static size_t
fingerprint_path_root(const FingerprintScan *sc, FingerprintSink *k, size_t i)
{
  unsigned char prev = i > 0 ? sc->s[i - 1] : ' ';
  bool path_start = !fingerprint_alnum(prev) && (prev == 0 || strchr("._-~", prev) == NULL);
  for (size_t r = 0; r < sizeof fingerprint_roots / sizeof *fingerprint_roots; r++) {
    if ((fingerprint_roots[r].anchored && !path_start) ||
        !fingerprint_at(sc, i, fingerprint_roots[r].root))
      continue;
    size_t j = i + strlen(fingerprint_roots[r].root);
    /* The root's last '/' is emitted with each segment's. */
    fingerprint_put(k, (const char *)sc->s + i, j - i - 1, false);
    for (int seg = 0; seg < fingerprint_roots[r].segments; seg++) {
      size_t e = j;
      while (e < sc->n && fingerprint_segment_byte(sc->s[e]))
        e++;
      if (e == j || e >= sc->n || sc->s[e] != '/')
        break;
      fingerprint_puts(k, "/<P>");
      j = e + 1;
    }
    fingerprint_puts(k, "/");
    return j;
  }
  return 0;
}

static void fingerprint_scan(FingerprintScan *sc, FingerprintSink *k, size_t i, size_t end);

/* Whether the quoted text s[i..end) is a path or file name: no
 * whitespace, a '/' or a file extension at its end, and not an e-mail
 * address. */
static bool
fingerprint_quoted_path(const FingerprintScan *sc, size_t i, size_t end)
{
  bool slash = false, at = false;
  size_t dot = 0;
  for (size_t j = i; j < end; j++) {
    unsigned char c = sc->s[j];
    if (fingerprint_space(c))
      return false;
    slash |= c == '/';
    at |= c == '@';
    if (c == '.')
      dot = j + 1;
  }
  if (slash)
    return true;
  if (at || !dot || dot >= end || end - dot > 4 || fingerprint_digit(sc->s[dot]))
    return false;
  for (size_t j = dot; j < end; j++)
    if (!fingerprint_alnum(sc->s[j]))
      return false;
  return true;
}

/* A quoted value at i (a quote character), closed before end: emits it and
 * returns where it ends, or 0 when the quote is a literal character (an
 * apostrophe, a double quote of a structured record, a quote closed
 * nowhere). */
static size_t
fingerprint_quote(FingerprintScan *sc, FingerprintSink *k, size_t i, size_t end)
{
  bool whole = end == sc->n; /* not inside a quoted path */
  unsigned char q = sc->s[i];
  int kind = q == '\'' ? 0 : q == '"' ? 1 : 2;
  if (q == '"' && sc->structured)
    return 0;
  if (q == '\'' && i > 0 && fingerprint_alnum(sc->s[i - 1]))
    return 0;
  if (sc->unclosed[kind] && !sc->cut)
    return 0;
  size_t j = i + 1;
  while (j < end) {
    if (sc->s[j] == '\\') {
      j += 2;
      continue;
    }
    if (sc->s[j] == q && (q != '\'' || fingerprint_boundary(sc, j + 1)))
      break;
    j++;
  }
  if (j >= end) {
    if (!whole)
      return 0;
    if (!sc->cut) {
      /* Later quotes of this kind find no close either: say so at once
       * rather than scan the rest of the window again for each. */
      sc->unclosed[kind] = true;
      return 0;
    }
    /* The close may lie past the window: the value runs to its end. */
    fingerprint_put(k, (const char *)&sc->s[i], 1, false);
    fingerprint_puts(k, "<Q>");
    return sc->n;
  }
  fingerprint_put(k, (const char *)&sc->s[i], 1, false);
  if (fingerprint_quoted_path(sc, i + 1, j))
    fingerprint_scan(sc, k, i + 1, j);
  else
    fingerprint_puts(k, "<Q>");
  fingerprint_put(k, (const char *)&sc->s[j], 1, false);
  return j + 1;
}

/* Normalises s[i..end) into k. */
static void
fingerprint_scan(FingerprintScan *sc, FingerprintSink *k, size_t i, size_t end)
{
  while (i < end && !k->full) {
    unsigned char c = sc->s[i];
    size_t j = 0;
    if (fingerprint_space(c)) {
      k->space = true;
      i++;
      continue;
    }
    if (fingerprint_alnum(c)) {
      if (i == 0 || !fingerprint_alnum(sc->s[i - 1]))
        j = fingerprint_token(sc, k, i);
      if (!j) {
        /* A word: copied whole, so digits inside it are never a token. */
        j = i;
        while (j < end && fingerprint_alnum(sc->s[j]))
          j++;
        fingerprint_put(k, (const char *)sc->s + i, j - i, true);
      }
    } else if (c == '/') {
      j = fingerprint_path_root(sc, k, i);
    } else if (c == '\'' || c == '"' || c == '`') {
      j = fingerprint_quote(sc, k, i, end);
    }
    if (!j) {
      /* Any other character, whole. */
      uint32_t cp;
      size_t n = c < 0x80 ? 1 : utf8_next(sc->s + i, end - i, &cp);
      fingerprint_put(k, (const char *)sc->s + i, n, false);
      j = i + n;
    }
    i = j;
  }
}

/* Whether the line is a structured record: JSON ('{' first) or logfmt
 * (key= first). */
static bool
fingerprint_structured(const FingerprintScan *sc)
{
  size_t i = 0;
  while (i < sc->n && fingerprint_space(sc->s[i]))
    i++;
  if (i < sc->n && sc->s[i] == '{')
    return true;
  size_t key = i;
  while (i < sc->n && (fingerprint_alnum(sc->s[i]) || sc->s[i] == '_' || sc->s[i] == '.'))
    i++;
  return i > key && !fingerprint_digit(sc->s[key]) && i + 1 < sc->n && sc->s[i] == '=' &&
         sc->s[i + 1] != '=';
}

/* Runs the scan over the window of text into k. */
static void
fingerprint_run(const char *text, size_t len, FingerprintSink *k)
{
  if (len == 0)
    return;
  FingerprintScan sc = {0};
  sc.s = (const unsigned char *)text;
  sc.n = utf8_cut(text, len, FINGERPRINT_SCAN_BYTES);
  sc.cut = sc.n < len;
  sc.structured = fingerprint_structured(&sc);
  fingerprint_scan(&sc, k, 0, sc.n);
}

/* Appends the normal form to out (see fingerprint.h). */
void
fingerprint_normalise(const char *text, size_t len, StrBuf *out)
{
  FingerprintSink k = {.out = out, .hash = FINGERPRINT_FNV_OFFSET};
  fingerprint_run(text, len, &k);
}

/* The fingerprint of a line and its pattern, hashed as the normal form is
 * made (see fingerprint.h). */
uint64_t
fingerprint_of(const char *text, size_t len, int pattern)
{
  FingerprintSink k = {.out = NULL, .hash = FINGERPRINT_FNV_OFFSET};
  /* The pattern first, as fixed-width little-endian bytes: the pair
   * (pattern, normal form) maps to one byte string, the same everywhere. */
  uint32_t p = (uint32_t)pattern;
  char pb[4] = {(char)(p & 0xff), (char)((p >> 8) & 0xff), (char)((p >> 16) & 0xff),
                (char)((p >> 24) & 0xff)};
  fingerprint_sink_write(&k, pb, sizeof pb);
  k.len = 0;
  fingerprint_run(text, len, &k);
  return k.hash;
}

/* fp as 16 lowercase hex digits, most significant first. */
void
fingerprint_hex(uint64_t fp, char out[17])
{
  static const char digits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; i--) {
    out[i] = digits[fp & 0xf];
    fp >>= 4;
  }
  out[16] = '\0';
}
