/*
 * Formatting for a person at a terminal (see cli_fmt.h). Colour is decided
 * once per process, from stdout alone: stderr messages are never coloured,
 * so that they read the same in a log file as on a screen.
 */
#include "cli/cli_fmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_width.h"
#include "base/clock.h"
#include "base/memory.h"
#include "base/textfmt.h"
#include "spec/units.h"

static bool cli_fmt_colour;

void
cli_fmt_init(void)
{
  const char *no_colour = getenv("NO_COLOR");
  const char *term = getenv("TERM");
  cli_fmt_colour = isatty(STDOUT_FILENO) && (no_colour == NULL || no_colour[0] == '\0') &&
                   !(term && strcmp(term, "dumb") == 0);
}

bool
cli_fmt_colour_on(void)
{
  return cli_fmt_colour;
}

const char *
cli_fmt_sgr(CliColour c)
{
  static const char *const sgr[] = {
    [kCliColNone] = "",         [kCliColBold] = "\033[1m",   [kCliColDim] = "\033[2m",
    [kCliColRed] = "\033[31m",  [kCliColGreen] = "\033[32m", [kCliColYellow] = "\033[33m",
    [kCliColCyan] = "\033[36m",  [kCliColBlue] = "\033[34m",  [kCliColMagenta] = "\033[35m",
  };
  return cli_fmt_colour ? sgr[c] : "";
}

const char *
cli_fmt_reset(CliColour c)
{
  return cli_fmt_colour && c != kCliColNone ? "\033[0m" : "";
}

size_t
cli_fmt_width(void)
{
  struct winsize ws;
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  const char *cols = getenv("COLUMNS");
  if (cols) {
    long n = strtol(cols, NULL, 10);
    if (n > 0 && n < 100000)
      return (size_t)n;
  }
  return 160;
}

/* --- durations and times ------------------------------------------------ */

/* The longest bare number taken, "123456789012.123456789" and a unit. */
#define CLI_FMT_BARE_MAX 40

int
cli_fmt_parse_duration(const char *s, uint64_t *ms, const char **why)
{
  /* A bare number (digits, an optional fraction) is seconds: the config's
   * grammar with the unit s added. */
  size_t digits = strspn(s, "0123456789");
  const char *rest = s + digits;
  if (*rest == '.')
    rest += 1 + strspn(rest + 1, "0123456789");
  char bare[CLI_FMT_BARE_MAX + 2];
  const char *text = s;
  if (digits > 0 && *rest == '\0' && (size_t)(rest - s) <= CLI_FMT_BARE_MAX) {
    snprintf(bare, sizeof bare, "%ss", s);
    text = bare;
  }
  int64_t v;
  if (units_parse(kUnitMs, text, &v, why) != 0)
    return -1;
  if ((uint64_t)v > CLI_DURATION_MAX_MS) {
    *why = "the value is too large";
    return -1;
  }
  *ms = (uint64_t)v;
  return 0;
}

void
cli_fmt_duration(StrBuf *out, uint64_t ms)
{
  textfmt_duration(out, ms);
}

int
cli_fmt_parse_time(const char *s, size_t len, int64_t *epoch_ms)
{
  char buf[64];
  if (s == NULL || len == 0 || len >= sizeof buf)
    return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  int n = 0;
  if (sscanf(buf, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
             &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
    return -1;
  const char *p = buf + n;
  int64_t msec = 0;
  if (*p == '.') {
    p++;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
      if (digits < 3) {
        msec = msec * 10 + (*p - '0');
        digits++;
      }
      p++;
    }
    while (digits++ < 3)
      msec *= 10;
  }
  int64_t offset_s = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int oh = 0, om = 0;
    if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
      return -1;
    offset_s = (int64_t)(oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
    p += 6;
  } else {
    return -1;
  }
  if (*p != '\0')
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  time_t t = timegm(&tm);
  if (t == (time_t)-1)
    return -1;
  *epoch_ms = ((int64_t)t - offset_s) * 1000 + msec;
  return 0;
}

int64_t
cli_fmt_now_ms(void)
{
  return clock_now_ms();
}

/* --- text --------------------------------------------------------------- */

void
cli_fmt_safe(StrBuf *out, const char *s, size_t len, bool keep_tabs)
{
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && s[i] != '\t')
      continue;
    textfmt_escape(out, s + start, i - start);
    if (i < len)
      strbuf_putc(out, keep_tabs ? '\t' : ' ');
    start = i + 1;
  }
}

