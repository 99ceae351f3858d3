/*
 * Splicing edits into JSON text (see setup_json.h).
 *
 * The walk over the text (json_walk_*) assumes what jansson has already
 * checked: one valid JSON value. It still never reads past the end, and
 * any surprise is an error, never a guess.
 */
#include "cli/setup_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "cli/setup_file.h"

/* How deep the walk goes (jansson refuses deeper files anyway). */
#define SETUP_JSON_DEPTH_MAX 2048

/* --- walking the text ---------------------------------------------------- */

/* A member or element of a container: for a member, its key's token
 * [key, key_end); its value [start, end). */
typedef struct {
  size_t key, key_end, start, end;
} JsonKid;

/* A container: its brackets' offsets and its members or elements. */
typedef struct {
  size_t open, close;
  bool object;
  JsonKid *kids;
  size_t n;
} JsonBox;

static size_t
json_walk_ws(const char *s, size_t len, size_t i)
{
  while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
    i++;
  return i;
}

/* The end of the value starting at i (past its last byte), or 0 when the
 * text is not what jansson accepted. */
static size_t
json_walk_value(const char *s, size_t len, size_t i, int depth)
{
  if (i >= len || depth > SETUP_JSON_DEPTH_MAX)
    return 0;
  if (s[i] == '"') {
    for (i++; i < len; i++) {
      if (s[i] == '\\')
        i++;
      else if (s[i] == '"')
        return i + 1;
    }
    return 0;
  }
  if (s[i] == '{' || s[i] == '[') {
    char close = s[i] == '{' ? '}' : ']';
    bool object = s[i] == '{';
    i = json_walk_ws(s, len, i + 1);
    if (i < len && s[i] == close)
      return i + 1;
    for (;;) {
      if (object) {
        i = json_walk_value(s, len, i, depth + 1); /* the key */
        i = i ? json_walk_ws(s, len, i) : 0;
        if (i == 0 || i >= len || s[i] != ':')
          return 0;
        i = json_walk_ws(s, len, i + 1);
      }
      i = json_walk_value(s, len, i, depth + 1);
      if (i == 0)
        return 0;
      i = json_walk_ws(s, len, i);
      if (i < len && s[i] == ',') {
        i = json_walk_ws(s, len, i + 1);
        continue;
      }
      return i < len && s[i] == close ? i + 1 : 0;
    }
  }
  size_t start = i;
  while (i < len && strchr("+-.0123456789eEtruefalsn", s[i]) != NULL)
    i++;
  return i > start ? i : 0;
}

/* Fills box with the container starting at i. Returns false when the text
 * there is not one. */
static bool
json_walk_box(const char *s, size_t len, size_t i, JsonBox *box)
{
  memset(box, 0, sizeof *box);
  if (i >= len || (s[i] != '{' && s[i] != '['))
    return false;
  box->object = s[i] == '{';
  box->open = i;
  char close = box->object ? '}' : ']';
  size_t cap = 0;
  i = json_walk_ws(s, len, i + 1);
  if (i < len && s[i] == close) {
    box->close = i;
    return true;
  }
  for (;;) {
    JsonKid kid = {0, 0, 0, 0};
    if (box->object) {
      kid.key = i;
      kid.key_end = json_walk_value(s, len, i, 1);
      if (kid.key_end == 0 || s[i] != '"')
        return false;
      i = json_walk_ws(s, len, kid.key_end);
      if (i >= len || s[i] != ':')
        return false;
      i = json_walk_ws(s, len, i + 1);
    }
    kid.start = i;
    kid.end = json_walk_value(s, len, i, 1);
    if (kid.end == 0)
      return false;
    if (!box->object)
      kid.key = kid.key_end = kid.start;
    if (box->n == cap) {
      cap = cap ? 2 * cap : 8;
      box->kids = xrealloc(box->kids, cap * sizeof *box->kids);
    }
    box->kids[box->n++] = kid;
    i = json_walk_ws(s, len, kid.end);
    if (i < len && s[i] == ',') {
      i = json_walk_ws(s, len, i + 1);
      continue;
    }
    if (i < len && s[i] == close) {
      box->close = i;
      return true;
    }
    return false;
  }
}

/* Whether the key token [a, b) of s decodes to key. */
static bool
json_walk_key_is(const char *s, size_t a, size_t b, const char *key)
{
  json_t *k = json_loadb(s + a, b - a, JSON_DECODE_ANY, NULL);
  bool same = k && json_is_string(k) && strcmp(json_string_value(k), key) == 0;
  json_decref(k);
  return same;
}

