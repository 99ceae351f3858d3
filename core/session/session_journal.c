/*
 * A named session's journal (session_journal.h): appending its records,
 * rewriting it when it grows, and reading every journal back into the
 * registry when an engine starts on a state directory an earlier one left.
 *
 * Writing never blocks the loop for long and never stops delivery: a
 * record is one write(2) into the page cache; a write that fails (a full
 * disk) is logged once per session, counted, and the journal is rewritten
 * whole at the next record, so what a later engine reads is never a
 * journal with a hole in it, only an older one.
 */
#include "session/session_journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/epoch.h"
#include "base/fdcloser.h"
#include "base/log.h"
#include "base/memory.h"
#include "session/notification_state.h"
#include "session/session_ignore.h"
#include "store/statefile.h"

#define SESSION_JOURNAL_VERSION 2
/* The oldest version read back: 1 has no cursor records. */
#define SESSION_JOURNAL_VERSION_MIN 1
#define SESSION_JOURNAL_HEADER 16
static const char session_journal_magic[8] = {'V', 'I', 'G', 'L', 'J', 'R', 'N', 'L'};
/* A single record's bound, as read back: a notification is at most a batch
 * of lines of at most line_max_bytes each. */
#define SESSION_JOURNAL_RECORD_MAX ((uint32_t)256 << 20)

#define W "journal"

/* --- writing ------------------------------------------------------------- */

/* The file name of s's journal in sessions/. */
static void
session_journal_name(const Session *s, char *out, size_t size)
{
  snprintf(out, size, SESSION_JOURNAL_PREFIX "%s", s->name);
}

/* Packs s's numbers, the part of every record that says where it stands. */
static void
session_journal_pack_meta(msgpack_packer *pk, const Session *s)
{
  msgpack_pack_map(pk, 11);
  statefile_pack_str(pk, "pinned"); statefile_pack_bool(pk, s->pinned);
  statefile_pack_str(pk, "queue_max"); msgpack_pack_uint64(pk, s->queue_max);
  statefile_pack_str(pk, "linger_ms"); msgpack_pack_uint64(pk, s->linger_ms);
  statefile_pack_str(pk, "next_seq"); msgpack_pack_uint64(pk, s->next_seq);
  statefile_pack_str(pk, "first_seq"); msgpack_pack_uint64(pk, s->first_seq);
  statefile_pack_str(pk, "seq_jumped"); statefile_pack_bool(pk, s->seq_jumped);
  statefile_pack_str(pk, "dropped_pending"); msgpack_pack_uint64(pk, s->dropped_pending);
  statefile_pack_str(pk, "dropped_incidents"); msgpack_pack_uint64(pk, s->dropped_incidents_pending);
  statefile_pack_str(pk, "dropped_repeats"); msgpack_pack_uint64(pk, s->dropped_repeats_pending);
  statefile_pack_str(pk, "dropped_total"); msgpack_pack_uint64(pk, s->dropped_total);
  statefile_pack_str(pk, "next_key"); msgpack_pack_uint64(pk, s->journal_next_key);
}

/* Frames one record (type t; key and seq when nonzero; n when given; the
 * cursor's name c when given) at the end of sb. */
static void
session_journal_record(msgpack_sbuffer *sb, const Session *s, const char *t, uint64_t key,
                       uint64_t seq, const Notification *n, bool front, const char *c)
{
  size_t at = sb->size;
  static const char room[8] = {0};
  msgpack_sbuffer_write(sb, room, sizeof room);
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, c != NULL ? 7 : 6);
  statefile_pack_str(&pk, "t"); statefile_pack_str(&pk, t);
  statefile_pack_str(&pk, "k"); msgpack_pack_uint64(&pk, key);
  statefile_pack_str(&pk, "seq"); msgpack_pack_uint64(&pk, seq);
  statefile_pack_str(&pk, "front"); statefile_pack_bool(&pk, front);
  statefile_pack_str(&pk, "n");
  if (n != NULL)
    notification_state_pack(&pk, n);
  else
    msgpack_pack_nil(&pk);
  statefile_pack_str(&pk, "m"); session_journal_pack_meta(&pk, s);
  if (c != NULL) {
    statefile_pack_str(&pk, "c"); statefile_pack_str(&pk, c);
  }
  uint32_t len = (uint32_t)(sb->size - at - sizeof room);
  uint32_t check = (uint32_t)statefile_sum(sb->data + at + sizeof room, len);
  memcpy(sb->data + at, &len, 4);
  memcpy(sb->data + at + 4, &check, 4);
}

