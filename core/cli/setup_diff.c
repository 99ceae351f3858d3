/*
 * A unified diff of two texts (see setup_diff.h).
 *
 * Myers: for each number of edits d, the furthest point reached on each
 * diagonal k = x - y; the V array of every d is kept to walk the path back.
 * d is bounded, and step d keeps 2d + 3 diagonals, so the memory is at
 * most about SETUP_DIFF_MAX_EDITS^2 integers (8 MB), and far less for the
 * few lines setup changes.
 */
#include "cli/setup_diff.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"

/* A text cut into lines (each with its newline, the last maybe without). */
typedef struct {
  const char **at;
  size_t *len;
  size_t n;
} DiffLines;

static void
diff_lines(DiffLines *l, const char *s, size_t len)
{
  size_t cap = 16;
  l->at = xmalloc(cap * sizeof *l->at);
  l->len = xmalloc(cap * sizeof *l->len);
  l->n = 0;
  size_t i = 0;
  while (s && i < len) {
    const char *nl = memchr(s + i, '\n', len - i);
    size_t end = nl ? (size_t)(nl - s) + 1 : len;
    if (l->n == cap) {
      cap *= 2;
      l->at = xrealloc(l->at, cap * sizeof *l->at);
      l->len = xrealloc(l->len, cap * sizeof *l->len);
    }
    l->at[l->n] = s + i;
    l->len[l->n++] = end - i;
    i = end;
  }
}

static bool
diff_same(const DiffLines *a, size_t i, const DiffLines *b, size_t j)
{
  return a->len[i] == b->len[j] && memcmp(a->at[i], b->at[j], a->len[i]) == 0;
}

/* One line of the edit script: ' ' kept, '-' deleted (a's), '+' inserted. */
typedef struct {
  char op;
  size_t line; /* index in a for ' ' and '-', in b for '+' */
  size_t other; /* for ' ': index in b */
} DiffOp;

/* The edit script from a to b into ops (n + m entries at most). Returns its
 * length, or 0 with *gave_up when it needs more than SETUP_DIFF_MAX_EDITS. */
static size_t
diff_script(const DiffLines *a, const DiffLines *b, DiffOp *ops, bool *gave_up)
{
  long n = (long)a->n, m = (long)b->n;
  long max = n + m < SETUP_DIFF_MAX_EDITS ? n + m : SETUP_DIFF_MAX_EDITS;
  long off = max + 1;
  long **trace = xcalloc((size_t)max + 1, sizeof *trace);
  long *v = xcalloc((size_t)(2 * max + 3), sizeof *v);
  long found = -1;
  for (long d = 0; d <= max && found < 0; d++) {
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1]
                                                                          : v[off + k - 1] + 1;
      long y = x - k;
      while (x < n && y < m && diff_same(a, (size_t)x, b, (size_t)y)) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    /* Diagonals -d-1 .. d+1 of this step: what step d+1 reads back. */
    trace[d] = xmalloc((size_t)(2 * d + 3) * sizeof **trace);
    memcpy(trace[d], v + off - d - 1, (size_t)(2 * d + 3) * sizeof *v);
  }
  size_t count = 0;
  if (found >= 0) {
    /* Walk back from (n, m), writing the script from its end. */
    size_t total = (size_t)(n + m);
    size_t pos = total;
    long x = n, y = m;
    for (long d = found; d >= 0; d--) {
      long k = x - y;
      /* Step d-1's diagonal j is at trace[d - 1][j + d]. */
      long *vd = d > 0 ? trace[d - 1] : NULL;
      long pk, px, py;
      if (d == 0) {
        pk = 0;
        px = 0;
      } else if (k == -d || (k != d && vd[k - 1 + d] < vd[k + 1 + d])) {
        pk = k + 1;
        px = vd[pk + d];
      } else {
        pk = k - 1;
        px = vd[pk + d];
      }
      py = px - pk;
      long sx = d == 0 ? 0 : (pk == k + 1 ? px : px + 1); /* x after the edit */
      while (x > sx && y > sx - k) {
        x--;
        y--;
        ops[--pos] = (DiffOp){' ', (size_t)x, (size_t)y};
      }
      if (d > 0) {
        if (pk == k + 1)
          ops[--pos] = (DiffOp){'+', (size_t)py, 0};
        else
          ops[--pos] = (DiffOp){'-', (size_t)px, 0};
        x = px;
        y = py;
      }
    }
    count = total - pos;
    memmove(ops, ops + pos, count * sizeof *ops);
  }
  for (long d = 0; d <= max && trace[d]; d++)
    free(trace[d]);
  free(trace);
  free(v);
  *gave_up = found < 0;
  return count;
}

