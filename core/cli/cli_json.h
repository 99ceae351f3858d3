/*
 * msgpack to JSON, for --json: the engine's result maps and notifications
 * printed so that jq and scripts can read them. One value renders as one
 * line (no newlines inside), keys in the engine's order.
 *
 * The mapping: nil -> null, booleans and integers as they are, floats with
 * 17 significant digits (NaN and the infinities, which JSON lacks, -> null),
 * str -> a JSON string (any invalid UTF-8 byte becomes U+FFFD), array ->
 * array, map -> object (a key that is not a string is written as its JSON
 * text, quoted). bin (only monitor_logs sends it: raw captured bytes) -> a
 * JSON string when the bytes are valid UTF-8, which is the common case of
 * text output, else {"base64": "..."} so that a reader can tell the two
 * apart and lose nothing. ext (never sent) -> {"ext": type, "base64": ...}.
 */
#ifndef VIGIL_CLI_JSON_H
#define VIGIL_CLI_JSON_H

#include <msgpack.h>

#include "strbuf.h"

/* Appends o as JSON to out. */
void cli_json_append(StrBuf *out, const msgpack_object *o);

#endif
