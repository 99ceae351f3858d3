/*
 * msgpack type names for messages (see rpc/typename.h): one table, read
 * with or without the article.
 */
#include "rpc/typename.h"

#include <stddef.h>

/* Each type's word, and the word with its article. Integers and floats
 * have two msgpack types each but one word: a caller does not choose the
 * encoding its library picks for a number. */
static const char *const rpc_type_words[][2] = {
  [MSGPACK_OBJECT_NIL] = {"nil", "nil"},
  [MSGPACK_OBJECT_BOOLEAN] = {"boolean", "a boolean"},
  [MSGPACK_OBJECT_POSITIVE_INTEGER] = {"integer", "an integer"},
  [MSGPACK_OBJECT_NEGATIVE_INTEGER] = {"integer", "an integer"},
  [MSGPACK_OBJECT_FLOAT32] = {"float", "a float"},
  [MSGPACK_OBJECT_FLOAT64] = {"float", "a float"},
  [MSGPACK_OBJECT_STR] = {"string", "a string"},
  [MSGPACK_OBJECT_BIN] = {"binary", "a binary"},
  [MSGPACK_OBJECT_ARRAY] = {"array", "an array"},
  [MSGPACK_OBJECT_MAP] = {"map", "a map"},
  [MSGPACK_OBJECT_EXT] = {"ext", "an ext"},
};

/* The word for o's type, with its article or not. */
static const char *
rpc_type_word(const msgpack_object *o, int article)
{
  size_t t = (size_t)o->type;
  if (t >= sizeof rpc_type_words / sizeof rpc_type_words[0] || rpc_type_words[t][0] == NULL)
    return "unknown";
  return rpc_type_words[t][article];
}

/* See rpc/typename.h. */
const char *
rpc_type_name(const msgpack_object *o)
{
  return rpc_type_word(o, 0);
}

/* See rpc/typename.h. */
const char *
rpc_type_name_a(const msgpack_object *o)
{
  return rpc_type_word(o, 1);
}