/* Logs a failed write once per session (until one succeeds again). */
static void
session_journal_failed(Session *s, const char *what, int error)
{
  s->journal_errors++;
  if (!s->journal_broken)
    LOG_WARN("state", "session %s: cannot %s its journal: %s; it is rewritten at the next "
             "change, and an engine restarted before then restores it as it was",
             s->name, what, strerror(error));
  s->journal_broken = true;
}

/* Writes what s holds now as its whole journal (temporary name, rename),
 * and keeps the file open to append to. */
static void
session_journal_rewrite(Session *s)
{
  SessionRegistry *reg = s->reg;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  char head[SESSION_JOURNAL_HEADER] = {0};
  uint32_t version = SESSION_JOURNAL_VERSION;
  memcpy(head, session_journal_magic, 8);
  memcpy(head + 8, &version, 4);
  msgpack_sbuffer_write(&sb, head, sizeof head);
  session_journal_record(&sb, s, "meta", 0, 0, NULL, false, NULL);
  for (size_t i = 0; i < s->kept_count; i++) {
    const Notification *n = session__kept_at(s, i);
    session_journal_record(&sb, s, "note", n->store_key, n->seq, n, false, NULL);
  }
  for (const WaitNode *w = s->wait_head; w; w = w->next)
    session_journal_record(&sb, s, "note", w->n->store_key, 0, w->n, false, NULL);
  for (size_t i = 0; i < s->ncursors; i++)
    if (s->cursors[i].seq > 0)
      session_journal_record(&sb, s, "cursor", 0, s->cursors[i].seq, NULL, false,
                             s->cursors[i].name);
  char name[320], tmp[336];
  session_journal_name(s, name, sizeof name);
  snprintf(tmp, sizeof tmp, "%s.tmp", name);
  /* The old journal's descriptor is closed by the pool once the new one
   * has replaced it: that close frees its blocks, which may wait for the
   * disk (fdcloser.h), and must not be the rename's on the loop. */
  int old_journal = s->journal_fd;
  s->journal_fd = -1;
  unlinkat(reg->store_fd, tmp, 0);
  int fd = openat(reg->store_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0600);
  ssize_t w = fd >= 0 ? write(fd, sb.data, sb.size) : -1;
  int error = errno;
  bool renamed = fd >= 0 && w == (ssize_t)sb.size &&
                 renameat(reg->store_fd, tmp, reg->store_fd, name) == 0;
  if (!renamed && w == (ssize_t)sb.size)
    error = errno;
  fdcloser_close(old_journal);
  if (renamed) {
    s->journal_fd = fd;
    s->journal_bytes = sb.size;
    s->journal_rewrite_bytes = sb.size;
    s->journal_broken = false;
  } else {
    if (fd >= 0)
      close(fd);
    unlinkat(reg->store_fd, tmp, 0);
    session_journal_failed(s, "rewrite", error);
  }
  msgpack_sbuffer_destroy(&sb);
}

/* Whether s keeps a journal. */
static bool
session_journal_on(const Session *s)
{
  /* A name no host could choose (none reaches here but from a file or a
   * config checked as strictly) gets no file rather than a path. */
  return s->reg->store_fd >= 0 && !s->reg->restoring && !s->anonymous && !s->doomed &&
         session_name_ok(s->name);
}

/* Appends one record, or rewrites the journal when it is due (grown past
 * its bound, or broken by a failed write). */
static void
session_journal_append(Session *s, const char *t, uint64_t key, uint64_t seq,
                       const Notification *n, bool front, const char *c)
{
  if (!session_journal_on(s))
    return;
  size_t bound = s->reg->journal_max_bytes;
  if (bound < 2 * s->journal_rewrite_bytes)
    bound = 2 * s->journal_rewrite_bytes;
  if (s->journal_fd < 0 || s->journal_broken || s->journal_bytes > bound) {
    /* The rewrite holds this change already: s was changed before the call. */
    session_journal_rewrite(s);
    return;
  }
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  session_journal_record(&sb, s, t, key, seq, n, front, c);
  ssize_t w = write(s->journal_fd, sb.data, sb.size);
  if (w == (ssize_t)sb.size) {
    s->journal_bytes += sb.size;
  } else {
    int error = w < 0 ? errno : ENOSPC;
    /* A short record is a torn tail to the reader: cut it off now, so the
     * next one does not land after garbage. */
    if (w > 0 && ftruncate(s->journal_fd, (off_t)s->journal_bytes) != 0)
      error = errno;
    session_journal_failed(s, "append to", error);
  }
  msgpack_sbuffer_destroy(&sb);
}