/* The container at path into box. Returns false when the text does not
 * have it (which jansson's tree said it has: an internal error). */
static bool
json_walk_path(const SetupJson *j, const SetupJsonStep *path, size_t n, JsonBox *box)
{
  size_t at = json_walk_ws(j->text, j->len, 0);
  for (size_t step = 0;; step++) {
    if (!json_walk_box(j->text, j->len, at, box))
      return false;
    if (step == n)
      return true;
    size_t found = box->n;
    for (size_t i = 0; i < box->n && found == box->n; i++) {
      if (path[step].key == NULL ? (!box->object && i == path[step].index)
                                 : (box->object && json_walk_key_is(j->text, box->kids[i].key,
                                                                    box->kids[i].key_end,
                                                                    path[step].key)))
        found = i;
    }
    if (found == box->n) {
      free(box->kids);
      return false;
    }
    at = box->kids[found].start;
    free(box->kids);
  }
}

/* --- indentation --------------------------------------------------------- */

/* The white space at the start of the line holding offset i. */
static void
json_line_indent(const SetupJson *j, size_t i, StrBuf *out)
{
  size_t start = i;
  while (start > 0 && j->text[start - 1] != '\n')
    start--;
  size_t end = start;
  while (end < j->len && (j->text[end] == ' ' || j->text[end] == '\t'))
    end++;
  strbuf_append(out, j->text + start, end - start);
}

/* The file's indentation step: the shortest non-empty indentation of any
 * line (a tab when that is what it uses), else two spaces. */
static void
json_step(const SetupJson *j, StrBuf *out)
{
  size_t best = 0;
  char kind = ' ';
  for (size_t i = 0; i < j->len;) {
    size_t k = i;
    while (k < j->len && (j->text[k] == ' ' || j->text[k] == '\t'))
      k++;
    if (k > i && k < j->len && j->text[k] != '\n' && (best == 0 || k - i < best)) {
      best = k - i;
      kind = j->text[i];
    }
    const char *nl = memchr(j->text + k, '\n', j->len - k);
    i = nl ? (size_t)(nl - j->text) + 1 : j->len;
  }
  if (best == 0) {
    strbuf_puts(out, "  ");
    return;
  }
  for (size_t i = 0; i < (kind == '\t' ? 1 : best); i++)
    strbuf_putc(out, kind);
}

/* Appends value as JSON: on one line when !multi, else each line after the
 * first indented by indent plus its depth in steps of step. */
static void
json_render(StrBuf *out, const json_t *value, bool multi, const char *indent, const char *step)
{
  char *text = json_dumps(value, JSON_ENCODE_ANY | (multi ? JSON_INDENT(1) : 0));
  if (text == NULL)
    abort(); /* jansson fails only for want of memory here */
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (p != text) {
      size_t depth = 0;
      while (depth < n && p[depth] == ' ')
        depth++;
      strbuf_puts(out, indent);
      for (size_t d = 0; d < depth; d++)
        strbuf_puts(out, step);
      strbuf_append(out, p + depth, n - depth);
    } else {
      strbuf_append(out, p, n);
    }
    if (!nl)
      break;
    strbuf_putc(out, '\n');
    p = nl + 1;
  }
  free(text);
}

/* Whether the container spans more than one line. */
static bool
json_box_multi(const SetupJson *j, const JsonBox *box)
{
  return memchr(j->text + box->open, '\n', box->close - box->open) != NULL;
}

/* The indentation of the box's members: the first member's, when it
 * starts its own line; else the opening line's plus one step. */
static void
json_kid_indent(const SetupJson *j, const JsonBox *box, const char *step, StrBuf *out)
{
  if (box->n > 0) {
    size_t k = box->kids[0].key;
    size_t b = k;
    while (b > box->open && (j->text[b - 1] == ' ' || j->text[b - 1] == '\t'))
      b--;
    if (j->text[b - 1] == '\n') {
      strbuf_append(out, j->text + b, k - b);
      return;
    }
  }
  json_line_indent(j, box->open, out);
  strbuf_puts(out, step);
}

/* --- splicing and checking ----------------------------------------------- */

/* Replaces [a, b) of the text with ins, checks the result against expect
 * (stolen) and makes it current. Returns 0, or -1 with err set (the text
 * is then unchanged). */
