/*
 * Editing one entry of a mapping under a top-level key of a YAML file
 * (Goose's config.yaml: extensions.vigil) without disturbing the rest
 * (`vigil setup goose`). libyaml parses the file and tells where each
 * node starts; the entry's lines are replaced, removed or appended, and
 * the result is parsed again and compared, as a tree of strings, with what
 * was meant (everything else equal, the entry as written): a splice that
 * does not give exactly that is an error and nothing is written.
 *
 * Limits, each refused with the file's line and nothing changed: not one
 * document whose top is a block mapping (an empty file is fine); a line
 * break other than LF or CR LF (libyaml would count lines otherwise); the
 * parent key's value written in flow style with entries ({a: ...}); keys
 * that are not plain strings on the way; a key given twice; an anchor in
 * the entry that something else refers to (the check after the splice
 * catches it).
 */
#ifndef VIGIL_SETUP_YAML_H
#define VIGIL_SETUP_YAML_H

#include <stddef.h>

#include "base/strbuf.h"

typedef struct {
  char *text; /* NUL-terminated */
  size_t len;
  char name[256];
} SetupYaml;

/* Takes a copy of text (NULL: an empty file) and checks it parses. Returns
 * 0, or -1 with err naming name, the line and libyaml's reason. */
int setup_yaml_load(SetupYaml *y, const char *name, const char *text, size_t len, StrBuf *err);

void setup_yaml_free(SetupYaml *y);

/* Makes parent (a top-level key) hold, under key, the block body: YAML
 * lines of the entry's value, each indented by two spaces more than the
 * entry's key, which setup_yaml_set_entry shifts to the file's own
 * indentation (lines start with "  " for one level). Returns 1 when it
 * added the entry, 2 when it replaced it, 0 when it was already so, -1
 * with err set. */
int setup_yaml_set_entry(SetupYaml *y, const char *parent, const char *key, const char *body,
                         StrBuf *err);

/* Removes parent's entry key, and parent itself when that leaves it
 * empty. Returns 1 when the text changed, 0 when there was none, -1 with
 * err set. */
int setup_yaml_drop_entry(SetupYaml *y, const char *parent, const char *key, StrBuf *err);

#endif
