/*
 * The name of a msgpack object's type in the words an error message uses
 * ("timeout_ms must be an integer, got string", "key 0 is an integer").
 * One table for every message about a caller's value, from the framing
 * (rpc/decoder.c) to a method's arguments (args.c), so the same value is
 * named the same way wherever it is refused. The words follow msgpack's own
 * names where a person knows them (nil, map, array, ext) and plain English
 * elsewhere (integer, string, binary).
 */
#ifndef VIGIL_RPC_TYPENAME_H
#define VIGIL_RPC_TYPENAME_H

#include <msgpack.h>

/* "nil", "boolean", "integer", "float", "string", "binary", "array", "map",
 * "ext"; "unknown" for a type msgpack-c adds later. */
const char *rpc_type_name(const msgpack_object *o);

/* The same with its article: "nil", "a boolean", "an integer", ... */
const char *rpc_type_name_a(const msgpack_object *o);

#endif
