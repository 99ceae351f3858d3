/*
 * The arguments of a tools/call checked against the tool's inputSchema
 * before anything reaches the engine: arguments that fail the schema are
 * -32602 naming the argument (docs/mcp.md, "Limits and choices"). The
 * subset of JSON Schema the tools use: an object with `properties` (each
 * with `type`: string, integer, number, boolean, array, object, or a list
 * of them; `enum`; `minimum` / `maximum`; `minLength`, `maxLength`; `items`
 * with a `type`), `required`, and `additionalProperties: false`.
 */
#ifndef VIGIL_MCP_SCHEMA_H
#define VIGIL_MCP_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Checks args (an object, or NULL for none) against schema. Returns true,
 * or false with why (naming the argument) in msg. On success a whole number
 * written as a real (5000.0) where the schema wants an integer is made an
 * integer in args, as the tools read it. A string's length is in bytes. */
bool mcp_schema_check(const json_t *schema, json_t *args, char *msg, size_t cap);

#endif
