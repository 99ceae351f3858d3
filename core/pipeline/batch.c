/*
 * The batch window of one monitor (see batch.h). A batch is an array of line
 * records and a text arena, both allocated at the first line the monitor
 * batches, grown (doubling) as its batches need, up to the caps, and
 * reused for the batches after; a batch taken that never grew past the
 * first allocations releases them (batch_take). Allocated whole at the caps (110 slots and
 * 24 KiB of text by default), they cost every monitor that matched just once
 * ~29 KiB (bench/scale); a quiet monitor's batches are a line or two. The
 * deadline is fixed when the batch opens;
 * nothing here moves it, which is the difference from kimi's trailing
 * debounce that a steady stream postpones forever.
 */
#include "pipeline/batch.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/linebuf.h"
#include "base/memory.h"

/* Prepares an empty batch with the given caps (each at least 1, so the
 * promise that a batch always takes one line holds). Allocates nothing. */
void
batch_init(Batch *b, size_t max_lines, size_t max_bytes, uint64_t interval_ms)
{
  assert(b != NULL);
  memset(b, 0, sizeof *b);
  b->max_lines = max_lines ? max_lines : 1;
  b->max_bytes = max_bytes ? max_bytes : 1;
  b->interval = interval_ms;
  b->open_group = -1;
}

void
batch_set_group_caps(Batch *b, size_t group_lines, size_t group_bytes)
{
  /* Before the first line (batch.h): the stores are sized from the caps. */
  assert(b != NULL && b->max_lines > 0 && b->lines == NULL && b->text == NULL);
  b->group_lines = group_lines;
  b->group_bytes = group_bytes;
}

/* The first allocations; each doubles from there up to its cap. */
#define BATCH_LINES_MIN 4
#define BATCH_TEXT_MIN 512
#define BATCH_GROUPS_MIN 4

/* Line slots and text bytes the storage may grow to. */
static size_t
batch_cap_lines(const Batch *b)
{
  return b->max_lines + b->group_lines;
}

static size_t
batch_cap_bytes(const Batch *b)
{
  return b->max_bytes + b->group_bytes;
}

bool
batch_fits_group(const Batch *b, size_t nlines, size_t bytes)
{
  assert(b != NULL && b->max_lines > 0);
  if (b->count == 0)
    return true;
  return b->count + nlines <= b->max_lines && b->bytes <= b->max_bytes &&
         bytes <= b->max_bytes - b->bytes;
}

void
batch_begin_group(Batch *b, uint64_t now, const NoteIncident *info)
{
  /* Incidents do not nest: the one begun last has ended. */
  assert(b != NULL && b->max_lines > 0 && info != NULL);
  assert(b->open_group < 0);
  if (b->count == 0 && b->ngroups == 0) {
    b->opened_at = now;
    b->bytes = 0;
  }
  if (b->ngroups == b->groups_cap) {
    b->groups_cap = b->groups_cap ? 2 * b->groups_cap : BATCH_GROUPS_MIN;
    b->groups = xrealloc(b->groups, b->groups_cap * sizeof *b->groups);
  }
  NoteIncident *g = &b->groups[b->ngroups];
  *g = *info;
  g->first_line = b->count;
  g->nlines = 0;
  b->open_group = (int)b->ngroups++;
}

bool
batch_end_group(Batch *b)
{
  assert(b != NULL && b->open_group < (int)b->ngroups);
  if (b->open_group >= 0)
    b->groups[b->open_group].nlines = b->count - b->groups[b->open_group].first_line;
  b->open_group = -1;
  return b->count >= b->max_lines || b->bytes >= b->max_bytes;
}

size_t
batch_group_count(const Batch *b)
{
  assert(b != NULL);
  return b->ngroups;
}

const NoteIncident *
batch_group(const Batch *b, size_t i)
{
  assert(b != NULL && i < b->ngroups);
  return &b->groups[i];
}

/* Whether a line of len bytes may join the open batch: always when it is
 * empty (batch_add cuts it), otherwise when a line slot and len bytes of
 * text are free. */
bool
batch_fits(const Batch *b, size_t len)
{
  assert(b != NULL && b->max_lines > 0);
  if (b->count == 0)
    return true;
  /* An incident may have filled the batch past max_bytes. */
  return b->count < b->max_lines && b->bytes <= b->max_bytes && len <= b->max_bytes - b->bytes;
}

/* The longest prefix of text, at most room bytes, that ends on a UTF-8
 * character boundary. Lines arrive as valid UTF-8 (linebuf sanitizes them),
 * so stepping back over at most three continuation bytes finds the start of
 * the character that would be split; on invalid input it gives up after
 * three rather than eat the whole line. */
static size_t
batch_cut(const char *text, size_t len, size_t room)
{
  if (len <= room)
    return len;
  size_t cut = room;
  while (cut > 0 && room - cut < 3 && ((unsigned char)text[cut] & 0xC0) == 0x80)
    cut--;
  if (((unsigned char)text[cut] & 0xC0) == 0x80)
    cut = room;
  return cut;
}