void
session_journal_begin(Session *s)
{
  if (session_journal_on(s))
    session_journal_rewrite(s);
}

void
session_journal_note(Session *s, Notification *n, bool front)
{
  n->store_key = ++s->journal_next_key;
  session_journal_append(s, "note", n->store_key, n->seq, n, front, NULL);
}

void
session_journal_push(Session *s, const Notification *n)
{
  session_journal_append(s, "push", n->store_key, n->seq, NULL, false, NULL);
}

void
session_journal_gone(Session *s, const Notification *n)
{
  session_journal_append(s, "gone", n->store_key, 0, NULL, false, NULL);
}

void
session_journal_meta(Session *s)
{
  session_journal_append(s, "meta", 0, 0, NULL, false, NULL);
}

void
session_journal_cursor(Session *s, const SessionCursor *c)
{
  session_journal_append(s, "cursor", 0, c->seq, NULL, false, c->name);
}

void
session_journal_end(Session *s)
{
  if (s->journal_fd >= 0) {
    close(s->journal_fd);
    s->journal_fd = -1;
  }
  /* A session a failed restore made and destroys again: its file is the
   * one being read, and is set aside, not removed. */
  if (s->reg->store_fd < 0 || s->reg->restoring || s->anonymous)
    return;
  char name[320];
  session_journal_name(s, name, sizeof name);
  unlinkat(s->reg->store_fd, name, 0);
}

/* --- reading back -------------------------------------------------------- */

/* What one journal said, while it is read. */
typedef struct {
  Notification **kept;   /* in push order */
  size_t nkept, kept_cap;
  WaitNode *wait_head, *wait_tail;
  size_t nwaiting;
  size_t meta_at, meta_len; /* the last whole record, whose numbers stand */
  bool has_meta;
  SessionCheckpoint *checkpoints; /* the latest per monitor, from its notes */
  size_t ncheckpoints;
  SessionCursor *cursors;         /* each cursor's latest seq, in the order first seen */
  size_t ncursors;
} JournalImage;

static void
journal_image_free(JournalImage *im)
{
  free(im->checkpoints);
  free(im->cursors);
  for (size_t i = 0; i < im->nkept; i++)
    notification_free(im->kept[i]);
  free(im->kept);
  while (im->wait_head) {
    WaitNode *next = im->wait_head->next;
    notification_free(im->wait_head->n);
    free(im->wait_head);
    im->wait_head = next;
  }
}

static void
journal_image_keep(JournalImage *im, Notification *n)
{
  if (im->nkept == im->kept_cap) {
    im->kept_cap = im->kept_cap ? 2 * im->kept_cap : 16;
    im->kept = xrealloc(im->kept, im->kept_cap * sizeof *im->kept);
  }
  im->kept[im->nkept++] = n;
}

static void
journal_image_wait(JournalImage *im, Notification *n, bool front)
{
  WaitNode *node = xcalloc(1, sizeof *node);
  node->n = n;
  if (front) {
    node->next = im->wait_head;
    if (im->wait_head)
      im->wait_head->prev = node;
    else
      im->wait_tail = node;
    im->wait_head = node;
  } else {
    node->prev = im->wait_tail;
    if (im->wait_tail)
      im->wait_tail->next = node;
    else
      im->wait_head = node;
    im->wait_tail = node;
  }
  im->nwaiting++;
}

/* Takes the waiting notification with key out of the image, or NULL. */
static Notification *
journal_image_unwait(JournalImage *im, uint64_t key)
{
  for (WaitNode *w = im->wait_head; w; w = w->next) {
    if (w->n->store_key != key)
      continue;
    if (w->prev)
      w->prev->next = w->next;
    else
      im->wait_head = w->next;
    if (w->next)
      w->next->prev = w->prev;
    else
      im->wait_tail = w->prev;
    Notification *n = w->n;
    free(w);
    im->nwaiting--;
    return n;
  }
  return NULL;
}

/* Keeps in *all (count *n) the checkpoint v of monitor_id when it is the
 * latest (by notifications told) seen for it. */
