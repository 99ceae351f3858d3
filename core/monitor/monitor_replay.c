/*
 * What a restarted engine needs of a monitor it takes over (docs/restart.md):
 * the checkpoint, stored after each chunk and each notification (how far
 * each stream was processed, what was counted and told), and the replay of
 * the spools through the intake, silently up to the cut and as new output
 * after it.
 */
#include "monitor/monitor_internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/memory.h"
#include "proc/keeper_wire.h"

/* Feeds the spooled bytes [from, to) of a stream through monitor_take;
 * what is not silent counts as read (a checkpoint stored meanwhile, at a
 * notification, is where the replay stands). */
static void
monitor_replay_range(Monitor *m, StreamId stream, uint64_t from, uint64_t to, bool silent)
{
  Spool *sp = &m->keep->spool[stream];
  m->replay_silent = silent;
  while (from < to) {
    CaptureSpan s = spool_read(sp, from, to - from);
    if (s.n1 + s.n2 == 0)
      break;
    if (s.n1 > 0)
      monitor__take(m, stream, s.offset, s.p1, s.n1);
    if (s.n2 > 0)
      monitor__take(m, stream, s.offset + s.n1, s.p2, s.n2);
    from = s.offset + s.n1 + s.n2;
    if (!silent)
      m->stream_bytes[stream] = from;
  }
  m->replay_silent = false;
}

/* The first offset of a whole line in the spool from its oldest kept
 * byte: a spool that evicted its front starts mid-line. */
static uint64_t
monitor_replay_start(Spool *sp)
{
  uint64_t start = spool_start(sp), head = spool_head(sp);
  if (start == 0)
    return 0;
  CaptureSpan s = spool_read(sp, start, head - start);
  const char *nl = s.n1 ? memchr(s.p1, '\n', s.n1) : NULL;
  if (nl != NULL)
    return start + (uint64_t)(nl - s.p1) + 1;
  if (s.n2 && (nl = memchr(s.p2, '\n', s.n2)) != NULL)
    return start + s.n1 + (uint64_t)(nl - s.p2) + 1;
  return head;
}

/* Newlines in the spool's [from, to). */
static uint64_t
monitor_replay_count(Spool *sp, uint64_t from, uint64_t to)
{
  uint64_t n = 0;
  CaptureSpan s = spool_read(sp, from, to > from ? to - from : 0);
  const char *parts[2] = {s.p1, s.p2};
  size_t lens[2] = {s.n1, s.n2};
  for (int i = 0; i < 2; i++) {
    const char *p = parts[i], *end = parts[i] + lens[i];
    while (p != NULL && p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
      n++;
      p++;
    }
  }
  return n;
}

/* Feeds the spooled bytes after pos[] (up to head[]) as new output, in the
 * order the keeper spooled them (KEEPER_ORDER_NAME: stdout's and stderr's
 * lines as they were printed), then what the order does not cover stream
 * by stream. The order is used once: it goes when the replay is done. */
static void
monitor_replay_in_order(Monitor *m, uint64_t pos[2], const uint64_t head[2])
{
  int fd = openat(m->keep->dir_fd, KEEPER_ORDER_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid()) {
    unsigned char buf[256 * KEEPER_ORDER_RECORD];
    uint64_t records = 0;
    bool sound = true;
    ssize_t n;
    while (sound && records < KEEPER_ORDER_MAX && (n = read(fd, buf, sizeof buf)) > 0) {
      for (ssize_t at = 0; sound && at + KEEPER_ORDER_RECORD <= n; at += KEEPER_ORDER_RECORD) {
        uint32_t magic, stream;
        uint64_t end;
        memcpy(&magic, buf + at, 4);
        memcpy(&stream, buf + at + 4, 4);
        memcpy(&end, buf + at + 8, 8);
        sound = magic == KEEPER_ORDER_MAGIC && stream <= 1;
        if (sound && end > head[stream])
          end = head[stream];
        if (sound && end > pos[stream]) {
          monitor_replay_range(m, (StreamId)stream, pos[stream], end, false);
          pos[stream] = end;
        }
        records++;
      }
    }
  }
  if (fd >= 0) {
    close(fd);
    unlinkat(m->keep->dir_fd, KEEPER_ORDER_NAME, 0);
  }
  for (int i = 0; i < 2; i++)
    monitor_replay_range(m, (StreamId)i, pos[i], head[i], false);
}

