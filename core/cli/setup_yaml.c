/*
 * Splicing one entry of a YAML mapping (see setup_yaml.h). Positions come
 * from libyaml's marks as lines and columns (its index counts characters,
 * not bytes); whole lines are what is replaced, so a line's byte offset is
 * all that is needed.
 */
#include "cli/setup_yaml.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/memory.h"
#include "cli/setup_file.h"

/* How deep a tree setup converts (aliases may nest; a loop would not end). */
#define SETUP_YAML_DEPTH_MAX 64

/* --- parsing into a tree of strings -------------------------------------- */

/* The node as JSON (scalars as strings), or NULL with *why set. */
static json_t *
yaml_tree(yaml_document_t *doc, yaml_node_t *node, int depth, const char **why)
{
  if (depth > SETUP_YAML_DEPTH_MAX) {
    *why = "nodes nested too deep (an alias loop?)";
    return NULL;
  }
  if (node->type == YAML_SCALAR_NODE)
    return json_stringn((const char *)node->data.scalar.value, node->data.scalar.length);
  if (node->type == YAML_SEQUENCE_NODE) {
    json_t *a = json_array();
    for (yaml_node_item_t *it = node->data.sequence.items.start;
         it < node->data.sequence.items.top; it++) {
      json_t *v = yaml_tree(doc, yaml_document_get_node(doc, *it), depth + 1, why);
      if (v == NULL) {
        json_decref(a);
        return NULL;
      }
      json_array_append_new(a, v);
    }
    return a;
  }
  json_t *o = json_object();
  for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
       p++) {
    yaml_node_t *k = yaml_document_get_node(doc, p->key);
    if (k->type != YAML_SCALAR_NODE) {
      *why = "a key that is not a plain string";
      json_decref(o);
      return NULL;
    }
    char *key = xmalloc(k->data.scalar.length + 1);
    memcpy(key, k->data.scalar.value, k->data.scalar.length);
    key[k->data.scalar.length] = '\0';
    json_t *v = NULL;
    if (strlen(key) != k->data.scalar.length)
      *why = "a key holding a NUL";
    else if (json_object_get(o, key) != NULL)
      *why = "a key given twice";
    else
      v = yaml_tree(doc, yaml_document_get_node(doc, p->value), depth + 1, why);
    if (v == NULL) {
      free(key);
      json_decref(o);
      return NULL;
    }
    json_object_set_new(o, key, v);
    free(key);
  }
  return o;
}

/* A parsed file: the document and its tree. */
typedef struct {
  yaml_document_t doc;
  bool has_doc;
  json_t *tree;   /* the top mapping (an empty object for an empty file) */
} YamlParsed;

static void
yaml_parsed_free(YamlParsed *p)
{
  if (p->has_doc)
    yaml_document_delete(&p->doc);
  json_decref(p->tree);
  memset(p, 0, sizeof *p);
}

/* Parses text. Returns 0, or -1 with err set (naming name). */
static int
yaml_parse(const char *name, const char *text, size_t len, YamlParsed *out, StrBuf *err)
{
  memset(out, 0, sizeof *out);
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser))
    abort();
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  const char *why = NULL;
  size_t line = 0;
  if (!yaml_parser_load(&parser, &out->doc)) {
    why = parser.problem ? parser.problem : "not YAML";
    line = parser.problem_mark.line + 1;
  } else {
    out->has_doc = true;
    yaml_node_t *root = yaml_document_get_root_node(&out->doc);
    if (root == NULL) {
      out->tree = json_object();
    } else if (root->type != YAML_MAPPING_NODE ||
               root->data.mapping.style == YAML_FLOW_MAPPING_STYLE) {
      why = "its top is not a block mapping (key: value lines)";
      line = root->start_mark.line + 1;
    } else {
      out->tree = yaml_tree(&out->doc, root, 0, &why);
    }
    yaml_document_t next;
    if (why == NULL && root != NULL) {
      if (!yaml_parser_load(&parser, &next)) {
        why = parser.problem ? parser.problem : "not YAML";
        line = parser.problem_mark.line + 1;
      } else {
        if (yaml_document_get_root_node(&next) != NULL) {
          why = "more than one document";
          line = yaml_document_get_root_node(&next)->start_mark.line + 1;
        }
        yaml_document_delete(&next);
      }
    }
  }
  yaml_parser_delete(&parser);
  if (why == NULL)
    return 0;
  if (line)
    strbuf_printf(err, "%s: line %zu: %s: setup changes nothing in it", name, line, why);
  else
    strbuf_printf(err, "%s: %s: setup changes nothing in it", name, why);
  yaml_parsed_free(out);
  return -1;
}