static void
journal_keep_checkpoint(SessionCheckpoint **all, size_t *n, const char *monitor_id,
                        const uint64_t v[NOTIFICATION_CHECKPOINT_WORDS])
{
  size_t i = 0;
  while (i < *n && strcmp((*all)[i].monitor_id, monitor_id) != 0)
    i++;
  if (i == *n) {
    *all = xrealloc(*all, (*n + 1) * sizeof **all);
    memset(&(*all)[i], 0, sizeof **all);
    snprintf((*all)[i].monitor_id, sizeof (*all)[i].monitor_id, "%s", monitor_id);
    (*n)++;
  } else if ((*all)[i].v[kCkptNotifications] >= v[kCkptNotifications]) {
    return;
  }
  memcpy((*all)[i].v, v, sizeof (*all)[i].v);
}

/* A cursor record: the cursor it names is at seq from now on. */
static bool
journal_image_cursor(JournalImage *im, const msgpack_object *rec, uint64_t seq, VigilError *err)
{
  char *name = NULL;
  if (!statefile_get_str(W, rec, "c", false, &name, err))
    return false;
  bool ok = session_cursor_name_ok(name);
  if (!ok)
    error_set(err, kErrInvalidParams, W ": c: \"%.64s\" is no cursor name", name);
  size_t i = 0;
  while (ok && i < im->ncursors && strcmp(im->cursors[i].name, name) != 0)
    i++;
  if (ok && i == im->ncursors) {
    ok = im->ncursors < SESSION_CURSORS_MAX;
    if (!ok)
      error_set(err, kErrInvalidParams, W ": more than %d cursors", SESSION_CURSORS_MAX);
  }
  if (ok && i == im->ncursors) {
    im->cursors = xrealloc(im->cursors, (im->ncursors + 1) * sizeof *im->cursors);
    memset(&im->cursors[i], 0, sizeof im->cursors[i]);
    snprintf(im->cursors[i].name, sizeof im->cursors[i].name, "%s", name);
    im->ncursors++;
  }
  if (ok)
    im->cursors[i].seq = seq;
  free(name);
  return ok;
}

/* Applies one record to the image; false with err when it is not sound. */
static bool
journal_apply(JournalImage *im, const msgpack_object *rec, VigilError *err)
{
  char *t = NULL;
  uint64_t key = 0, seq = 0;
  bool front = false;
  if (!statefile_get_str(W, rec, "t", false, &t, err) ||
      !statefile_get_uint(W, rec, "k", UINT64_MAX, &key, err) ||
      !statefile_get_uint(W, rec, "seq", SESSION_SEQ_MAX + 1, &seq, err) ||
      !statefile_get_bool(W, rec, "front", &front, err)) {
    free(t);
    return false;
  }
  const msgpack_object *meta = statefile_get(rec, "m");
  bool ok = meta != NULL && meta->type == MSGPACK_OBJECT_MAP;
  if (!ok)
    error_set(err, kErrInvalidParams, W ": m: missing or not a map");
  if (ok && strcmp(t, "note") == 0) {
    Notification *n = notification_state_unpack(statefile_get(rec, "n"), err);
    ok = n != NULL && n->store_key == key && n->seq == seq;
    if (n != NULL && !ok)
      error_set(err, kErrInvalidParams, W ": a note's key or seq is not its notification's");
    if (ok && n->has_checkpoint && n->monitor_id[0] != '\0')
      journal_keep_checkpoint(&im->checkpoints, &im->ncheckpoints, n->monitor_id, n->checkpoint);
    if (ok && seq > 0)
      journal_image_keep(im, n);
    else if (ok)
      journal_image_wait(im, n, front);
    else
      notification_free(n);
  } else if (ok && (strcmp(t, "push") == 0 || strcmp(t, "gone") == 0)) {
    Notification *n = journal_image_unwait(im, key);
    ok = n != NULL && (t[0] == 'g' || seq > 0);
    if (!ok) {
      error_set(err, kErrInvalidParams, W ": %s of key %" PRIu64 ", which no waiting note has",
                t, key);
      notification_free(n);
    } else if (t[0] == 'p') {
      n->seq = seq;
      journal_image_keep(im, n);
    } else {
      notification_free(n);
    }
  } else if (ok && strcmp(t, "cursor") == 0) {
    ok = journal_image_cursor(im, rec, seq, err);
  } else if (ok && strcmp(t, "meta") != 0) {
    ok = false;
    error_set(err, kErrInvalidParams, W ": a record of unknown type \"%s\"", t);
  }
  free(t);
  return ok;
}

