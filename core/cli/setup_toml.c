/*
 * Scanning TOML statements and splicing one table (see setup_toml.h).
 *
 * The scanner reads the file as a list of statements: a table header
 * ([a.b] or [[a.b]]), a key = value, or a line of nothing but white space
 * and a comment. For each it keeps the byte span of its lines and its key
 * path (a header's, or the current table's path and the dotted key). A
 * value is skipped over by its own grammar (strings of the four kinds,
 * arrays and inline tables nested to any depth up to a bound, and bare
 * words: numbers, booleans, dates), so that a line inside a multi-line
 * string or array is never taken for a header.
 */
#include "cli/setup_toml.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "cli/setup_file.h"

#define TOML_KEY_PARTS_MAX 32
#define TOML_DEPTH_MAX 256

typedef enum {
  kTomlBlank = 0,   /* white space and a comment at most */
  kTomlTable,       /* [a.b] */
  kTomlArrayTable,  /* [[a.b]] */
  kTomlKeyValue,    /* a.b = value */
} TomlKind;

typedef struct {
  TomlKind kind;
  size_t start, end;                /* its lines: [start, end), end past the newline */
  char *path[TOML_KEY_PARTS_MAX];   /* absolute key path (decoded parts) */
  size_t npath;
} TomlStmt;

typedef struct {
  const char *s;
  size_t len, i;
  size_t line;       /* 1-based, of i */
  const char *why;   /* what went wrong */
  TomlStmt *stmts;
  size_t n, cap;
} TomlScan;

static void
toml_stmts_free(TomlScan *sc)
{
  for (size_t k = 0; k < sc->n; k++)
    for (size_t p = 0; p < sc->stmts[k].npath; p++)
      free(sc->stmts[k].path[p]);
  free(sc->stmts);
}

static bool
toml_fail(TomlScan *sc, const char *why)
{
  if (sc->why == NULL)
    sc->why = why;
  return false;
}

static void
toml_advance(TomlScan *sc, size_t n)
{
  for (size_t k = 0; k < n && sc->i < sc->len; k++)
    if (sc->s[sc->i++] == '\n')
      sc->line++;
}

static char
toml_at(const TomlScan *sc, size_t off)
{
  return sc->i + off < sc->len ? sc->s[sc->i + off] : '\0';
}

static void
toml_spaces(TomlScan *sc)
{
  while (toml_at(sc, 0) == ' ' || toml_at(sc, 0) == '\t')
    toml_advance(sc, 1);
}

/* A comment to the end of the line (not the newline). */
static void
toml_comment(TomlScan *sc)
{
  if (toml_at(sc, 0) != '#')
    return;
  while (sc->i < sc->len && sc->s[sc->i] != '\n')
    toml_advance(sc, 1);
}

/* The end of a line: optional spaces and comment, then a newline or the
 * end of the text. */
static bool
toml_line_end(TomlScan *sc)
{
  toml_spaces(sc);
  toml_comment(sc);
  if (sc->i >= sc->len)
    return true;
  if (toml_at(sc, 0) == '\r' && toml_at(sc, 1) == '\n')
    toml_advance(sc, 1);
  if (toml_at(sc, 0) != '\n')
    return toml_fail(sc, "text after a statement on its line");
  toml_advance(sc, 1);
  return true;
}

/* Skips a string of any of the four kinds at i. */
static bool
toml_skip_string(TomlScan *sc)
{
  char q = toml_at(sc, 0);
  bool multi = toml_at(sc, 1) == q && toml_at(sc, 2) == q;
  toml_advance(sc, multi ? 3 : 1);
  for (;;) {
    char c = toml_at(sc, 0);
    if (sc->i >= sc->len)
      return toml_fail(sc, "a string that never ends");
    if (c == '\\' && q == '"') {
      toml_advance(sc, 2);
      continue;
    }
    if (c == '\n' && !multi)
      return toml_fail(sc, "a string that never ends on its line");
    if (c == q) {
      if (!multi) {
        toml_advance(sc, 1);
        return true;
      }
      size_t run = 0;
      while (toml_at(sc, run) == q)
        run++;
      if (run >= 3) {
        if (run > 5)
          return toml_fail(sc, "too many quotes at the end of a multi-line string");
        toml_advance(sc, run);
        return true;
      }
      toml_advance(sc, run);
      continue;
    }
    toml_advance(sc, 1);
  }
}