/* --- where things are ---------------------------------------------------- */

/* The byte offset of the start of 0-based line l (the length for lines
 * past the end). */
static size_t
yaml_line_start(const SetupYaml *y, size_t l)
{
  size_t off = 0;
  for (size_t k = 0; k < l; k++) {
    const char *nl = memchr(y->text + off, '\n', y->len - off);
    if (nl == NULL)
      return y->len;
    off = (size_t)(nl - y->text) + 1;
  }
  return off;
}

/* Whether 0-based line l is blank or only a comment. */
static bool
yaml_line_idle(const SetupYaml *y, size_t l)
{
  size_t i = yaml_line_start(y, l);
  while (i < y->len && (y->text[i] == ' ' || y->text[i] == '\t'))
    i++;
  return i >= y->len || y->text[i] == '\n' || y->text[i] == '\r' || y->text[i] == '#';
}

/* Where the parent key and its entries are. */
typedef struct {
  bool found;              /* the parent key is there */
  bool empty;              /* its value has no entries (null, "", {}) */
  size_t key_line;         /* its key's line */
  size_t value_end_line;   /* the line its value ends before (exclusive) */
  size_t column;           /* the entries' indentation */
  size_t nentries;
  bool has_entry;          /* the entry asked about is there ... */
  size_t entry_line, entry_end_line; /* ... on these lines, [start, end) */
} YamlSpot;

/* The line the entry starting at line `from` ends before: the next
 * boundary, less the blank and comment lines before it. */
static size_t
yaml_trim_end(const SetupYaml *y, size_t from, size_t boundary)
{
  while (boundary > from + 1 && yaml_line_idle(y, boundary - 1))
    boundary--;
  return boundary;
}

/* Finds parent and its entry key in p. Returns 0, or -1 with err set. */
static int
yaml_find(const SetupYaml *y, YamlParsed *p, const char *parent, const char *key, YamlSpot *s,
          StrBuf *err)
{
  memset(s, 0, sizeof *s);
  yaml_node_t *root = p->has_doc ? yaml_document_get_root_node(&p->doc) : NULL;
  if (root == NULL)
    return 0;
  size_t total_lines = 1;
  for (size_t i = 0; i < y->len; i++)
    total_lines += y->text[i] == '\n';
  for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top;
       pr++) {
    yaml_node_t *k = yaml_document_get_node(&p->doc, pr->key);
    if (k->data.scalar.length != strlen(parent) ||
        memcmp(k->data.scalar.value, parent, strlen(parent)) != 0)
      continue;
    yaml_node_t *v = yaml_document_get_node(&p->doc, pr->value);
    s->found = true;
    s->key_line = k->start_mark.line;
    /* The next top-level key, or the end, bounds the value. */
    size_t next = total_lines;
    if (pr + 1 < root->data.mapping.pairs.top)
      next = yaml_document_get_node(&p->doc, pr[1].key)->start_mark.line;
    s->value_end_line = yaml_trim_end(y, s->key_line, next);
    s->column = k->start_mark.column + 2;
    if (v->type == YAML_SCALAR_NODE &&
        (v->data.scalar.length == 0 || strcmp((const char *)v->data.scalar.value, "~") == 0 ||
         strcmp((const char *)v->data.scalar.value, "null") == 0)) {
      s->empty = true;
      if (v->start_mark.line != s->key_line) {
        strbuf_printf(err, "%s: line %zu: %s's empty value is not on its line: setup changes "
                           "nothing in it",
                      y->name, (size_t)v->start_mark.line + 1, parent);
        return -1;
      }
      return 0;
    }
    if (v->type != YAML_MAPPING_NODE) {
      strbuf_printf(err, "%s: line %zu: %s is not a mapping: setup changes nothing in it",
                    y->name, s->key_line + 1, parent);
      return -1;
    }
    size_t n = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
    if (v->data.mapping.style == YAML_FLOW_MAPPING_STYLE) {
      if (n > 0 || v->start_mark.line != s->key_line || v->end_mark.line != s->key_line) {
        strbuf_printf(err, "%s: line %zu: %s is written in flow style ({...}): setup splices "
                           "only key: value lines and changes nothing in it",
                      y->name, s->key_line + 1, parent);
        return -1;
      }
      s->empty = true;
      return 0;
    }
    s->nentries = n;
    s->column = yaml_document_get_node(&p->doc, v->data.mapping.pairs.start->key)->start_mark.column;
    for (yaml_node_pair_t *e = v->data.mapping.pairs.start; e < v->data.mapping.pairs.top; e++) {
      yaml_node_t *ek = yaml_document_get_node(&p->doc, e->key);
      if (ek->data.scalar.length != strlen(key) ||
          memcmp(ek->data.scalar.value, key, strlen(key)) != 0)
        continue;
      s->has_entry = true;
      s->entry_line = ek->start_mark.line;
      size_t bound = s->value_end_line;
      if (e + 1 < v->data.mapping.pairs.top)
        bound = yaml_document_get_node(&p->doc, e[1].key)->start_mark.line;
      s->entry_end_line = yaml_trim_end(y, s->entry_line, bound);
    }
    return 0;
  }
  return 0;
}

