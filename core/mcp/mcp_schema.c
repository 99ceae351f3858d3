/*
 * A small JSON Schema checker for tool arguments (see mcp_schema.h). It
 * knows only what the tools' schemas use; an unknown keyword is ignored,
 * never an error, so a schema may carry annotations for the model. Its
 * messages echo the caller's names, so each is cut at a character boundary
 * (utf8_snprintf): a cut character would make the answer unencodable.
 */
#include "mcp/mcp_schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/textfmt.h"
#include "base/utf8.h"

/* The largest whole number a double holds exactly (2^53): a real past it is
 * not taken for an integer, since its digits are not the ones written. */
#define MCP_SCHEMA_EXACT_MAX 9007199254740992.0

/* The JSON Schema type name of a value ("integer" for a whole number). */
static bool
mcp_schema_is(const json_t *v, const char *type)
{
  if (strcmp(type, "string") == 0)
    return json_is_string(v);
  if (strcmp(type, "integer") == 0)
    return json_is_integer(v) ||
           (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) &&
            fabs(json_real_value(v)) <= MCP_SCHEMA_EXACT_MAX);
  if (strcmp(type, "number") == 0)
    return json_is_number(v);
  if (strcmp(type, "boolean") == 0)
    return json_is_boolean(v);
  if (strcmp(type, "array") == 0)
    return json_is_array(v);
  if (strcmp(type, "object") == 0)
    return json_is_object(v);
  if (strcmp(type, "null") == 0)
    return json_is_null(v);
  return true;
}

/* Whether v has the type (a name or a list of names) the schema gives. */
static bool
mcp_schema_type_ok(const json_t *schema, const json_t *v, const char **want)
{
  const json_t *type = json_object_get(schema, "type");
  *want = "a value";
  if (json_is_string(type)) {
    *want = json_string_value(type);
    return mcp_schema_is(v, *want);
  }
  if (json_is_array(type)) {
    size_t i;
    const json_t *t;
    *want = "one of its types";
    json_array_foreach(type, i, t) if (json_is_string(t) && mcp_schema_is(v, json_string_value(t)))
        return true;
    return false;
  }
  return true;
}

/* Appends a JSON number as it was written: an integer as one, a real as
 * textfmt_number writes it. */
static void
mcp_schema_number(StrBuf *b, const json_t *v)
{
  if (json_is_integer(v))
    strbuf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  else
    textfmt_number(b, json_number_value(v));
}

/* Checks a number against `minimum` and `maximum`; a refusal names the
 * bounds and the value as written ("must be 1000..3600000, got 3600001"),
 * or the one bound there is ("must be at least 0, got -1"). */
static bool
mcp_schema_bounds(const json_t *schema, const json_t *v, const char *name, char *msg, size_t cap)
{
  double d = json_number_value(v);
  const json_t *lo = json_object_get(schema, "minimum"), *hi = json_object_get(schema, "maximum");
  if (!(lo && d < json_number_value(lo)) && !(hi && d > json_number_value(hi)))
    return true;
  StrBuf b = STRBUF_INIT;
  strbuf_printf(&b, "%s must be ", name);
  if (lo && hi) {
    mcp_schema_number(&b, lo);
    strbuf_puts(&b, "..");
    mcp_schema_number(&b, hi);
  } else {
    strbuf_puts(&b, lo ? "at least " : "at most ");
    mcp_schema_number(&b, lo ? lo : hi);
  }
  strbuf_puts(&b, ", got ");
  mcp_schema_number(&b, v);
  utf8_snprintf(msg, cap, "%s", strbuf_cstr(&b));
  strbuf_free(&b);
  return false;
}