/* Adds a line at now, opening the batch (and fixing its deadline) if it was
 * empty. A line longer than the free text room is cut at a character
 * boundary and gets kLineTruncated; that only happens to the first line of
 * a batch when the caller checked batch_fits. The text is copied. Returns
 * whether the batch is now full and should be delivered at once. */
bool
batch_add(Batch *b, uint64_t now, uint64_t seq, int stream, int pattern, unsigned flags,
          const char *text, size_t len)
{
  /* An initialised batch (batch_init makes max_lines at least 1) and a
   * text that exists. A caller that skipped batch_fits on a full batch has
   * a bug; there is no slot to put the line in. */
  assert(b != NULL && b->max_lines > 0);
  assert(text != NULL || len == 0);
  assert(b->count < batch_cap_lines(b));
  if (b->count >= batch_cap_lines(b))
    return true;
  if (b->count == b->lines_cap) {
    size_t slots = b->lines_cap ? 2 * b->lines_cap : BATCH_LINES_MIN;
    if (slots > batch_cap_lines(b))
      slots = batch_cap_lines(b);
    b->lines = xrealloc(b->lines, slots * sizeof *b->lines);
    b->lines_cap = slots;
  }
  if (b->count == 0 && b->ngroups == 0) {
    b->opened_at = now;
    b->bytes = 0;
  }
  /* A plain line is cut to the batch's room; an incident's line may use the
   * room kept for incidents. */
  size_t cap = b->open_group >= 0 ? batch_cap_bytes(b) : b->max_bytes;
  size_t keep = batch_cut(text, len, cap > b->bytes ? cap - b->bytes : 0);
  if (keep < len)
    flags |= kLineTruncated;
  if (b->bytes + keep > b->text_cap) {
    size_t grown = b->text_cap ? b->text_cap : BATCH_TEXT_MIN;
    while (grown < b->bytes + keep)
      grown *= 2;
    if (grown > batch_cap_bytes(b))
      grown = batch_cap_bytes(b); /* keep never takes the text past it */
    b->text = xrealloc(b->text, grown);
    b->text_cap = grown;
  }
  BatchLine *line = &b->lines[b->count++];
  line->seq = seq;
  line->stream = stream;
  line->pattern = pattern;
  line->flags = flags;
  line->off = b->bytes;
  line->len = keep;
  line->group = b->open_group;
  if (keep)
    memcpy(b->text + b->bytes, text, keep);
  b->bytes += keep;
  if (b->open_group >= 0)
    return false; /* judged at batch_end_group */
  return b->count >= b->max_lines || b->bytes >= b->max_bytes;
}

/* Whether no batch is open. */
bool
batch_empty(const Batch *b)
{
  assert(b != NULL);
  return b->count == 0 && b->ngroups == 0;
}

/* When the open batch is due: interval after its first line, whatever came
 * after. Only meaningful for a non-empty batch. */
uint64_t
batch_deadline(const Batch *b)
{
  assert(b != NULL);
  return b->opened_at + b->interval;
}

/* Whether a batch is open and due at now. */
bool
batch_due(const Batch *b, uint64_t now)
{
  return !batch_empty(b) && now >= batch_deadline(b);
}

/* Calls visit for each line of the open batch in arrival order, with its
 * text in the arena (not NUL-terminated; valid until the next batch_add). */
void
batch_each(const Batch *b, BatchVisit visit, void *ctx)
{
  assert(b != NULL && visit != NULL && b->count <= b->lines_cap);
  for (size_t i = 0; i < b->count; i++)
    visit(ctx, &b->lines[i], b->text + b->lines[i].off);
}

/* Closes the open batch and returns its number (1, 2, ...). Taking an
 * empty batch returns 0 and uses no number, so the numbers an agent sees
 * have no gaps. Storage that never grew past its first allocations is
 * released (a quiet monitor's batch is a line now and then, and holds
 * nothing between them: issue 27); storage that grew is kept for the next
 * batch, which a busy monitor opens within the window. */
uint64_t
batch_take(Batch *b)
{
  assert(b != NULL);
  if (batch_empty(b))
    return 0;
  if (b->lines_cap <= BATCH_LINES_MIN && b->text_cap <= BATCH_TEXT_MIN &&
      b->groups_cap <= BATCH_GROUPS_MIN)
    batch_free(b); /* the number and the caps stay */
  b->count = 0;
  b->bytes = 0;
  b->ngroups = 0;
  b->open_group = -1;
  return ++b->number;
}

/* See batch.h. */
uint64_t
batch_number_next(Batch *b)
{
  assert(b != NULL);
  return ++b->number;
}

/* Frees the storage; the batch is empty after and may be used again (its
 * storage is then allocated anew). */
void
batch_free(Batch *b)
{
  assert(b != NULL);
  free(b->lines);
  free(b->text);
  free(b->groups);
  b->lines = NULL;
  b->text = NULL;
  b->lines_cap = b->text_cap = 0;
  b->groups = NULL;
  b->ngroups = 0;
  b->groups_cap = 0;
  b->open_group = -1;
  b->count = 0;
  b->bytes = 0;
}
