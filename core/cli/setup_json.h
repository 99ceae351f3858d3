/*
 * Editing a harness's JSON config without disturbing it (`vigil setup`):
 * every byte setup does not own stays as the person wrote it, key order,
 * indentation, number spellings (0.7 stays 0.7) and all, so that --remove
 * gives back the very file setup found.
 *
 * jansson parses the file (refusing, with its line and column, one that is
 * not JSON, whose top is not an object, or that names a key twice, which
 * would make "the" value ambiguous) and answers every question about what
 * it holds; nothing is decoded by hand. An edit is a splice of the text:
 * the spans of the container and its members are found by walking the
 * text jansson already accepted, the new value is written by jansson (with
 * the file's own indentation), and the result is parsed again and compared
 * with the same edit made on jansson's tree (json_equal): a splice that
 * does not give exactly what was meant is an error, and nothing is
 * written.
 *
 * Where a value is inserted: at the end of its object or array; an empty
 * container becomes a multi-line one indented one step (the file's step:
 * the smallest indentation of any line, else two spaces) past the line
 * that opens it; a container written on one line gets the value on that
 * line.
 */
#ifndef VIGIL_SETUP_JSON_H
#define VIGIL_SETUP_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/strbuf.h"

typedef struct {
  char *text;      /* the current text, NUL-terminated */
  size_t len;
  json_t *root;    /* its tree (an object) */
  char name[256];  /* the file's name, for errors */
} SetupJson;

/* One step of a path from the root: a member (key) or an element (key
 * NULL, index). */
typedef struct {
  const char *key;
  size_t index;
} SetupJsonStep;

/* Parses text (len bytes; NULL or only white space: an empty object, "{}"
 * and a newline) into j. Returns 0, or -1 with err naming name, the line,
 * the column and jansson's reason (j then holds nothing to free). */
int setup_json_load(SetupJson *j, const char *name, const char *text, size_t len, StrBuf *err);

void setup_json_free(SetupJson *j);

/* The value at path (n steps; borrowed from j->root), or NULL. */
json_t *setup_json_get(const SetupJson *j, const SetupJsonStep *path, size_t n);

/* Sets member key of the object at path to value (stolen), inserting it
 * at the end of the object or replacing the value in place. */
int setup_json_set(SetupJson *j, const SetupJsonStep *path, size_t n, const char *key,
                   json_t *value, StrBuf *err);

/* Removes member key of the object at path (nothing when absent). */
int setup_json_del(SetupJson *j, const SetupJsonStep *path, size_t n, const char *key,
                   StrBuf *err);

/* Appends value (stolen) to the array at path. */
int setup_json_append(SetupJson *j, const SetupJsonStep *path, size_t n, json_t *value,
                      StrBuf *err);

/* Replaces element index of the array at path with value (stolen). */
int setup_json_replace(SetupJson *j, const SetupJsonStep *path, size_t n, size_t index,
                       json_t *value, StrBuf *err);

/* Removes element index of the array at path. */
int setup_json_remove(SetupJson *j, const SetupJsonStep *path, size_t n, size_t index,
                      StrBuf *err);

/* Sets the member at the object path keys[0..n-1] to value (stolen): the
 * objects on the way that are missing are made (in one insertion, at the
 * first missing one). Nothing is written when it already equals value.
 * Returns 1 when the text changed, 0 when not, -1 with err set (a value on
 * the way that is not an object: setup leaves it alone). */
int setup_json_put(SetupJson *j, const char *const *keys, size_t n, json_t *value, StrBuf *err);

/* Removes the member at keys[0..n-1], then each object on the way (from
 * keys[n-2] up to keys[0]) that it left empty. Returns 1 when the text
 * changed, 0 when there was nothing, -1 with err set. */
int setup_json_drop(SetupJson *j, const char *const *keys, size_t n, StrBuf *err);

/* Whether the text is an empty object and nothing else of note. */
bool setup_json_empty(const SetupJson *j);

#endif
