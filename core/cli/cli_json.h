/*
 * msgpack to JSON, through jansson: the engine's result maps and
 * notifications as JSON values, for --json (printed so that jq and scripts
 * can read them, one value per line, keys in the engine's order) and for
 * `vigil mcp` (structured tool results). Nothing is escaped by hand.
 *
 * The mapping: nil -> null, booleans and integers as they are (an unsigned
 * integer above INT64_MAX, which jansson cannot hold, becomes a real),
 * floats as reals (NaN and the infinities, which JSON lacks, -> null),
 * str -> a JSON string (each byte that is not part of valid UTF-8 becomes
 * U+FFFD), array -> array, map -> object (a key that is not a string is
 * written as its JSON text; a repeated key keeps its last value). bin (only
 * monitor_logs sends it: raw captured bytes) -> a JSON string when the bytes
 * are valid UTF-8, the common case of text output, else {"base64": "..."},
 * so that a reader can tell the two apart and lose nothing. ext (never
 * sent) -> {"ext": type, "base64": ...}.
 */
#ifndef VIGIL_CLI_JSON_H
#define VIGIL_CLI_JSON_H

#include <jansson.h>
#include <msgpack.h>

#include "base/strbuf.h"

/* o as a new JSON value (a reference the caller owns: json_decref). */
json_t *cli_json_of(const msgpack_object *o);

/* A JSON string of len bytes at s, invalid UTF-8 bytes as U+FFFD. */
json_t *cli_json_string(const char *s, size_t len);

/* len bytes at s as a base64 JSON string (RFC 4648, padded). */
json_t *cli_json_base64(const char *s, size_t len);

/* Packs a JSON value as msgpack: null -> nil, true/false, integers, reals
 * (an integral real stays a float), strings -> str, arrays, objects -> maps
 * with str keys. */
void cli_json_pack(const json_t *j, msgpack_packer *pk);

/* Appends o as one line of compact JSON to out. */
void cli_json_append(StrBuf *out, const msgpack_object *o);

#endif