/* See monitor.h. What the engine before had processed (before the cut its
 * checkpoint recorded, else the spool's) rebuilds the ring without a word,
 * numbered and counted as that engine had it when there is a checkpoint;
 * what came after goes the normal way: what that engine had read but not
 * yet told (an open batch, an incident assembling), and what came while no
 * engine read. Lines after the cut that engine had already decided (told,
 * or judged not to be: told_nr) are counted, kept and logged again, but
 * offered to nothing, so nothing is told twice; incident ids go on from
 * its next one. */
void
monitor_replay(Monitor *m)
{
  if (m->keep == NULL)
    return;
  const KeepCheckpoint *ck = m->keep->ckpt;
  uint64_t from[2], cut[2], head[2], silent_lines = 0;
  for (int i = 0; i < 2; i++) {
    Spool *sp = &m->keep->spool[i];
    head[i] = spool_head(sp);
    from[i] = monitor_replay_start(sp);
    cut[i] = ck != NULL ? ck->cut[i] : spool_cut(sp);
    if (cut[i] > head[i])
      cut[i] = head[i];
    if (cut[i] < from[i])
      cut[i] = from[i];
    silent_lines += monitor_replay_count(sp, from[i], cut[i]);
  }
  /* The kept lines get the seqs they had: the last one before the cut is
   * the checkpoint's next seq less one. */
  if (ck != NULL && ck->ring_next_seq > silent_lines)
    m->ring.next_seq = ck->ring_next_seq - silent_lines;
  for (int i = 0; i < 2; i++)
    monitor_replay_range(m, (StreamId)i, from[i], cut[i], true);
  if (ck != NULL) {
    m->ring.counters = (RingCounters){ck->lines, ck->matched, ck->unmatched, ck->dropped};
    m->ring.next_seq = ck->ring_next_seq;
    m->notifications = ck->notifications;
    m->incidents_total = ck->incidents;
    assembler_set_next_id(&m->assembler, ck->incident_next);
    for (int i = 0; i < 2; i++) {
      m->stream_nr[i] = ck->nr_at_cut[i];
      m->told_floor[i] = ck->told_nr[i];
    }
  }
  for (int i = 0; i < 2; i++)
    m->stream_bytes[i] = cut[i];
  monitor_replay_in_order(m, cut, head);
  for (int i = 0; i < 2; i++) {
    m->stream_bytes[i] = head[i];
    spool_set_cut(&m->keep->spool[i], head[i]);
    m->capture[i].total = head[i];
  }
  monitor__checkpoint(m);
}

/* The number of the last line of stream up to which every line is decided
 * (told, or judged not to be): the line before the first one waiting in
 * the batch or in the incident assembling on that stream, else its last.
 * Nothing on a stream after a line waiting there is ever told first: the
 * batch goes whole, and a line that does not join a stream's open incident
 * closes it into the batch before going on. */
static uint64_t
monitor_told_nr(const Monitor *m, int stream)
{
  uint64_t first = m->batch_first_nr[stream];
  const Incident *open = assembler_open_incident(&m->assembler, stream);
  uint64_t inc = open != NULL && open->nlines > 0 ? open->lines[0].nr : 0;
  if (inc != 0 && (first == 0 || inc < first))
    first = inc;
  uint64_t told = first != 0 ? first - 1 : m->stream_nr[stream];
  return told > m->told_floor[stream] ? told : m->told_floor[stream];
}