/* Skips white space, newlines and comments inside an array. */
static void
toml_array_space(TomlScan *sc)
{
  for (;;) {
    char c = toml_at(sc, 0);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      toml_advance(sc, 1);
    else if (c == '#')
      toml_comment(sc);
    else
      return;
  }
}

static bool toml_skip_value(TomlScan *sc, int depth);

/* Reads one key part at i into *out (decoded). */
static bool
toml_key_part(TomlScan *sc, char **out)
{
  char c = toml_at(sc, 0);
  size_t start = sc->i;
  if (c == '"' || c == '\'') {
    toml_advance(sc, 1);
    while (sc->i < sc->len && sc->s[sc->i] != c && sc->s[sc->i] != '\n') {
      if (c == '"' && sc->s[sc->i] == '\\')
        return toml_fail(sc, "a quoted key with an escape, which setup does not decode");
      toml_advance(sc, 1);
    }
    if (toml_at(sc, 0) != c)
      return toml_fail(sc, "a quoted key that never ends");
    toml_advance(sc, 1);
    *out = xmalloc(sc->i - start - 1);
    memcpy(*out, sc->s + start + 1, sc->i - start - 2);
    (*out)[sc->i - start - 2] = '\0';
    return true;
  }
  while (sc->i < sc->len && (strchr("_-", sc->s[sc->i]) || (sc->s[sc->i] >= 'a' && sc->s[sc->i] <= 'z') ||
                             (sc->s[sc->i] >= 'A' && sc->s[sc->i] <= 'Z') ||
                             (sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9')) &&
         sc->s[sc->i] != '\0')
    toml_advance(sc, 1);
  if (sc->i == start)
    return toml_fail(sc, "a key was expected");
  *out = xmalloc(sc->i - start + 1);
  memcpy(*out, sc->s + start, sc->i - start);
  (*out)[sc->i - start] = '\0';
  return true;
}

/* Reads a dotted key, appending its parts to path. */
static bool
toml_key(TomlScan *sc, char **path, size_t *n)
{
  for (;;) {
    toml_spaces(sc);
    if (*n == TOML_KEY_PARTS_MAX)
      return toml_fail(sc, "a key of too many parts");
    if (!toml_key_part(sc, &path[*n]))
      return false;
    (*n)++;
    toml_spaces(sc);
    if (toml_at(sc, 0) != '.')
      return true;
    toml_advance(sc, 1);
  }
}

/* Skips an inline table { k = v, ... }. */
static bool
toml_skip_inline(TomlScan *sc, int depth)
{
  toml_advance(sc, 1);
  toml_array_space(sc);
  if (toml_at(sc, 0) == '}') {
    toml_advance(sc, 1);
    return true;
  }
  for (;;) {
    char *parts[TOML_KEY_PARTS_MAX];
    size_t n = 0;
    bool ok = toml_key(sc, parts, &n);
    for (size_t k = 0; k < n; k++)
      free(parts[k]);
    if (!ok)
      return false;
    if (toml_at(sc, 0) != '=')
      return toml_fail(sc, "'=' expected in an inline table");
    toml_advance(sc, 1);
    toml_spaces(sc);
    if (!toml_skip_value(sc, depth + 1))
      return false;
    toml_array_space(sc);
    if (toml_at(sc, 0) == ',') {
      toml_advance(sc, 1);
      toml_array_space(sc);
      if (toml_at(sc, 0) == '}') { /* TOML 1.1 allows a trailing comma */
        toml_advance(sc, 1);
        return true;
      }
      continue;
    }
    if (toml_at(sc, 0) == '}') {
      toml_advance(sc, 1);
      return true;
    }
    return toml_fail(sc, "an inline table that never ends");
  }
}

/* Skips one value at i. */
static bool
toml_skip_value(TomlScan *sc, int depth)
{
  if (depth > TOML_DEPTH_MAX)
    return toml_fail(sc, "values nested too deep");
  char c = toml_at(sc, 0);
  if (c == '"' || c == '\'')
    return toml_skip_string(sc);
  if (c == '{')
    return toml_skip_inline(sc, depth);
  if (c == '[') {
    toml_advance(sc, 1);
    for (;;) {
      toml_array_space(sc);
      if (toml_at(sc, 0) == ']') {
        toml_advance(sc, 1);
        return true;
      }
      if (sc->i >= sc->len)
        return toml_fail(sc, "an array that never ends");
      if (!toml_skip_value(sc, depth + 1))
        return false;
      toml_array_space(sc);
      if (toml_at(sc, 0) == ',')
        toml_advance(sc, 1);
      else if (toml_at(sc, 0) != ']')
        return toml_fail(sc, "',' or ']' expected in an array");
    }
  }
  /* A bare word: a number, a boolean, a date and time (which may hold one
   * space, between the date and the time). */
  size_t start = sc->i;
  while (sc->i < sc->len) {
    c = sc->s[sc->i];
    if (c == ' ' && sc->i > start && sc->i - start == 10 && toml_at(sc, 1) >= '0' &&
        toml_at(sc, 1) <= '9') {
      toml_advance(sc, 1); /* 1979-05-27 07:32:00 */
      continue;
    }
    if (strchr(" \t\r\n,]}#", c) != NULL)
      break;
    if ((unsigned char)c < 0x20 || c == '=' || c == '[' || c == '{' || c == '"' || c == '\'')
      return toml_fail(sc, "a value setup does not recognise");
    toml_advance(sc, 1);
  }
  return sc->i > start ? true : toml_fail(sc, "a value was expected");
}

static TomlStmt *
toml_push(TomlScan *sc)
{
  if (sc->n == sc->cap) {
    sc->cap = sc->cap ? 2 * sc->cap : 64;
    sc->stmts = xrealloc(sc->stmts, sc->cap * sizeof *sc->stmts);
  }
  TomlStmt *st = &sc->stmts[sc->n++];
  memset(st, 0, sizeof *st);
  return st;
}

/* Scans the whole text into statements. */
static bool
toml_scan(TomlScan *sc)
{
  if (memchr(sc->s, '\0', sc->len) != NULL)
    return toml_fail(sc, "a NUL byte");
  char *table[TOML_KEY_PARTS_MAX];
  size_t ntable = 0;
  bool ok = true;
  while (ok && sc->i < sc->len) {
    TomlStmt *st = toml_push(sc);
    st->start = sc->i;
    toml_spaces(sc);
    char c = toml_at(sc, 0);
    if (c == '#' || c == '\n' || c == '\r' || sc->i >= sc->len) {
      st->kind = kTomlBlank;
      ok = toml_line_end(sc);
    } else if (c == '[') {
      bool array = toml_at(sc, 1) == '[';
      st->kind = array ? kTomlArrayTable : kTomlTable;
      toml_advance(sc, array ? 2 : 1);
      ok = toml_key(sc, st->path, &st->npath);
      if (ok && (toml_at(sc, 0) != ']' || (array && toml_at(sc, 1) != ']')))
        ok = toml_fail(sc, "a table header that never ends");
      if (ok) {
        toml_advance(sc, array ? 2 : 1);
        ok = toml_line_end(sc);
      }
      for (size_t k = 0; k < ntable; k++)
        free(table[k]);
      ntable = 0;
      for (size_t k = 0; ok && k < st->npath; k++)
        table[ntable++] = xstrdup(st->path[k]);
    } else {
      st->kind = kTomlKeyValue;
      for (size_t k = 0; k < ntable; k++)
        st->path[st->npath++] = xstrdup(table[k]);
      ok = toml_key(sc, st->path, &st->npath);
      if (ok && toml_at(sc, 0) != '=')
        ok = toml_fail(sc, "'=' expected after a key");
      if (ok) {
        toml_advance(sc, 1);
        toml_spaces(sc);
        ok = toml_skip_value(sc, 0) && toml_line_end(sc);
      }
    }
    st->end = sc->i;
  }
  for (size_t k = 0; k < ntable; k++)
    free(table[k]);
  return ok;
}

/* --- the table ----------------------------------------------------------- */

/* How path a (na parts) relates to p (np): whether a starts with p. */
static bool
toml_under(char *const *a, size_t na, const char *const *p, size_t np)
{
  if (na < np)
    return false;
  for (size_t k = 0; k < np; k++)
    if (strcmp(a[k], p[k]) != 0)
      return false;
  return true;
}

/* Whether a (na parts) is a proper start of p. */
static bool
toml_above(char *const *a, size_t na, const char *const *p, size_t np)
{
  if (na >= np)
    return false;
  for (size_t k = 0; k < na; k++)
    if (strcmp(a[k], p[k]) != 0)
      return false;
  return true;
}

/* The 1-based line of offset i. */
static size_t
toml_line_of(const SetupToml *t, size_t i)
{
  size_t line = 1;
  for (size_t k = 0; k < i && k < t->len; k++)
    line += t->text[k] == '\n';
  return line;
}

/* A table's region: [start, end) from its header to the end of its last
 * key = value line. */
typedef struct {
  size_t start, end;
} TomlRegion;

/* Scans t and finds every region of a table at or under path. Checks
 * that nothing else defines anything there. Returns the number of regions
 * (written to out, at most max), or -1 with err set. */
static int
toml_regions(const SetupToml *t, const char *const *path, size_t n, TomlRegion *out, int max,
             StrBuf *err)
{
  TomlScan sc = {t->text, t->len, 0, 1, NULL, NULL, 0, 0};
  if (!toml_scan(&sc)) {
    strbuf_printf(err, "%s: line %zu: %s: setup cannot read this file with certainty and changes "
                       "nothing in it",
                  t->name, sc.line, sc.why);
    toml_stmts_free(&sc);
    return -1;
  }
  int count = 0;
  bool inside = false; /* the current table is ours */
  for (size_t k = 0; k < sc.n; k++) {
    TomlStmt *st = &sc.stmts[k];
    const char *bad = NULL;
    if (st->kind == kTomlTable || st->kind == kTomlArrayTable) {
      bool ours = toml_under(st->path, st->npath, path, n);
      if (st->kind == kTomlArrayTable && (ours || toml_above(st->path, st->npath, path, n)))
        bad = "an array of tables";
      inside = ours && bad == NULL;
      if (inside) {
        if (count == max) {
          bad = "too many tables";
        } else {
          out[count].start = st->start;
          out[count].end = st->end;
          count++;
        }
      }
    } else if (st->kind == kTomlKeyValue) {
      if (inside)
        out[count - 1].end = st->end;
      else if (toml_under(st->path, st->npath, path, n) ||
               toml_above(st->path, st->npath, path, n))
        bad = "a key reaching into it from outside its own [header]";
    }
    if (bad) {
      StrBuf dotted = STRBUF_INIT;
      for (size_t p = 0; p < n; p++)
        strbuf_printf(&dotted, "%s%s", p ? "." : "", path[p]);
      strbuf_printf(err, "%s: line %zu: %s defines %s: setup splices only a table written as its "
                         "own [%s] and changes nothing in this file",
                    t->name, toml_line_of(t, st->start), bad, strbuf_cstr(&dotted),
                    strbuf_cstr(&dotted));
      strbuf_free(&dotted);
      toml_stmts_free(&sc);
      return -1;
    }
  }
  toml_stmts_free(&sc);
  return count;
}

/* Replaces [a, b) of t's text with ins. */
static void
toml_splice(SetupToml *t, size_t a, size_t b, const char *ins, size_t inslen)
{
  char *text = setup_splice(t->text, t->len, a, b, ins, inslen, &t->len);
  free(t->text);
  t->text = text;
}

/* Appends the header of path: bare keys as they are, others quoted. */
static void
toml_header(StrBuf *out, const char *const *path, size_t n)
{
  strbuf_putc(out, '[');
  for (size_t k = 0; k < n; k++) {
    if (k)
      strbuf_putc(out, '.');
    bool bare = path[k][0] != '\0';
    for (const char *p = path[k]; *p && bare; p++)
      bare = strchr("_-", *p) || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
             (*p >= '0' && *p <= '9');
    if (bare)
      strbuf_puts(out, path[k]);
    else
      setup_toml_string(out, path[k]);
  }
  strbuf_puts(out, "]\n");
}

/* Removes the regions (in order), each with a blank line before it. */
static void
toml_cut(SetupToml *t, const TomlRegion *r, int count)
{
  for (int k = count - 1; k >= 0; k--) {
    size_t a = r[k].start, b = r[k].end;
    /* A region that ends the file without a newline: its line's end goes
     * with the newline before it. */
    if (b == t->len && a > 0 && t->text[b - 1] != '\n' && t->text[a - 1] == '\n')
      a--;
    if (a >= 2 && t->text[a - 1] == '\n' && t->text[a - 2] == '\n')
      a--;
    else if (a == 1 && t->text[0] == '\n')
      a = 0;
    toml_splice(t, a, b, "", 0);
  }
}

int
setup_toml_set_table(SetupToml *t, const char *const *path, size_t n, const char *body,
                     StrBuf *err)
{
  TomlRegion r[16];
  int count = toml_regions(t, path, n, r, 16, err);
  if (count < 0)
    return -1;
  StrBuf want = STRBUF_INIT;
  toml_header(&want, path, n);
  strbuf_puts(&want, body);
  if (count == 1 && r[0].end - r[0].start == want.len &&
      memcmp(t->text + r[0].start, want.data, want.len) == 0) {
    strbuf_free(&want);
    return 0;
  }
  if (count > 0) {
    /* In place of the first region; the others go. */
    size_t at = r[0].start;
    toml_cut(t, r + 1, count - 1);
    size_t end = r[0].end;
    /* A table that ended the file without a newline keeps it that way. */
    toml_splice(t, at, end, want.data, want.len);
  } else {
    StrBuf add = STRBUF_INIT;
    if (t->len > 0 && t->text[t->len - 1] != '\n')
      strbuf_putc(&add, '\n');
    if (t->len > 0)
      strbuf_putc(&add, '\n');
    strbuf_append(&add, want.data, want.len);
    toml_splice(t, t->len, t->len, add.data, add.len);
    strbuf_free(&add);
  }
  strbuf_free(&want);
  /* What was written must scan, and hold exactly one such table. */
  TomlRegion check[2];
  if (toml_regions(t, path, n, check, 2, err) != 1) {
    if (err->len == 0)
      strbuf_printf(err, "%s: internal error: the edit did not give one table", t->name);
    return -1;
  }
  return count > 0 ? 2 : 1;
}

int
setup_toml_drop_table(SetupToml *t, const char *const *path, size_t n, StrBuf *err)
{
  TomlRegion r[16];
  int count = toml_regions(t, path, n, r, 16, err);
  if (count <= 0)
    return count;
  toml_cut(t, r, count);
  TomlRegion check[1];
  if (toml_regions(t, path, n, check, 1, err) != 0) {
    if (err->len == 0)
      strbuf_printf(err, "%s: internal error: the table is still there", t->name);
    return -1;
  }
  return 1;
}

int
setup_toml_load(SetupToml *t, const char *name, const char *text, size_t len, StrBuf *err)
{
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->text = xmalloc(len + 1);
  if (len)
    memcpy(t->text, text, len);
  t->text[len] = '\0';
  t->len = len;
  TomlRegion none[1];
  static const char *const nothing[] = {"\x01"};
  if (toml_regions(t, nothing, 1, none, 1, err) < 0) {
    setup_toml_free(t);
    return -1;
  }
  return 0;
}

void
setup_toml_free(SetupToml *t)
{
  free(t->text);
  t->text = NULL;
}

void
setup_toml_string(StrBuf *out, const char *s)
{
  strbuf_putc(out, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      strbuf_printf(out, "\\%c", *p);
    else if (*p == '\n')
      strbuf_puts(out, "\\n");
    else if (*p == '\t')
      strbuf_puts(out, "\\t");
    else if (*p < 0x20 || *p == 0x7f)
      strbuf_printf(out, "\\u%04X", *p);
    else
      strbuf_putc(out, (char)*p);
  }
  strbuf_putc(out, '"');
}