/* Appends one line with its mark, and a note when it has no newline. */
static void
diff_put(StrBuf *out, char mark, const char *s, size_t len)
{
  strbuf_putc(out, mark);
  strbuf_append(out, s, len);
  if (len == 0 || s[len - 1] != '\n')
    strbuf_puts(out, "\n\\ No newline at end of file\n");
}

void
setup_diff(StrBuf *out, const char *a_name, const char *a, size_t alen, const char *b_name,
           const char *b, size_t blen)
{
  if ((a == NULL) == (b == NULL) && alen == blen && (alen == 0 || memcmp(a, b, alen) == 0))
    return;
  DiffLines la, lb;
  diff_lines(&la, a, alen);
  diff_lines(&lb, b, blen);
  DiffOp *ops = xmalloc((la.n + lb.n + 1) * sizeof *ops);
  bool gave_up = false;
  size_t nops = diff_script(&la, &lb, ops, &gave_up);
  if (gave_up) { /* everything replaced */
    nops = 0;
    for (size_t i = 0; i < la.n; i++)
      ops[nops++] = (DiffOp){'-', i, 0};
    for (size_t j = 0; j < lb.n; j++)
      ops[nops++] = (DiffOp){'+', j, 0};
  }
  strbuf_printf(out, "--- %s\n+++ %s\n", a ? a_name : "/dev/null", b ? b_name : "/dev/null");
  enum { kContext = 3 };
  size_t i = 0;
  while (i < nops) {
    if (ops[i].op == ' ') {
      i++;
      continue;
    }
    /* A hunk: from kContext kept lines before this change to kContext
     * after the last change that is at most 2 * kContext kept lines on. */
    size_t start = i >= kContext ? i - kContext : 0;
    while (start < i && ops[start].op != ' ')
      start++;
    size_t end = i;
    for (size_t j = i; j < nops; j++) {
      if (ops[j].op != ' ') {
        end = j + 1;
        continue;
      }
      if (j - end >= 2 * kContext)
        break;
    }
    size_t stop = end + kContext < nops ? end + kContext : nops;
    /* Line numbers: count a's and b's lines before start. */
    size_t a0 = 0, b0 = 0, an = 0, bn = 0;
    for (size_t j = 0; j < start; j++) {
      a0 += ops[j].op != '+';
      b0 += ops[j].op != '-';
    }
    for (size_t j = start; j < stop; j++) {
      an += ops[j].op != '+';
      bn += ops[j].op != '-';
    }
    strbuf_printf(out, "@@ -%zu,%zu +%zu,%zu @@\n", an ? a0 + 1 : a0, an, bn ? b0 + 1 : b0, bn);
    for (size_t j = start; j < stop; j++) {
      if (ops[j].op == '+')
        diff_put(out, '+', lb.at[ops[j].line], lb.len[ops[j].line]);
      else
        diff_put(out, ops[j].op, la.at[ops[j].line], la.len[ops[j].line]);
    }
    i = stop;
  }
  free(ops);
  free(la.at);
  free(la.len);
  free(lb.at);
  free(lb.len);
}