/* The id a replay gives its first incident: the lowest id of those waiting
 * (assembling, or in the batch), which it assembles again, when every id
 * from there on is one of them; else (an incident decided after one still
 * waiting: two streams) the next id, leaving a gap rather than giving an
 * id twice. */
static uint64_t
monitor_incident_next(const Monitor *m)
{
  uint64_t low = m->assembler.next_id, waiting = 0;
  for (int s = 0; s < 2; s++) {
    const Incident *open = assembler_open_incident(&m->assembler, s);
    if (open != NULL) {
      waiting++;
      low = open->id < low ? open->id : low;
    }
  }
  for (size_t i = 0; i < batch_group_count(&m->batch); i++) {
    const NoteIncident *g = batch_group(&m->batch, i);
    if (!g->summary) {
      waiting++;
      low = g->id < low ? g->id : low;
    }
  }
  return low + waiting == m->assembler.next_id ? low : m->assembler.next_id;
}

/* See monitor_internal.h. A few stores into a page mapped shared.
 *
 * What was matched but not yet told must survive a crash, and what was
 * told must not be told again. So the cut (with the seq and counters that
 * go with it) moves only while nothing waits: no batch open, no incident
 * assembling; an engine that dies with something waiting leaves the cut
 * before it, and the next one reads those lines again and tells them,
 * rather than nobody. What was told meanwhile (a batch that went while an
 * incident was still assembling) is marked per stream by told_nr, which
 * moves at every store: the replay offers the lines up to it to nothing.
 * Incidents decided and the next incident id move at every store too, so
 * the count goes on and an id is never given twice (what was waiting at
 * the crash is assembled again and gets its ids again when it can:
 * monitor_incident_next). What the coalescing
 * table and the rate limit hold (a series' summary count, a window) is not
 * kept. */
bool
monitor__checkpoint_values(const Monitor *m, uint64_t out[NOTIFICATION_CHECKPOINT_WORDS])
{
  const KeepCheckpoint *ck = m->keep != NULL ? m->keep->ckpt : NULL;
  if (ck == NULL || m->replay_silent)
    return false;
  if (batch_empty(&m->batch) && !assembler_busy(&m->assembler)) {
    out[kCkptCut0] = m->stream_bytes[0];
    out[kCkptCut1] = m->stream_bytes[1];
    out[kCkptNextSeq] = m->ring.next_seq;
    out[kCkptLines] = m->ring.counters.lines;
    out[kCkptMatched] = m->ring.counters.matched;
    out[kCkptUnmatched] = m->ring.counters.unmatched;
    out[kCkptDropped] = m->ring.counters.dropped;
    out[kCkptNrAtCut0] = m->stream_nr[0];
    out[kCkptNrAtCut1] = m->stream_nr[1];
  } else {
    out[kCkptCut0] = ck->cut[0];
    out[kCkptCut1] = ck->cut[1];
    out[kCkptNextSeq] = ck->ring_next_seq;
    out[kCkptLines] = ck->lines;
    out[kCkptMatched] = ck->matched;
    out[kCkptUnmatched] = ck->unmatched;
    out[kCkptDropped] = ck->dropped;
    out[kCkptNrAtCut0] = ck->nr_at_cut[0];
    out[kCkptNrAtCut1] = ck->nr_at_cut[1];
  }
  out[kCkptNotifications] = m->notifications;
  out[kCkptToldNr0] = monitor_told_nr(m, 0);
  out[kCkptToldNr1] = monitor_told_nr(m, 1);
  out[kCkptIncidents] = m->incidents_total - m->batch_incidents;
  out[kCkptIncidentNext] = monitor_incident_next(m);
  return true;
}

void
monitor__checkpoint(Monitor *m)
{
  uint64_t v[NOTIFICATION_CHECKPOINT_WORDS];
  if (monitor__checkpoint_values(m, v))
    monitor_keep_set_checkpoint(m->keep, v);
}