size_t
cli_fmt_text_width(const char *s, size_t len)
{
  return cli_width_text(s, len);
}

void
cli_fmt_cut(StrBuf *out, const char *s, size_t len, size_t width)
{
  if (cli_width_text(s, len) <= width) {
    strbuf_append(out, s, len);
    return;
  }
  if (width == 0)
    return;
  size_t used;
  strbuf_append(out, s, cli_width_fit(s, len, width - 1, &used));
  strbuf_puts(out, "\xE2\x80\xA6"); /* … */
}

/* --- tables ------------------------------------------------------------- */

void
cli_table_init(CliTable *t, size_t ncols, const char *const *headers, const bool *right)
{
  memset(t, 0, sizeof *t);
  t->ncols = ncols < CLI_TABLE_MAX_COLS ? ncols : CLI_TABLE_MAX_COLS;
  for (size_t i = 0; i < t->ncols; i++) {
    t->headers[i] = headers[i];
    t->right[i] = right ? right[i] : false;
  }
}

void
cli_table_row(CliTable *t)
{
  if (t->nrows == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 16;
    t->cells = xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
  }
  memset(&t->cells[t->nrows * t->ncols], 0, t->ncols * sizeof *t->cells);
  t->nrows++;
}

void
cli_table_set(CliTable *t, size_t col, const char *text, CliColour colour)
{
  if (t->nrows == 0 || col >= t->ncols)
    return;
  CliCell *cell = &t->cells[(t->nrows - 1) * t->ncols + col];
  free(cell->text);
  cell->text = xstrdup(text ? text : "");
  cell->colour = colour;
}

/* Writes text padded to width (left or right aligned) in colour c. */
static void
cli_table_cell(FILE *f, const char *text, size_t width, bool right, CliColour c, bool last)
{
  size_t w = cli_fmt_text_width(text, strlen(text));
  size_t pad = w < width ? width - w : 0;
  if (right)
    fprintf(f, "%*s", (int)pad, "");
  if (text[0] != '\0')
    fprintf(f, "%s%s%s", cli_fmt_sgr(c), text, cli_fmt_reset(c));
  if (!right && !last)
    fprintf(f, "%*s", (int)pad, "");
}

void
cli_table_print(const CliTable *t, FILE *f, size_t width)
{
  size_t widths[CLI_TABLE_MAX_COLS] = {0};
  for (size_t c = 0; c < t->ncols; c++) {
    widths[c] = strlen(t->headers[c]);
    for (size_t r = 0; r < t->nrows; r++) {
      const char *text = t->cells[r * t->ncols + c].text;
      size_t w = text ? cli_fmt_text_width(text, strlen(text)) : 0;
      if (w > widths[c])
        widths[c] = w;
    }
  }
  /* What is left for the last column once the others and their two-space
   * gaps are placed; never less than a readable minimum (the row wraps). */
  size_t used = 0;
  for (size_t c = 0; c + 1 < t->ncols; c++)
    used += widths[c] + 2;
  size_t last = width > used + 12 ? width - used : 12;
  for (size_t r = 0; r <= t->nrows; r++) {
    for (size_t c = 0; c < t->ncols; c++) {
      bool is_last = c + 1 == t->ncols;
      const char *text;
      CliColour colour;
      if (r == 0) {
        text = t->headers[c];
        colour = kCliColBold;
      } else {
        const CliCell *cell = &t->cells[(r - 1) * t->ncols + c];
        text = cell->text ? cell->text : "";
        colour = cell->colour;
      }
      StrBuf cut = STRBUF_INIT;
      if (is_last) {
        cli_fmt_cut(&cut, text, strlen(text), last);
        text = strbuf_cstr(&cut);
      }
      cli_table_cell(f, text, widths[c], t->right[c], colour, is_last);
      strbuf_free(&cut);
      if (!is_last)
        fputs("  ", f);
    }
    fputc('\n', f);
  }
}

void
cli_table_free(CliTable *t)
{
  for (size_t i = 0; i < t->nrows * t->ncols; i++)
    free(t->cells[i].text);
  free(t->cells);
  memset(t, 0, sizeof *t);
}