/* Reads a journal's records into im; the bytes of a torn tail in *torn. */
static bool
journal_read(const char *buf, size_t size, JournalImage *im, size_t *torn, VigilError *err)
{
  uint32_t version = 0;
  if (size >= SESSION_JOURNAL_HEADER)
    memcpy(&version, buf + 8, 4);
  if (size < SESSION_JOURNAL_HEADER || memcmp(buf, session_journal_magic, 8) != 0 ||
      version < SESSION_JOURNAL_VERSION_MIN || version > SESSION_JOURNAL_VERSION) {
    error_set(err, kErrInvalidParams, W ": not a vigil session journal of version %d..%d",
              SESSION_JOURNAL_VERSION_MIN, SESSION_JOURNAL_VERSION);
    return false;
  }
  size_t at = SESSION_JOURNAL_HEADER;
  *torn = 0;
  while (at < size) {
    uint32_t len, check;
    if (size - at < 8) {
      *torn = size - at;
      break;
    }
    memcpy(&len, buf + at, 4);
    memcpy(&check, buf + at + 4, 4);
    if (len > SESSION_JOURNAL_RECORD_MAX) {
      error_set(err, kErrInvalidParams, W ": a record of %u bytes at offset %zu (at most %u)",
                len, at, SESSION_JOURNAL_RECORD_MAX);
      return false;
    }
    if (len > size - at - 8) {
      /* The last write, cut short by the crash: it was never pushed. */
      *torn = size - at;
      break;
    }
    if ((uint32_t)statefile_sum(buf + at + 8, len) != check) {
      error_set(err, kErrInvalidParams, W ": the record at offset %zu fails its sum", at);
      return false;
    }
    msgpack_unpacked rec;
    msgpack_unpacked_init(&rec);
    size_t off = 0;
    bool ok = msgpack_unpack_next(&rec, buf + at + 8, len, &off) == MSGPACK_UNPACK_SUCCESS &&
              off == len && rec.data.type == MSGPACK_OBJECT_MAP;
    if (!ok)
      error_set(err, kErrInvalidParams, W ": the record at offset %zu is not a msgpack map", at);
    ok = ok && journal_apply(im, &rec.data, err);
    msgpack_unpacked_destroy(&rec);
    if (!ok)
      return false;
    im->meta_at = at + 8;
    im->meta_len = len;
    im->has_meta = true;
    at += 8 + (size_t)len;
  }
  if (!im->has_meta) {
    error_set(err, kErrInvalidParams, W ": no whole record");
    return false;
  }
  return true;
}

/* Puts what the image holds into s, with the numbers of its last record
 * (m: that record's "m" map). */