/* Checks one value against its property schema; name is how it is called. */
static bool
mcp_schema_value(const json_t *schema, const json_t *v, const char *name, char *msg, size_t cap)
{
  const char *want;
  if (!mcp_schema_type_ok(schema, v, &want)) {
    utf8_snprintf(msg, cap, "%s must be %s%s", name, strchr("aeiou", want[0]) ? "an " : "a ",
                  want);
    return false;
  }
  const json_t *en = json_object_get(schema, "enum");
  if (json_is_array(en)) {
    size_t i;
    const json_t *e;
    bool found = false;
    json_array_foreach(en, i, e) found = found || json_equal((json_t *)e, (json_t *)v);
    if (!found) {
      char *list = json_dumps(en, JSON_COMPACT);
      utf8_snprintf(msg, cap, "%s must be one of %s", name, list ? list : "its choices");
      free(list);
      return false;
    }
  }
  if (json_is_number(v) && !mcp_schema_bounds(schema, v, name, msg, cap))
    return false;
  if (json_is_string(v)) {
    const json_t *mx = json_object_get(schema, "maxLength");
    const json_t *mn = json_object_get(schema, "minLength");
    size_t len = json_string_length(v);
    if ((mx && len > (size_t)json_integer_value(mx)) || (mn && len < (size_t)json_integer_value(mn))) {
      utf8_snprintf(msg, cap, "%s must be %lld..%lld bytes long (UTF-8), got %zu", name,
                    mn ? (long long)json_integer_value(mn) : 0LL,
                    mx ? (long long)json_integer_value(mx) : (long long)len, len);
      return false;
    }
  }
  const json_t *items = json_object_get(schema, "items");
  if (json_is_array(v) && json_is_object(items)) {
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e) {
      char sub[128];
      utf8_snprintf(sub, sizeof sub, "%s[%zu]", name, i);
      if (!mcp_schema_value(items, e, sub, msg, cap))
        return false;
    }
  }
  const json_t *extra = json_object_get(schema, "additionalProperties");
  if (json_is_object(v) && json_is_object(extra)) {
    const char *k;
    const json_t *e;
    json_object_foreach((json_t *)v, k, e) {
      char sub[160];
      utf8_snprintf(sub, sizeof sub, "%s.%s", name, k);
      if (!mcp_schema_value(extra, e, sub, msg, cap))
        return false;
    }
  }
  return true;
}

/* Whether the schema's type is "integer" alone (not also "number"). */
static bool
mcp_schema_wants_integer(const json_t *schema)
{
  const json_t *type = json_object_get(schema, "type");
  return json_is_string(type) && strcmp(json_string_value(type), "integer") == 0;
}

/* A checked value as the tools read it: a whole number written as a real
 * (5000.0), which JSON Schema counts as an integer, becomes an integer,
 * since the tools read integers with json_integer_value (0 for a real).
 * Returns the integer to put in v's place, or NULL when v stays as it is
 * (an array's items are replaced in place). */
static json_t *
mcp_schema_integers(const json_t *schema, json_t *v)
{
  if (json_is_real(v) && mcp_schema_wants_integer(schema))
    return json_integer((json_int_t)json_real_value(v));
  const json_t *items = json_object_get(schema, "items");
  if (json_is_array(v) && json_is_object(items)) {
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
      json_t *n = mcp_schema_integers(items, e);
      if (n != NULL)
        json_array_set_new(v, i, n);
    }
  }
  return NULL;
}

bool
mcp_schema_check(const json_t *schema, json_t *args, char *msg, size_t cap)
{
  const json_t *props = json_object_get(schema, "properties");
  if (args != NULL && !json_is_object(args)) {
    utf8_snprintf(msg, cap, "arguments must be an object");
    return false;
  }
  const char *key;
  const json_t *v;
  if (args) {
    json_object_foreach((json_t *)args, key, v) {
      const json_t *p = json_object_get(props, key);
      if (p == NULL) {
        utf8_snprintf(msg, cap, "unknown argument \"%.*s\"", (int)utf8_cut(key, strlen(key), 64),
                      key);
        return false;
      }
      if (!mcp_schema_value(p, v, key, msg, cap))
        return false;
    }
  }
  const json_t *req = json_object_get(schema, "required");
  size_t i;
  const json_t *r;
  json_array_foreach(req, i, r) {
    if (json_is_string(r) && (args == NULL || json_object_get(args, json_string_value(r)) == NULL)) {
      utf8_snprintf(msg, cap, "%s is required", json_string_value(r));
      return false;
    }
  }
  json_t *e;
  if (args) {
    json_object_foreach(args, key, e) {
      json_t *n = mcp_schema_integers(json_object_get(props, key), e);
      if (n != NULL)
        json_object_set_new(args, key, n); /* replaces the value: the key stays */
    }
  }
  return true;
}