static int
json_splice(SetupJson *j, size_t a, size_t b, const char *ins, json_t *expect, StrBuf *err)
{
  size_t len;
  char *text = setup_splice(j->text, j->len, a, b, ins, strlen(ins), &len);
  json_error_t je;
  json_t *got = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (got == NULL || !json_equal(got, expect)) {
    strbuf_printf(err, "%s: internal error: the edit did not give the JSON meant (%s); nothing "
                       "was written",
                  j->name, got ? "a different value" : je.text);
    json_decref(got);
    json_decref(expect);
    free(text);
    return -1;
  }
  json_decref(expect);
  json_decref(j->root);
  free(j->text);
  j->root = got;
  j->text = text;
  j->len = len;
  return 0;
}

/* A copy of the tree with the container at path found in it. */
static json_t *
json_copy_at(const SetupJson *j, const SetupJsonStep *path, size_t n, json_t **at)
{
  json_t *copy = json_deep_copy(j->root);
  json_t *cur = copy;
  for (size_t i = 0; i < n && cur; i++)
    cur = path[i].key ? json_object_get(cur, path[i].key) : json_array_get(cur, path[i].index);
  *at = cur;
  return copy;
}

/* The usual preamble of an edit: the container in the text and in a copy
 * of the tree. Returns false with err set when either lacks it. */
static bool
json_edit_begin(SetupJson *j, const SetupJsonStep *path, size_t n, bool object, JsonBox *box,
                json_t **copy, json_t **at, StrBuf *err)
{
  *copy = json_copy_at(j, path, n, at);
  if (*at == NULL || (object ? !json_is_object(*at) : !json_is_array(*at)) ||
      !json_walk_path(j, path, n, box) || box->object != object) {
    strbuf_printf(err, "%s: internal error: no %s where one was expected", j->name,
                  object ? "object" : "array");
    json_decref(*copy);
    return false;
  }
  return true;
}

/* Inserts the rendered member or element (key NULL: an element) at the
 * end of box. */
static void
json_insert_text(const SetupJson *j, const JsonBox *box, const char *key, const json_t *value,
                 StrBuf *ins, size_t *a, size_t *b)
{
  StrBuf step = STRBUF_INIT, indent = STRBUF_INIT, base = STRBUF_INIT;
  json_step(j, &step);
  json_kid_indent(j, box, strbuf_cstr(&step), &indent);
  bool multi = box->n == 0 || json_box_multi(j, box);
  if (box->n > 0) {
    *a = *b = box->kids[box->n - 1].end;
    strbuf_puts(ins, multi ? ",\n" : ", ");
    if (multi)
      strbuf_puts(ins, strbuf_cstr(&indent));
  } else {
    *a = box->open + 1;
    *b = box->close;
    strbuf_putc(ins, '\n');
    strbuf_puts(ins, strbuf_cstr(&indent));
  }
  if (key) {
    json_t *k = json_string(key);
    json_render(ins, k, false, "", "");
    json_decref(k);
    strbuf_puts(ins, ": ");
  }
  json_render(ins, value, multi, strbuf_cstr(&indent), strbuf_cstr(&step));
  if (box->n == 0) {
    json_line_indent(j, box->open, &base);
    strbuf_putc(ins, '\n');
    strbuf_puts(ins, strbuf_cstr(&base));
  }
  strbuf_free(&step);
  strbuf_free(&indent);
  strbuf_free(&base);
}

/* The span that removing kid i of box takes out. */
static void
json_remove_span(const JsonBox *box, size_t i, size_t *a, size_t *b)
{
  if (box->n == 1) {
    *a = box->open + 1;
    *b = box->close;
  } else if (i > 0) {
    *a = box->kids[i - 1].end;
    *b = box->kids[i].end;
  } else {
    *a = box->kids[0].key;
    *b = box->kids[1].key;
  }
}

/* Replaces kid i's value with value, indented as its line is. */
static void
json_replace_text(const SetupJson *j, const JsonBox *box, size_t i, const json_t *value,
                  StrBuf *ins)
{
  StrBuf step = STRBUF_INIT, indent = STRBUF_INIT;
  json_step(j, &step);
  json_line_indent(j, box->kids[i].key, &indent);
  json_render(ins, value, json_box_multi(j, box), strbuf_cstr(&indent), strbuf_cstr(&step));
  strbuf_free(&step);
  strbuf_free(&indent);
}

/* --- the edits ----------------------------------------------------------- */

