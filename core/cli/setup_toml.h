/*
 * Editing one table of a TOML file (Codex's config.toml) without
 * disturbing the rest (`vigil setup codex`). No TOML library for C is
 * packaged in Debian 12, and `codex mcp add` cannot show a change before
 * making it, so setup splices: the file is scanned statement by statement
 * (table headers, key = value lines with every kind of string, arrays and
 * inline tables, spanning lines or not, comments), and only the lines of
 * the table setup owns are replaced, removed or appended; every other byte
 * stays.
 *
 * Limits, each refused with the file's line and nothing changed (docs/mcp.md
 * says how to edit by hand then): a file the scanner cannot read with
 * certainty (a statement it does not recognise, a string or bracket never
 * closed, a quoted key with escapes, a NUL byte); the table defined any
 * other way than by its own header, since splicing lines would then break
 * the file: a dotted key reaching into it (`mcp_servers.vigil.command =`
 * under the root or [mcp_servers]), an inline table or array of tables on
 * its way (`mcp_servers = { ... }`, `[[mcp_servers]]`). Nothing is decoded
 * but keys; values are only skipped over.
 *
 * The table is the header line and the lines after it, up to its last
 * key = value statement (comments among them included; blank lines and
 * comments after it belong to whatever follows). Its sub-tables
 * ([mcp_servers.vigil.env]) are its own. A new table goes at the end,
 * after a blank line; removing one also removes a blank line before it,
 * so adding then removing gives back a file that ended with a newline
 * byte for byte.
 */
#ifndef VIGIL_SETUP_TOML_H
#define VIGIL_SETUP_TOML_H

#include <stddef.h>

#include "base/strbuf.h"

typedef struct {
  char *text; /* NUL-terminated */
  size_t len;
  char name[256];
} SetupToml;

/* Takes a copy of text (NULL: an empty file) and scans it. Returns 0, or
 * -1 with err naming name and the line. */
int setup_toml_load(SetupToml *t, const char *name, const char *text, size_t len, StrBuf *err);

void setup_toml_free(SetupToml *t);

/* Makes the table path[0..n-1] (and nothing under it) hold body: key =
 * value lines, each ending with a newline. Returns 1 when it added the
 * table, 2 when it replaced it, 0 when the text already held exactly that,
 * -1 with err set (the limits above). */
int setup_toml_set_table(SetupToml *t, const char *const *path, size_t n, const char *body,
                         StrBuf *err);

/* Removes the table path[0..n-1] and its sub-tables. Returns 1 when the
 * text changed, 0 when there was none, -1 with err set. */
int setup_toml_drop_table(SetupToml *t, const char *const *path, size_t n, StrBuf *err);

/* Appends s as a TOML basic string ("...", with \" \\ and control
 * characters escaped). */
void setup_toml_string(StrBuf *out, const char *s);

#endif