static bool
journal_restore_into(Session *s, JournalImage *im, const msgpack_object *m, VigilError *err)
{
  uint64_t queue_max, linger_ms, next_seq, first_seq, pending, incidents, repeats, total, key;
  bool jumped, pinned;
  if (!statefile_get_bool(W, m, "pinned", &pinned, err) ||
      !statefile_get_uint(W, m, "queue_max", 100000, &queue_max, err) ||
      !statefile_get_uint(W, m, "linger_ms", UINT32_MAX, &linger_ms, err) ||
      !statefile_get_uint(W, m, "next_seq", SESSION_SEQ_MAX + 1, &next_seq, err) ||
      !statefile_get_uint(W, m, "first_seq", SESSION_SEQ_MAX + 1, &first_seq, err) ||
      !statefile_get_bool(W, m, "seq_jumped", &jumped, err) ||
      !statefile_get_uint(W, m, "dropped_pending", UINT64_MAX, &pending, err) ||
      !statefile_get_uint(W, m, "dropped_incidents", UINT64_MAX, &incidents, err) ||
      !statefile_get_uint(W, m, "dropped_repeats", UINT64_MAX, &repeats, err) ||
      !statefile_get_uint(W, m, "dropped_total", UINT64_MAX, &total, err) ||
      !statefile_get_uint(W, m, "next_key", UINT64_MAX, &key, err))
    return false;
  if (queue_max == 0 || next_seq == 0 || first_seq == 0 || first_seq > next_seq) {
    error_set(err, kErrInvalidParams, W ": queue_max %" PRIu64 ", first_seq %" PRIu64
              ", next_seq %" PRIu64 " do not make a session", queue_max, first_seq, next_seq);
    return false;
  }
  for (size_t i = 0; i < im->nkept; i++) {
    if (im->kept[i]->seq >= next_seq || (i > 0 && im->kept[i]->seq <= im->kept[i - 1]->seq) ||
        im->kept[i]->store_key > key) {
      error_set(err, kErrInvalidParams, W ": kept notification %zu: seq %" PRIu64
                " out of order or past next_seq %" PRIu64, i, im->kept[i]->seq, next_seq);
      return false;
    }
  }
  for (WaitNode *w = im->wait_head; w; w = w->next)
    if (w->n->store_key > key) {
      error_set(err, kErrInvalidParams, W ": a waiting note's key is past next_key");
      return false;
    }
  /* A cursor only ever moves to a seq the session gave. */
  for (size_t i = 0; i < im->ncursors; i++)
    if (im->cursors[i].seq >= next_seq) {
      error_set(err, kErrInvalidParams, W ": cursor \"%s\" at seq %" PRIu64 ", past next_seq %"
                PRIu64, im->cursors[i].name, im->cursors[i].seq, next_seq);
      return false;
    }
  /* A session a config pins keeps its own queue bound; one brought back
   * keeps the one it had (a reload never shrank it either). */
  if (!s->pinned)
    s->queue_max = (size_t)queue_max;
  s->linger_ms = linger_ms;
  s->next_seq = next_seq;
  s->first_seq = first_seq;
  s->seq_jumped = jumped;
  s->dropped_pending = pending;
  s->dropped_incidents_pending = incidents;
  s->dropped_repeats_pending = repeats;
  s->dropped_total = total;
  s->journal_next_key = key;
  free(s->kept);
  s->kept = xcalloc(s->queue_max, sizeof *s->kept);
  s->kept_start = 0;
  s->kept_count = 0;
  size_t from = im->nkept > s->queue_max ? im->nkept - s->queue_max : 0;
  for (size_t i = 0; i < im->nkept; i++) {
    Notification *n = im->kept[i];
    if (i < from) {
      notification_free(n);
      continue;
    }
    free(n->session);
    n->session = xstrdup(s->name);
    s->kept[s->kept_count++] = n;
  }
  im->nkept = 0;
  while (im->wait_head) {
    WaitNode *w = im->wait_head;
    im->wait_head = w->next;
    free(w->n->session);
    w->n->session = xstrdup(s->name);
    w->prev = s->wait_tail;
    w->next = NULL;
    if (s->wait_tail)
      s->wait_tail->next = w;
    else
      s->wait_head = w;
    s->wait_tail = w;
    s->nwaiting++;
  }
  im->wait_tail = NULL;
  im->nwaiting = 0;
  free(s->cursors);
  s->cursors = im->cursors;
  s->ncursors = im->ncursors;
  im->cursors = NULL;
  im->ncursors = 0;
  return true;
}

/* Reads one journal file and brings its session back. Returns 1 when it
 * did, 0 when the file was set aside (err says why), -1 when it was not
 * a journal at all (left alone). */
