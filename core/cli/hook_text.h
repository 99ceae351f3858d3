/*
 * What one hook's answer gives the model (`vigil hook`, docs/mcp.md): the
 * envelopes of the notifications taken above the session's model cursor,
 * each as the engine rendered it (framed and escaped already, so never
 * touched inside), joined one after the other, within a bound on the
 * answer's bytes and lines.
 *
 * The bound exists because the harnesses cut what a hook gives them
 * (Claude Code keeps 8000 characters and 200 lines of an additionalContext)
 * and a cut envelope loses its END marker, which is what tells the model
 * where the untrusted text stops. So the cutting is done here, at line
 * boundaries, keeping the frame whole:
 *
 * - hook_text_plan says how many notifications, oldest first, fit whole:
 *   the hook takes exactly that many from the cursor, so what does not fit
 *   stays above it for the next hook (at least one is always taken, so an
 *   envelope larger than the whole bound cannot stall the cursor);
 * - hook_text_join writes what was taken: each envelope whole when it fits;
 *   else its first lines, a `note:` line saying how many were left out and
 *   that notifications_read has it whole, and its END marker; else (too
 *   little room even for that, or no recognisable frame) a one-line
 *   reference made only of the engine's own words (seq, type, monitor id).
 *   Room for a reference to each later one is kept back, so the bound holds
 *   whatever was taken, even when another reader of the cursor took in
 *   between and the take differs from the plan.
 *
 * Nothing here knows of the engine or of the harnesses: a notification is
 * a HookNote, and the texts it points to are the caller's.
 */
#ifndef VIGIL_HOOK_TEXT_H
#define VIGIL_HOOK_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"

/* One answer's bound: below Claude Code's 8000 characters (a byte is never
 * fewer characters) and 200 lines of additionalContext, the tightest of the
 * harnesses' own cuts seen. */
#define HOOK_TEXT_MAX_BYTES 7000
#define HOOK_TEXT_MAX_LINES 180
/* The most notifications one hook takes. */
#define HOOK_TAKE_MAX 16
/* The longest one-line reference or dropped line: 100 bytes of words, two
 * seqs of at most 20 digits, a type and a monitor id of at most 32 each. */
#define HOOK_TEXT_REF_MAX 224

/* A notification as a hook answers with it (borrowed strings). */
typedef struct {
  uint64_t seq;
  const char *type;       /* "exit", ...; NULL or not a plain word: left out */
  const char *monitor_id; /* likewise */
  const char *text;       /* the envelope, text_len bytes */
  size_t text_len;
} HookNote;

/* How many of notes[0..n), oldest first, fit whole in max_bytes and
 * max_lines joined (room for one dropped line kept back); at least 1 when
 * n > 0. */
size_t hook_text_plan(const HookNote *notes, size_t n, size_t max_bytes, size_t max_lines);

/* Appends to out, within max_bytes and max_lines (which must hold n + 1
 * references): a line saying `dropped` notifications (seqs from..to) were
 * no longer kept, when dropped > 0; then each of notes[0..n) as the file's
 * header says (whole, cut, or a reference), one after the other. Nothing
 * at all when n == 0 and dropped == 0. */
void hook_text_join(StrBuf *out, const HookNote *notes, size_t n, uint64_t dropped,
                    uint64_t dropped_from, uint64_t dropped_to, size_t max_bytes,
                    size_t max_lines);

#endif
