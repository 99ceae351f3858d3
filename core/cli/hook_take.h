/*
 * A hook's take from the session's model cursor (docs/protocol.md,
 * cursor_take): what the hook puts in its answer counts as delivered, so
 * the cursor moves past exactly what the answer holds, and no other reader
 * of the session (another hook, vigil mcp) ever gives the model the same
 * seq.
 *
 * cursor_take moves the cursor past everything it returns, and an answer
 * has a bound (hook_text.h). So the hook looks first and takes after:
 * cursor_get says where the cursor is, notifications_since shows what lies
 * above it without moving anything, hook_text_plan says how many of those
 * fit, and cursor_take takes that many. What does not fit stays above the
 * cursor for the next hook. Another reader taking in between only changes
 * which notifications this take gets, never how many; hook_text_join keeps
 * the bound whatever they are.
 */
#ifndef VIGIL_HOOK_TAKE_H
#define VIGIL_HOOK_TAKE_H

#include "cli/cli_client.h"
#include "base/strbuf.h"

/* The model cursor: the name every vigil process of a session reads it by
 * (issue 23's contract). */
#define HOOK_CURSOR "model"

/* Takes, from the model cursor of c's current session (connected, its
 * session open), as many notifications as fit one answer, and appends them
 * to out, joined (hook_text_join); how many it took in *taken. Nothing is
 * appended when nothing is above the cursor. Returns 0, or -1 with c->err
 * set; nothing was taken then (the take is the last call). */
int hook_take(CliClient *c, StrBuf *out, size_t *taken);

#endif