static int
session_journal_load(SessionRegistry *reg, const char *file, VigilError *err)
{
  const char *name = file + strlen(SESSION_JOURNAL_PREFIX);
  /* The largest journal read back: one rewrite past its bound, and the
   * record that crossed it. A larger file is no journal of this engine's. */
  size_t max = 2 * reg->journal_max_bytes + SESSION_JOURNAL_RECORD_MAX;
  size_t size = 0;
  int fd = statefile_open(reg->store_fd, file, max, W, &size, err);
  if (fd < 0)
    return 0;
  char *buf = NULL;
  size_t got = statefile_read_fd(fd, size, &buf);
  close(fd);
  JournalImage im;
  memset(&im, 0, sizeof im);
  size_t torn = 0;
  bool ok = journal_read(buf, got, &im, &torn, err);
  msgpack_unpacked last;
  msgpack_unpacked_init(&last);
  if (ok)
    msgpack_unpack_next(&last, buf + im.meta_at, im.meta_len, NULL);
  Session *s = NULL;
  reg->restoring = true;
  bool made = false;
  if (ok) {
    s = session_find(reg, name);
    if (s == NULL) {
      s = session_create(reg, name, false);
      made = true;
    }
    ok = s != NULL && !s->anonymous;
    if (!ok)
      error_set(err, kErrInvalidParams, W ": the session name \"%s\" cannot be brought back",
                name);
  }
  ok = ok && journal_restore_into(s, &im, statefile_get(&last.data, "m"), err);
  for (size_t i = 0; ok && i < im.ncheckpoints; i++)
    journal_keep_checkpoint(&reg->checkpoints, &reg->ncheckpoints, im.checkpoints[i].monitor_id,
                            im.checkpoints[i].v);
  if (!ok && made)
    session_destroy(s);
  reg->restoring = false;
  journal_image_free(&im);
  msgpack_unpacked_destroy(&last);
  free(buf);
  if (!ok)
    return 0;
  if (torn > 0)
    LOG_INFO("state", "session %s: the last %zu bytes of its journal were a record cut short "
             "(never pushed); dropped", name, torn);
  LOG_INFO("state", "session %s brought back: next seq %" PRIu64 ", %zu notification(s) kept "
           "for resume, %zu waiting", name, s->next_seq, s->kept_count, s->nwaiting);
  /* Its journal starts again from what it holds now: no torn tail left. */
  session_journal_rewrite(s);
  if (made)
    session_linger_unattached(s);
  return 1;
}

int
session_registry_restore(SessionRegistry *reg, int state_fd, int sessions_fd,
                         uint64_t journal_max_bytes)
{
  reg->store_fd = sessions_fd;
  reg->state_fd = state_fd;
  reg->journal_max_bytes = (size_t)journal_max_bytes;
  int restored = 0;
  int dup_fd = fcntl(sessions_fd, F_DUPFD_CLOEXEC, 3);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (d == NULL && dup_fd >= 0)
    close(dup_fd);
  /* Names first: loading may write (a rewrite adds and renames entries). */
  char **names = NULL;
  size_t count = 0, cap = 0;
  struct dirent *de;
  while (d != NULL && (de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    if (count == cap) {
      cap = cap ? 2 * cap : 16;
      names = xrealloc(names, cap * sizeof *names);
    }
    names[count++] = xstrdup(de->d_name);
  }
  if (d != NULL)
    closedir(d);
  for (size_t i = 0; i < count; i++) {
    const char *file = names[i];
    size_t len = strlen(file);
    if (len > 4 && strcmp(file + len - 4, ".tmp") == 0) {
      /* A rewrite the crash cut short: the journal it was to replace holds. */
      unlinkat(sessions_fd, file, 0);
    } else if (strncmp(file, SESSION_IGNORE_PREFIX, strlen(SESSION_IGNORE_PREFIX)) == 0) {
      /* A session's ignores: read when that session is first asked. */
    } else if (strncmp(file, SESSION_JOURNAL_PREFIX, strlen(SESSION_JOURNAL_PREFIX)) != 0 ||
               !session_name_ok(file + strlen(SESSION_JOURNAL_PREFIX))) {
      LOG_WARN("state", "sessions/%s is no session journal; left alone", file);
    } else {
      VigilError err = VIGIL_ERROR_INIT;
      if (session_journal_load(reg, file, &err) == 1) {
        restored++;
      } else {
        char aside[512];
        statefile_set_aside(state_fd, sessions_fd, file, file, aside, sizeof aside);
        LOG_ERROR("state", "session %s is not brought back: %s; the file is set aside%s%s; a "
                  "host resuming it is told that what followed its cursor is lost",
                  file + strlen(SESSION_JOURNAL_PREFIX), err.msg, aside[0] ? " as " : "", aside);
        reg->set_aside++;
      }
    }
    free(names[i]);
  }
  free(names);
  /* Sessions made before the store was there (a config's pinned ones) and
   * not restored: their journals start now. */
  for (Session *s = reg->head; s; s = s->next)
    if (s->journal_fd < 0 && !s->anonymous)
      session_journal_rewrite(s);
  return restored;
}

bool
session_registry_checkpoint(const SessionRegistry *reg, const char *monitor_id,
                            uint64_t out[NOTIFICATION_CHECKPOINT_WORDS])
{
  for (size_t i = 0; i < reg->ncheckpoints; i++) {
    if (strcmp(reg->checkpoints[i].monitor_id, monitor_id) == 0) {
      memcpy(out, reg->checkpoints[i].v, sizeof reg->checkpoints[i].v);
      return true;
    }
  }
  return false;
}