int
setup_json_set(SetupJson *j, const SetupJsonStep *path, size_t n, const char *key,
               json_t *value, StrBuf *err)
{
  JsonBox box;
  json_t *copy, *at;
  if (!json_edit_begin(j, path, n, true, &box, &copy, &at, err)) {
    json_decref(value);
    return -1;
  }
  size_t found = box.n;
  for (size_t i = 0; i < box.n && found == box.n; i++)
    if (json_walk_key_is(j->text, box.kids[i].key, box.kids[i].key_end, key))
      found = i;
  StrBuf ins = STRBUF_INIT;
  size_t a, b;
  if (found < box.n) {
    json_replace_text(j, &box, found, value, &ins);
    a = box.kids[found].start;
    b = box.kids[found].end;
  } else {
    json_insert_text(j, &box, key, value, &ins, &a, &b);
  }
  json_object_set_new(at, key, value);
  int rc = json_splice(j, a, b, strbuf_cstr(&ins), copy, err);
  strbuf_free(&ins);
  free(box.kids);
  return rc;
}

int
setup_json_del(SetupJson *j, const SetupJsonStep *path, size_t n, const char *key, StrBuf *err)
{
  JsonBox box;
  json_t *copy, *at;
  if (!json_edit_begin(j, path, n, true, &box, &copy, &at, err))
    return -1;
  size_t found = box.n;
  for (size_t i = 0; i < box.n && found == box.n; i++)
    if (json_walk_key_is(j->text, box.kids[i].key, box.kids[i].key_end, key))
      found = i;
  int rc = 0;
  if (found < box.n) {
    size_t a, b;
    json_remove_span(&box, found, &a, &b);
    json_object_del(at, key);
    rc = json_splice(j, a, b, "", copy, err);
  } else {
    json_decref(copy);
  }
  free(box.kids);
  return rc;
}

int
setup_json_append(SetupJson *j, const SetupJsonStep *path, size_t n, json_t *value, StrBuf *err)
{
  JsonBox box;
  json_t *copy, *at;
  if (!json_edit_begin(j, path, n, false, &box, &copy, &at, err)) {
    json_decref(value);
    return -1;
  }
  StrBuf ins = STRBUF_INIT;
  size_t a, b;
  json_insert_text(j, &box, NULL, value, &ins, &a, &b);
  json_array_append_new(at, value);
  int rc = json_splice(j, a, b, strbuf_cstr(&ins), copy, err);
  strbuf_free(&ins);
  free(box.kids);
  return rc;
}

int
setup_json_replace(SetupJson *j, const SetupJsonStep *path, size_t n, size_t index,
                   json_t *value, StrBuf *err)
{
  JsonBox box;
  json_t *copy, *at;
  if (!json_edit_begin(j, path, n, false, &box, &copy, &at, err)) {
    json_decref(value);
    return -1;
  }
  if (index >= box.n) {
    strbuf_printf(err, "%s: internal error: no element %zu", j->name, index);
    json_decref(copy);
    json_decref(value);
    free(box.kids);
    return -1;
  }
  StrBuf ins = STRBUF_INIT;
  json_replace_text(j, &box, index, value, &ins);
  json_array_set_new(at, index, value);
  int rc = json_splice(j, box.kids[index].start, box.kids[index].end, strbuf_cstr(&ins), copy,
                       err);
  strbuf_free(&ins);
  free(box.kids);
  return rc;
}

int
setup_json_remove(SetupJson *j, const SetupJsonStep *path, size_t n, size_t index, StrBuf *err)
{
  JsonBox box;
  json_t *copy, *at;
  if (!json_edit_begin(j, path, n, false, &box, &copy, &at, err))
    return -1;
  if (index >= box.n) {
    strbuf_printf(err, "%s: internal error: no element %zu", j->name, index);
    json_decref(copy);
    free(box.kids);
    return -1;
  }
  size_t a, b;
  json_remove_span(&box, index, &a, &b);
  json_array_remove(at, index);
  int rc = json_splice(j, a, b, "", copy, err);
  free(box.kids);
  return rc;
}

/* --- loading, and edits by key path -------------------------------------- */

