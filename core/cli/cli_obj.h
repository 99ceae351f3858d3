/*
 * Reading the engine's answers: lookups by key in a result map and typed
 * access to the values, with nil and absence treated alike (the protocol
 * sends every documented key, nil when it has no value yet). Nothing here
 * allocates; pointers point into the reply they came from.
 */
#ifndef VIGIL_CLI_OBJ_H
#define VIGIL_CLI_OBJ_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of key in map, or NULL when map is not a map, or the key is
 * absent or nil. */
const msgpack_object *cli_obj_get(const msgpack_object *map, const char *key);

/* The text of a str or bin value (not NUL-terminated), or NULL (len 0)
 * when o is NULL or of another type. */
const char *cli_obj_text(const msgpack_object *o, size_t *len);

/* Shorthands for map lookups: the text at key (NULL when absent), whether
 * an integer is there (filled into *out), a boolean (false when absent). */
const char *cli_obj_get_text(const msgpack_object *map, const char *key, size_t *len);
bool cli_obj_get_int(const msgpack_object *map, const char *key, int64_t *out);
bool cli_obj_get_bool(const msgpack_object *map, const char *key);
/* The unsigned integer at key, or def when absent or not one. */
uint64_t cli_obj_get_uint(const msgpack_object *map, const char *key, uint64_t def);

/* Whether the text at key equals s. */
bool cli_obj_get_is(const msgpack_object *map, const char *key, const char *s);

#endif