/* --- splicing ------------------------------------------------------------ */

static void
yaml_splice(SetupYaml *y, size_t a, size_t b, const char *ins, size_t inslen)
{
  char *text = setup_splice(y->text, y->len, a, b, ins, inslen, &y->len);
  free(y->text);
  y->text = text;
}

/* Appends key: and body, every line indented by column spaces. */
static void
yaml_entry_text(StrBuf *out, size_t column, const char *key, const char *body)
{
  for (size_t c = 0; c < column; c++)
    strbuf_putc(out, ' ');
  strbuf_printf(out, "%s:\n", key);
  for (const char *p = body; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
    for (size_t c = 0; c < column; c++)
      strbuf_putc(out, ' ');
    strbuf_append(out, p, n);
    p += n;
  }
  if (out->len == 0 || out->data[out->len - 1] != '\n')
    strbuf_putc(out, '\n');
}

/* Parses y's text into p and finds parent's entry key in it. Returns 0
 * (free p), or -1 with err set and nothing to free. */
static int
yaml_locate(const SetupYaml *y, YamlParsed *p, const char *parent, const char *key, YamlSpot *s,
            StrBuf *err)
{
  if (yaml_parse(y->name, y->text, y->len, p, err) != 0)
    return -1;
  if (yaml_find(y, p, parent, key, s, err) != 0) {
    yaml_parsed_free(p);
    return -1;
  }
  return 0;
}

/* Parses the new text and compares its tree with expect (stolen); makes
 * the new text current when they agree. */
static int
yaml_check(SetupYaml *y, SetupYaml *next, json_t *expect, StrBuf *err)
{
  YamlParsed got;
  StrBuf why = STRBUF_INIT;
  bool parsed = yaml_parse(y->name, next->text, next->len, &got, &why) == 0;
  int rc = 0;
  if (!parsed || !json_equal(got.tree, expect)) {
    strbuf_printf(err, "%s: internal error: the edit did not give the YAML meant (%s); nothing "
                       "was written",
                  y->name, parsed ? "a different value" : strbuf_cstr(&why));
    rc = -1;
  } else {
    free(y->text);
    y->text = next->text;
    y->len = next->len;
    next->text = NULL;
  }
  if (parsed)
    yaml_parsed_free(&got);
  json_decref(expect);
  strbuf_free(&why);
  free(next->text);
  return rc;
}