int
setup_json_load(SetupJson *j, const char *name, const char *text, size_t len, StrBuf *err)
{
  memset(j, 0, sizeof *j);
  snprintf(j->name, sizeof j->name, "%s", name);
  size_t i = text ? json_walk_ws(text, len, 0) : 0;
  if (text == NULL || i == len) {
    j->text = xstrdup("{}\n");
    j->len = 3;
    j->root = json_object();
    return 0;
  }
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (root == NULL) {
    strbuf_printf(err, "%s is not valid JSON (line %d, column %d: %s): setup changes nothing in "
                       "it; fix it, or move it aside",
                  name, je.line, je.column, je.text);
    return -1;
  }
  if (!json_is_object(root)) {
    strbuf_printf(err, "%s holds JSON that is not an object: setup changes nothing in it", name);
    json_decref(root);
    return -1;
  }
  j->text = xmalloc(len + 1);
  memcpy(j->text, text, len);
  j->text[len] = '\0';
  j->len = len;
  j->root = root;
  JsonBox box;
  if (!json_walk_path(j, NULL, 0, &box)) {
    strbuf_printf(err, "%s: JSON setup cannot edit with certainty (a NUL byte, or text it does "
                       "not expect): setup changes nothing in it",
                  name);
    setup_json_free(j);
    return -1;
  }
  free(box.kids);
  return 0;
}

void
setup_json_free(SetupJson *j)
{
  json_decref(j->root);
  free(j->text);
  j->root = NULL;
  j->text = NULL;
}

json_t *
setup_json_get(const SetupJson *j, const SetupJsonStep *path, size_t n)
{
  json_t *cur = j->root;
  for (size_t i = 0; i < n && cur; i++)
    cur = path[i].key ? json_object_get(cur, path[i].key) : json_array_get(cur, path[i].index);
  return cur;
}

/* Path steps for the first n of keys. */
static void
json_steps(const char *const *keys, size_t n, SetupJsonStep *out)
{
  for (size_t i = 0; i < n; i++)
    out[i] = (SetupJsonStep){keys[i], 0};
}

/* The names keys[0..n-1] joined with dots, for messages. */
static void
json_dotted(StrBuf *out, const char *const *keys, size_t n)
{
  for (size_t i = 0; i < n; i++)
    strbuf_printf(out, "%s%s", i ? "." : "", keys[i]);
}

int
setup_json_put(SetupJson *j, const char *const *keys, size_t n, json_t *value, StrBuf *err)
{
  SetupJsonStep steps[16];
  if (n == 0 || n > 16)
    abort();
  json_steps(keys, n, steps);
  /* The deepest object on the way that exists. */
  size_t have = 0;
  json_t *cur = j->root;
  while (have < n - 1) {
    json_t *next = json_object_get(cur, keys[have]);
    if (next == NULL)
      break;
    if (!json_is_object(next)) {
      StrBuf where = STRBUF_INIT;
      json_dotted(&where, keys, have + 1);
      strbuf_printf(err, "%s: %s is not an object: setup leaves it alone (fix it, or move the "
                         "file aside)",
                    j->name, strbuf_cstr(&where));
      strbuf_free(&where);
      json_decref(value);
      return -1;
    }
    cur = next;
    have++;
  }
  if (have == n - 1) {
    json_t *old = json_object_get(cur, keys[n - 1]);
    if (old && json_equal(old, value)) {
      json_decref(value);
      return 0;
    }
    return setup_json_set(j, steps, n - 1, keys[n - 1], value, err) == 0 ? 1 : -1;
  }
  /* Wrap value in the objects that are missing below keys[have]. */
  for (size_t i = n - 1; i > have; i--) {
    json_t *wrap = json_object();
    json_object_set_new(wrap, keys[i], value);
    value = wrap;
  }
  return setup_json_set(j, steps, have, keys[have], value, err) == 0 ? 1 : -1;
}

int
setup_json_drop(SetupJson *j, const char *const *keys, size_t n, StrBuf *err)
{
  SetupJsonStep steps[16];
  if (n == 0 || n > 16)
    abort();
  json_steps(keys, n, steps);
  json_t *parent = setup_json_get(j, steps, n - 1);
  if (parent == NULL || !json_is_object(parent) || json_object_get(parent, keys[n - 1]) == NULL)
    return 0;
  if (setup_json_del(j, steps, n - 1, keys[n - 1], err) != 0)
    return -1;
  for (size_t depth = n - 1; depth > 0; depth--) {
    json_t *o = setup_json_get(j, steps, depth);
    if (o == NULL || !json_is_object(o) || json_object_size(o) != 0)
      break;
    if (setup_json_del(j, steps, depth - 1, keys[depth - 1], err) != 0)
      return -1;
  }
  return 1;
}

bool
setup_json_empty(const SetupJson *j)
{
  return json_object_size(j->root) == 0;
}
