/*
 * A monitor's event log kept in its directory (eventkeep.h): the mapped
 * file, a slot's layout, writing one and reading them all back.
 *
 * A slot is written field by field and its sum last; a reader takes only
 * slots whose sum matches, so a slot half written when the engine died is
 * skipped. The restored run is the newest contiguous run of ids (the
 * event log's ring relies on contiguous ids), so a skipped slot costs the
 * events older than it too, never a wrong order.
 */
#include "pipeline/eventkeep.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec/limits.h"
#include "base/mapfile.h"
#include "store/statefile.h"

/* The header shares its page with the first slots: a monitor that logs a
 * few events touches one page of the file, not two. */
#define EVENTKEEP_HEADER 64
#define EVENTKEEP_SLOT 512
/* The blocks reserved ahead of the slots at a time: a page (8 slots; the
 * first page holds the header and 7). On tmpfs (the state directory's
 * default) what is reserved is memory, and a monitor logs a few events:
 * 16 KiB at a time cost every monitor 16 KiB (issue 27). */
#define EVENTKEEP_RESERVE_STEP 4096u
static const char eventkeep_magic[8] = {'V', 'I', 'G', 'L', 'E', 'V', 'N', 'T'};

typedef struct {
  char magic[8];
  uint32_t version;
  uint32_t slot_bytes;
  uint64_t slots;
  uint64_t dropped;     /* the log's dropped count, as of the last event */
  uint64_t dropped_incidents; /* of those, incident events (version 2) */
} EventKeepHeader;

/* One event in its slot; the text (a match's line or a reason) follows,
 * then the sum of everything before it. */
typedef struct {
  uint64_t id;          /* 0: never written */
  uint64_t ring_next_seq;
  int64_t at_ms;
  uint64_t incident, fingerprint, lines, repeats, span_ms;
  int32_t type, pattern, exit_code, signal, kind;
  uint8_t has_exit_code, has_line, has_reason, exceeded; /* exceeded: LimitKind */
  uint16_t line_len, reason_len;
  char text[EVENTKEEP_SLOT - 96];
  uint32_t sum;
} EventSlot;

_Static_assert(sizeof(EventSlot) == EVENTKEEP_SLOT, "an event slot is 512 bytes");
_Static_assert(sizeof(EventKeepHeader) <= EVENTKEEP_HEADER, "the header fits its bytes");

static EventKeepHeader *
eventkeep_header(const EventKeep *k)
{
  return k->map;
}

static EventSlot *
eventkeep_slot(const EventKeep *k, size_t i)
{
  return (EventSlot *)((char *)k->map + EVENTKEEP_HEADER) + i;
}

/* Reserves the blocks of the file's bytes up to upto, a step at a time.
 * Whether they are there. */
static bool
eventkeep_reserve(EventKeep *k, size_t upto)
{
  if (upto <= k->reserved)
    return true;
  size_t to = (upto + EVENTKEEP_RESERVE_STEP - 1) / EVENTKEEP_RESERVE_STEP *
              EVENTKEEP_RESERVE_STEP;
  if (to > k->bytes)
    to = k->bytes;
  int e = mapfile_reserve(k->fd, k->reserved, to - k->reserved);
  if (e != 0) {
    snprintf(k->why, sizeof k->why, "no room for its next events: %s", strerror(e));
    return false;
  }
  k->reserved = to;
  return true;
}

/* Lets the mapping and the file go (why already set when it failed). The
 * file is open exactly while it is mapped, so a zeroed EventKeep (one
 * never opened) has nothing to let go. */
static void
eventkeep_unmap(EventKeep *k)
{
  if (k->map != NULL) {
    mapfile_unguard(k->guard);
    munmap(k->map, k->bytes);
    close(k->fd);
  }
  k->map = NULL;
  k->fd = -1;
  k->guard = -1;
}