int
setup_yaml_set_entry(SetupYaml *y, const char *parent, const char *key, const char *body,
                     StrBuf *err)
{
  YamlParsed p;
  YamlSpot s;
  if (yaml_locate(y, &p, parent, key, &s, err) != 0)
    return -1;
  size_t column = s.found ? s.column : 2;
  StrBuf want = STRBUF_INIT;
  yaml_entry_text(&want, column, key, body);
  /* What the entry alone reads as, for the check. */
  YamlParsed alone;
  if (yaml_parse(y->name, want.data, want.len, &alone, err) != 0) {
    strbuf_free(&want);
    yaml_parsed_free(&p);
    return -1;
  }
  json_t *expect = json_deep_copy(p.tree);
  json_t *holder = json_object_get(expect, parent);
  if (!json_is_object(holder)) {
    holder = json_object();
    json_object_set_new(expect, parent, holder);
  }
  json_object_set(holder, key, json_object_get(alone.tree, key));
  yaml_parsed_free(&alone);
  yaml_parsed_free(&p);

  SetupYaml next = {xstrdup(y->text), y->len, ""};
  size_t a, b;
  StrBuf ins = STRBUF_INIT;
  if (s.has_entry) {
    a = yaml_line_start(y, s.entry_line);
    b = yaml_line_start(y, s.entry_end_line);
    if (b - a == want.len && memcmp(y->text + a, want.data, want.len) == 0) {
      strbuf_free(&want);
      json_decref(expect);
      free(next.text);
      return 0;
    }
    strbuf_append(&ins, want.data, want.len);
  } else if (!s.found || s.empty) {
    if (s.found) { /* the parent's own line goes: it had no entries */
      a = yaml_line_start(y, s.key_line);
      b = yaml_line_start(y, s.key_line + 1);
    } else {
      a = b = y->len;
      if (y->len > 0 && y->text[y->len - 1] != '\n')
        strbuf_putc(&ins, '\n');
    }
    strbuf_printf(&ins, "%s:\n", parent);
    strbuf_append(&ins, want.data, want.len);
  } else {
    a = b = yaml_line_start(y, s.value_end_line);
    if (a > 0 && y->text[a - 1] != '\n')
      strbuf_putc(&ins, '\n');
    strbuf_append(&ins, want.data, want.len);
  }
  yaml_splice(&next, a, b, ins.data, ins.len);
  strbuf_free(&ins);
  strbuf_free(&want);
  if (yaml_check(y, &next, expect, err) != 0)
    return -1;
  return s.has_entry ? 2 : 1;
}

int
setup_yaml_drop_entry(SetupYaml *y, const char *parent, const char *key, StrBuf *err)
{
  YamlParsed p;
  YamlSpot s;
  if (yaml_locate(y, &p, parent, key, &s, err) != 0)
    return -1;
  if (!s.has_entry) {
    yaml_parsed_free(&p);
    return 0;
  }
  json_t *expect = json_deep_copy(p.tree);
  yaml_parsed_free(&p);
  json_t *holder = json_object_get(expect, parent);
  json_object_del(holder, key);
  size_t a = yaml_line_start(y, s.entry_line), b = yaml_line_start(y, s.entry_end_line);
  if (s.nentries == 1) { /* the parent goes with its last entry */
    json_object_del(expect, parent);
    a = yaml_line_start(y, s.key_line);
    b = yaml_line_start(y, s.value_end_line);
  }
  SetupYaml next = {xstrdup(y->text), y->len, ""};
  yaml_splice(&next, a, b, "", 0);
  return yaml_check(y, &next, expect, err) == 0 ? 1 : -1;
}

/* The 1-based line of byte i, counting LFs. */
static size_t
setup_yaml_line_of(const SetupYaml *y, size_t i)
{
  size_t line = 1;
  for (size_t k = 0; k < i; k++)
    line += y->text[k] == '\n';
  return line;
}

int
setup_yaml_load(SetupYaml *y, const char *name, const char *text, size_t len, StrBuf *err)
{
  memset(y, 0, sizeof *y);
  snprintf(y->name, sizeof y->name, "%s", name);
  y->text = xmalloc(len + 1);
  if (len)
    memcpy(y->text, text, len);
  y->text[len] = '\0';
  y->len = len;
  if (memchr(y->text, '\0', len) != NULL) {
    strbuf_printf(err, "%s: a NUL byte: setup changes nothing in it", name);
    setup_yaml_free(y);
    return -1;
  }
  /* libyaml also breaks lines at a lone CR, NEL, U+2028 and U+2029, and
   * setup counts lines by LF: such a file's lines could not be found. */
  for (size_t i = 0; i < len; i++) {
    const unsigned char *u = (const unsigned char *)y->text + i;
    if ((u[0] == '\r' && (i + 1 == len || u[1] != '\n')) || (u[0] == 0xc2 && u[1] == 0x85) ||
        (u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9))) {
      strbuf_printf(err, "%s: line %zu: a line break other than LF or CR LF: setup changes "
                         "nothing in it",
                    name, setup_yaml_line_of(y, i));
      setup_yaml_free(y);
      return -1;
    }
  }
  YamlParsed p;
  if (yaml_parse(name, y->text, y->len, &p, err) != 0) {
    setup_yaml_free(y);
    return -1;
  }
  yaml_parsed_free(&p);
  return 0;
}

void
setup_yaml_free(SetupYaml *y)
{
  free(y->text);
  y->text = NULL;
}
