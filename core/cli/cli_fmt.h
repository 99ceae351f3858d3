/*
 * How the client shows things to a person: colour (only on a terminal, and
 * never when NO_COLOR is set), the terminal's width, durations both ways
 * ("3m12s" out; "500ms" / "30s" / "5m" / "2h" / a bare number of seconds in),
 * RFC 3339 times back to the epoch, text made safe for a terminal and cut
 * to a width, and tables with aligned columns.
 */
#ifndef VIGIL_CLI_FMT_H
#define VIGIL_CLI_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/strbuf.h"

/* The colours the client uses, as SGR sequences. */
typedef enum {
  kCliColNone = 0,
  kCliColBold,
  kCliColDim,
  kCliColRed,
  kCliColGreen,
  kCliColYellow,
  kCliColCyan,
  kCliColBlue,
  kCliColMagenta,
} CliColour;

/* Decides once, from stdout, whether to colour: stdout is a terminal,
 * NO_COLOR is unset or empty, and TERM is not "dumb". */
void cli_fmt_init(void);
bool cli_fmt_colour_on(void);

/* The escape that starts colour c, and the one that resets; both "" when
 * colour is off or c is kCliColNone. */
const char *cli_fmt_sgr(CliColour c);
const char *cli_fmt_reset(CliColour c);

/* The display width to fit lines into: the terminal's columns when stdout
 * is one, else $COLUMNS, else 160. */
size_t cli_fmt_width(void);

/* The longest duration cli_fmt_parse_duration reads (about 31,700 years): far
 * beyond any limit the engine takes, far below overflow. */
#define CLI_DURATION_MAX_MS 1000000000000000ULL

/* Parses a duration in the config's grammar (units_parse, units.h: numbers
 * each with a unit, ms, s, m, h or d, largest first, each at most once:
 * 500ms, 1.5s, 1h30m, 7d), or a bare number, which is seconds (5, 0.5), as
 * sleep(1) and timeout(1) read one. Returns 0 with *ms set, or -1 with *why
 * set to a phrase saying what is wrong ("the units must come largest
 * first, ..."), for a message that has already named the option and quoted
 * the value; also when it is longer than CLI_DURATION_MAX_MS. */
int cli_fmt_parse_duration(const char *s, uint64_t *ms, const char **why);

/* Appends ms as a person reads it (textfmt_duration: 850ms, 12.3s, 3m12s). */
void cli_fmt_duration(StrBuf *out, uint64_t ms);

/* Parses an RFC 3339 time with optional fraction and a Z or +hh:mm offset
 * (len bytes at s). Returns 0 with *epoch_ms set, or -1. */
int cli_fmt_parse_time(const char *s, size_t len, int64_t *epoch_ms);

/* The wall clock in ms since the epoch. */
int64_t cli_fmt_now_ms(void);

/* Appends len bytes of process text so that a terminal shows it and does
 * nothing else: control characters, escapes and the characters that make
 * text look other than it is are shown escaped (textfmt_escape). A tab is
 * kept when keep_tabs (a line printed on its own) and shown as a space
 * otherwise (a table cell). */
void cli_fmt_safe(StrBuf *out, const char *s, size_t len, bool keep_tabs);

/* The width of UTF-8 text on a terminal in display columns (cli_width.h:
 * a CJK character or an emoji takes two). */
size_t cli_fmt_text_width(const char *s, size_t len);

/* Appends at most width display columns of the UTF-8 text s, ending with
 * "…" when it had to cut; never splits a character. */
void cli_fmt_cut(StrBuf *out, const char *s, size_t len, size_t width);

/* A table: a header row and rows of cells, each cell with an optional
 * colour; columns are padded to their widest cell, the last one is cut so
 * that each row fits the width given to cli_table_print. */
#define CLI_TABLE_MAX_COLS 16

typedef struct {
  char *text;
  CliColour colour;
} CliCell;

typedef struct {
  size_t ncols;
  const char *headers[CLI_TABLE_MAX_COLS];
  bool right[CLI_TABLE_MAX_COLS]; /* right-aligned (numbers) */
  CliCell *cells;                 /* nrows * ncols, row-major */
  size_t nrows;
  size_t cap;
} CliTable;

void cli_table_init(CliTable *t, size_t ncols, const char *const *headers, const bool *right);
/* Starts a new row; cells are then set with cli_table_set. */
void cli_table_row(CliTable *t);
/* Sets cell col of the last row to a copy of text. */
void cli_table_set(CliTable *t, size_t col, const char *text, CliColour colour);
/* Prints the header and the rows to f, each row at most width columns. */
void cli_table_print(const CliTable *t, FILE *f, size_t width);
void cli_table_free(CliTable *t);

#endif