bool
eventkeep_open(EventKeep *k, int dir_fd, size_t slots, bool create)
{
  memset(k, 0, sizeof *k);
  k->fd = k->guard = -1;
  if (slots == 0)
    return false;
  size_t bytes = EVENTKEEP_HEADER + slots * (size_t)EVENTKEEP_SLOT;
  int fd = openat(dir_fd, EVENTKEEP_NAME,
                  (create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR) | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
            (st.st_mode & 077) == 0 &&
            (create ? ftruncate(fd, (off_t)bytes) == 0 : (size_t)st.st_size == bytes);
  void *map = ok ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (map == MAP_FAILED) {
    close(fd);
    return false;
  }
  k->map = map;
  k->bytes = bytes;
  k->slots = slots;
  k->fd = fd;
  k->guard = mapfile_guard(map, bytes);
  EventKeepHeader *h = eventkeep_header(k);
  if (create) {
    /* The header's block (and the first slots') before it is written. */
    if (!eventkeep_reserve(k, EVENTKEEP_HEADER + EVENTKEEP_SLOT)) {
      /* Not kept from the start: its events are counted as unkept. */
      eventkeep_unmap(k);
      return false;
    }
    memcpy(h->magic, eventkeep_magic, 8);
    h->version = 2;
    h->slot_bytes = EVENTKEEP_SLOT;
    h->slots = slots;
  } else if (memcmp(h->magic, eventkeep_magic, 8) != 0 || h->version != 2 ||
             h->slot_bytes != EVENTKEEP_SLOT || h->slots != slots) {
    eventkeep_close(k);
    return false;
  }
  return true;
}

void
eventkeep_close(EventKeep *k)
{
  eventkeep_unmap(k);
  memset(k, 0, sizeof *k);
  k->fd = k->guard = -1;
}

/* Copies s into the slot's text at *at, cut to what is left (with "..."),
 * and returns the length kept. */
static uint16_t
eventkeep_text(EventSlot *slot, size_t *at, const char *s)
{
  size_t n = strlen(s), room = sizeof slot->text - *at;
  size_t cap = room < EVENTKEEP_TEXT_MAX ? room : EVENTKEEP_TEXT_MAX;
  if (n > cap) {
    n = cap >= 3 ? cap - 3 : 0;
    memcpy(slot->text + *at, s, n);
    memcpy(slot->text + *at + n, "...", cap - n);
    n = cap;
  } else {
    memcpy(slot->text + *at, s, n);
  }
  *at += n;
  return (uint16_t)n;
}

bool
eventkeep_put(EventKeep *k, const Event *ev, uint64_t ring_next_seq, const EventLog *log)
{
  if (ev == NULL)
    return true;
  size_t i = (size_t)((ev->id - 1) % (k->slots ? k->slots : 1));
  if (k->map != NULL &&
      (mapfile_hit(k->guard) ||
       !eventkeep_reserve(k, EVENTKEEP_HEADER + (i + 1) * (size_t)EVENTKEEP_SLOT))) {
    if (k->why[0] == '\0')
      snprintf(k->why, sizeof k->why, "its file was cut short under it (a SIGBUS caught)");
    eventkeep_unmap(k);
  }
  if (k->map == NULL) {
    k->unkept += k->why[0] != '\0';
    return false;
  }
  EventSlot *slot = eventkeep_slot(k, i);
  EventSlot s;
  memset(&s, 0, offsetof(EventSlot, text));
  s.id = ev->id;
  s.ring_next_seq = ring_next_seq;
  s.at_ms = ev->at_ms;
  s.incident = ev->incident;
  s.fingerprint = ev->fingerprint;
  s.lines = ev->lines;
  s.repeats = ev->repeats;
  s.span_ms = ev->span_ms;
  s.type = ev->type;
  s.pattern = ev->pattern;
  s.exit_code = ev->exit_code;
  s.signal = ev->signal;
  s.kind = ev->kind;
  s.has_exit_code = ev->has_exit_code;
  s.exceeded = (uint8_t)limit_by_name(ev->exceeded);
  size_t at = 0;
  s.has_line = ev->line != NULL;
  if (ev->line != NULL)
    s.line_len = eventkeep_text(&s, &at, ev->line);
  s.has_reason = ev->reason != NULL;
  if (ev->reason != NULL)
    s.reason_len = eventkeep_text(&s, &at, ev->reason);
  size_t used = offsetof(EventSlot, text) + at;
  memcpy(slot, &s, used);
  slot->sum = (uint32_t)statefile_sum(slot, used) ^ (uint32_t)used;
  eventkeep_header(k)->dropped = log->dropped;
  eventkeep_header(k)->dropped_incidents = log->dropped_incidents;
  if (mapfile_hit(k->guard)) {
    snprintf(k->why, sizeof k->why, "its file was cut short under it (a SIGBUS caught)");
    eventkeep_unmap(k);
    k->unkept++;
    return false;
  }
  return true;
}

/* Whether slot i holds a whole event; its length used in *used. */
static bool
eventkeep_slot_ok(const EventKeep *k, size_t i)
{
  const EventSlot *s = eventkeep_slot(k, i);
  if (s->id == 0 || s->type < 0 || s->type >= EVENT_TYPE_COUNT ||
      (size_t)s->line_len + s->reason_len > sizeof s->text || s->exceeded > kLimitCpuTime)
    return false;
  size_t used = offsetof(EventSlot, text) + s->line_len + s->reason_len;
  return s->sum == ((uint32_t)statefile_sum(s, used) ^ (uint32_t)used);
}

static int
eventkeep_by_id(const void *a, const void *b)
{
  uint64_t x = (*(const EventSlot *const *)a)->id, y = (*(const EventSlot *const *)b)->id;
  return x < y ? -1 : x > y;
}

size_t
eventkeep_restore(const EventKeep *k, EventLog *log, uint64_t until_seq)
{
  if (k->map == NULL)
    return 0;
  const EventSlot **all = malloc(k->slots * sizeof *all);
  if (all == NULL)
    return 0;
  size_t n = 0;
  for (size_t i = 0; i < k->slots; i++) {
    const EventSlot *s = eventkeep_slot(k, i);
    if (eventkeep_slot_ok(k, i) && s->ring_next_seq <= until_seq &&
        (s->id - 1) % k->slots == i)
      all[n++] = s;
  }
  qsort(all, n, sizeof *all, eventkeep_by_id);
  /* The newest contiguous run. */
  size_t first = n;
  while (first > 0 && (first == n || all[first - 1]->id + 1 == all[first]->id))
    first--;
  for (size_t i = first; i < n; i++) {
    const EventSlot *s = all[i];
    char line[sizeof s->text + 1], reason[sizeof s->text + 1];
    memcpy(line, s->text, s->line_len);
    line[s->line_len] = '\0';
    memcpy(reason, s->text + s->line_len, s->reason_len);
    reason[s->reason_len] = '\0';
    Event ev = {
      .id = s->id, .type = (EventType)s->type, .at_ms = s->at_ms, .pattern = s->pattern,
      .line = s->has_line ? line : NULL, .has_exit_code = s->has_exit_code != 0,
      .exit_code = s->exit_code, .signal = s->signal,
      .reason = s->has_reason ? reason : NULL,
      .exceeded = limit_name((LimitKind)s->exceeded), .incident = s->incident,
      .fingerprint = s->fingerprint, .kind = s->kind, .lines = s->lines,
      .repeats = s->repeats, .span_ms = s->span_ms,
    };
    eventlog_add_kept(log, &ev);
  }
  log->dropped = eventkeep_header(k)->dropped;
  log->dropped_incidents = eventkeep_header(k)->dropped_incidents;
  free((void *)all);
  return n - first;
}
