/*
 * The fleet's publisher (fleet_publisher.h): the loop's side of publishing.
 *
 * One FleetSession per named session: its tap, its subject, and up to
 * nats.max_in_flight notifications sent and not yet acknowledged (their
 * encoded payloads kept for sending again), oldest first. Why a window
 * and not one at a time: a session's monitors often flush together (a
 * crash seen by ten of them), and one at a time would make the tenth wait
 * ten round trips to the stream; over a WAN that is most of a second.
 *
 * An acknowledgment marks its notification done; the done ones at the
 * front leave, and FLEET_CURSOR moves to the last of them, so the cursor
 * never passes a notification the stream may lack. A timer per session
 * measures the oldest one's wait for its acknowledgment
 * (nats.ack_timeout_ms), then the backoff before the next try
 * (nats.retry_min_ms doubling to nats.retry_max_ms). A timeout or an
 * error answer sends every one of the window again, in order, after the
 * backoff, and takes nothing new meanwhile; JetStream's duplicate window
 * drops the copies of those that had landed (the message id is
 * epoch:session:seq).
 *
 * Connection changes come from the link as events. While the link is
 * down nothing is sent and nothing new is taken (nothing is lost: the
 * window waits); when it comes up, the whole window goes again at once,
 * since the server may never have had it. On one connection the server
 * stores in the order it reads, so the stream holds a session's
 * notifications in seq order unless one is lost while a later one lands
 * (a message lost in the instant a connection drops, a stream leader
 * lost): readers take them in order anyway (docs/fleet.md section 3),
 * and nats.max_in_flight = 1 keeps the stream itself in order.
 */
#include "fleet/fleet_publisher.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wire.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/memory.h"
#include "fleet/fleet_link.h"
#include "spec/fleet_names.h"
#include "session/session.h"
#include "session/session_cursor.h"
#include "store/epoch.h"

#define L "nats"

/* How many times one notification is sent again under a new id when its
 * id is found taken; past it, it is taken as in the stream. */
#define FLEET_ID_GENERATIONS_MAX 3

typedef struct FleetSession FleetSession;

/* One notification of the window: sent, not acknowledged yet. */
typedef struct {
  uint64_t seq;
  char *payload;
  size_t len;
  unsigned attempts;           /* sends so far */
  /* A message id someone else published (docs/fleet.md, "Forged ids"):
   * the id's generation (0: epoch:session:seq; n: ...:n) and the sends
   * under the current one. */
  unsigned id_generation;
  unsigned sends_of_id;
  uint64_t sent_at;            /* the loop's time of its last send */
  bool done;                   /* acknowledged (or lost for good): waits for those before it */
} FleetFlight;

struct FleetSession {
  FleetPublisher *p;
  Session *s;
  SessionAttachment *tap;
  uint64_t id;                 /* in the reply subject: which session an answer is for */
  char name[SESSION_NAME_MAX + 1];
  char subject[FLEET_SUBJECT_MAX];
  /* The window, a ring of p->c.max_in_flight: count from first, seq order. */
  FleetFlight *flights;
  size_t cap, first, count;
  /* A duplicate answer to the first send of an id is legitimate only for a
   * seq an earlier engine may have sent: up to maybe_sent, the last seq the
   * session held when it came back from the state directory. */
  uint64_t maybe_sent;
  bool retry_due;              /* the timer waits out a backoff, not an answer */
  uv_timer_t timer;
  bool cursor_full;            /* FLEET_CURSOR could not be made: said once */
  FleetSession *prev, *next;
};

struct FleetPublisher {
  Engine *e;
  FleetLink *link;
  FleetConfig c;               /* its strings owned */
  char url_shown[512];
  bool tls;                    /* TLS asked for: a tls:// URL or nats.tls_* */
  SessionHooks watch;
  FleetSession *head;
  size_t nsessions;
  uint64_t next_id;
  bool up;
  /* What api_info reports. */
  uint64_t published;          /* first sends */
  uint64_t acked;
  uint64_t duplicates;         /* acknowledgments saying JetStream had it already */
  uint64_t retries;            /* sends again */
  uint64_t timeouts;           /* no answer within ack_timeout_ms */
  uint64_t refusals;           /* answers that refused (or sends that failed) */
  uint64_t lost;               /* refused for good: never in the stream */
  uint64_t abandoned;          /* in flight when their session went */
  uint64_t stale_answers;      /* for a seq no longer in flight */
  uint64_t server_errors;
  uint64_t foreign_ids;        /* ids found taken by a message we did not send */
  char last_error[FLEET_LINK_ERROR_MAX];
  /* fleet_publisher_drain: whom to tell once nothing is in flight. */
  void (*drained)(void *data);
  void *drained_data;
  uv_timer_t drain_timer;
  bool drain_timer_ready;
};

/* --- the window ---------------------------------------------------------- */

static FleetFlight *
fleet_flight_at(FleetSession *fs, size_t i)
{
  return &fs->flights[(fs->first + i) % fs->cap];
}

static FleetFlight *
fleet_flight_find(FleetSession *fs, uint64_t seq)
{
  for (size_t i = 0; i < fs->count; i++) {
    FleetFlight *f = fleet_flight_at(fs, i);
    if (f->seq == seq)
      return f;
  }
  return NULL;
}

/* The oldest of the window not acknowledged yet, or NULL. */
static FleetFlight *
fleet_oldest_waiting(FleetSession *fs)
{
  for (size_t i = 0; i < fs->count; i++) {
    FleetFlight *f = fleet_flight_at(fs, i);
    if (!f->done)
      return f;
  }
  return NULL;
}

/* --- sending ------------------------------------------------------------- */

static void fleet_session_timer_cb(uv_timer_t *t);

/* Sends f (the link up). */
static void
fleet_send(FleetSession *fs, FleetFlight *f)
{
  FleetPublisher *p = fs->p;
  char msg_id[FLEET_SUBJECT_MAX], seq[24];
  fleet_msg_id(msg_id, sizeof msg_id, epoch_hex(), fs->name, f->seq);
  if (f->id_generation > 0) {
    size_t used = strlen(msg_id);
    snprintf(msg_id + used, sizeof msg_id - used, ":%u", f->id_generation);
  }
  f->sends_of_id++;
  snprintf(seq, sizeof seq, "%" PRIu64, f->seq);
  const char *headers[] = {
    "Nats-Msg-Id", msg_id,  "Vigil-Engine", p->c.engine, "Vigil-Session", fs->name,
    "Vigil-Seq",   seq,     "Vigil-Epoch",  epoch_hex(),
  };
  if (f->attempts++ == 0)
    p->published++;
  else
    p->retries++;
  f->sent_at = uv_now(p->e->loop);
  fleet_link_publish(p->link, fs->subject, headers, 5, f->payload, f->len, fs->id, f->seq);
}

/* Sets the timer to the oldest waiting one's deadline (none: stopped),
 * unless it waits out a backoff. */
static void
fleet_arm(FleetSession *fs)
{
  if (fs->retry_due)
    return;
  FleetFlight *f = fleet_oldest_waiting(fs);
  if (f == NULL || !fs->p->up) {
    uv_timer_stop(&fs->timer);
    return;
  }
  uint64_t deadline = f->sent_at + (uint64_t)fs->p->c.ack_timeout_ms;
  uint64_t now = uv_now(fs->p->e->loop);
  uv_timer_start(&fs->timer, fleet_session_timer_cb, deadline > now ? deadline - now : 0, 0);
}

/* Sends every one of the window not acknowledged yet, in order. */
static void
fleet_send_window(FleetSession *fs)
{
  fs->retry_due = false;
  for (size_t i = 0; i < fs->count; i++) {
    FleetFlight *f = fleet_flight_at(fs, i);
    if (!f->done)
      fleet_send(fs, f);
  }
  fleet_arm(fs);
}

/* Waits out the backoff of the oldest one's attempts so far, taking
 * nothing new, then sends the window again. */
static void
fleet_retry_later(FleetSession *fs)
{
  const FleetConfig *c = &fs->p->c;
  FleetFlight *f = fleet_oldest_waiting(fs);
  unsigned attempts = f ? f->attempts : 1;
  int64_t delay = c->retry_min_ms;
  for (unsigned i = 1; i < attempts && delay < c->retry_max_ms; i++)
    delay *= 2;
  if (delay > c->retry_max_ms)
    delay = c->retry_max_ms;
  fs->retry_due = true;
  uv_timer_start(&fs->timer, fleet_session_timer_cb, (uint64_t)delay, 0);
}

static void
fleet_session_timer_cb(uv_timer_t *t)
{
  FleetSession *fs = t->data;
  if (!fs->p->up)
    return; /* the link's coming up sends the window */
  if (fs->retry_due) {
    fleet_send_window(fs);
    session_resume(fs->tap); /* what it refused during the backoff */
    return;
  }
  FleetFlight *f = fleet_oldest_waiting(fs);
  if (f == NULL)
    return;
  if (f->sent_at + (uint64_t)fs->p->c.ack_timeout_ms > uv_now(fs->p->e->loop)) {
    fleet_arm(fs); /* the one it was set for was acknowledged meanwhile */
    return;
  }
  fs->p->timeouts++;
  fleet_retry_later(fs);
}

/* The tap's push: takes n while the window has room, the link is up and
 * no backoff is waited out. */
static bool
fleet_push(void *ctx, Session *s, const Notification *n)
{
  (void)s;
  FleetSession *fs = ctx;
  if (!fs->p->up || fs->retry_due || fs->count == fs->cap)
    return false;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  wire_notification(&pk, n);
  FleetFlight *f = fleet_flight_at(fs, fs->count++);
  *f = (FleetFlight){.seq = n->seq, .payload = sb.data, .len = sb.size}; /* the buffer's, now ours */
  fleet_send(fs, f);
  if (!uv_is_active((uv_handle_t *)&fs->timer))
    fleet_arm(fs);
  return true;
}

/* --- what the link says --------------------------------------------------- */

static FleetSession *
fleet_find(FleetPublisher *p, uint64_t id)
{
  for (FleetSession *fs = p->head; fs; fs = fs->next)
    if (fs->id == id)
      return fs;
  return NULL;
}

/* Moves the session's FLEET_CURSOR to seq. */
static void
fleet_cursor_move(FleetSession *fs, uint64_t seq)
{
  uint64_t at = 0;
  VigilError err = VIGIL_ERROR_INIT;
  if (session_cursor_advance(fs->s, FLEET_CURSOR, seq, &at, &err) != 0 && !fs->cursor_full) {
    fs->cursor_full = true;
    LOG_WARN(L, "session %s: cannot keep what JetStream acknowledged (%s); a restart publishes "
             "its kept notifications again, and the duplicate window drops them",
             fs->name, err.msg);
  }
}

/* The done ones at the front of the window leave it: FLEET_CURSOR moves
 * to the last of them, and the tap is resumed for what the room allows. */
static void
fleet_settle(FleetSession *fs)
{
  uint64_t last = 0;
  while (fs->count > 0 && fleet_flight_at(fs, 0)->done) {
    FleetFlight *f = fleet_flight_at(fs, 0);
    last = f->seq;
    free(f->payload);
    f->payload = NULL;
    fs->first = (fs->first + 1) % fs->cap;
    fs->count--;
  }
  if (fs->count == 0 && fs->retry_due) {
    /* All answered during the backoff: nothing is left to send again, and
     * what the tap holds must not wait for the timer. */
    fs->retry_due = false;
    uv_timer_stop(&fs->timer);
  }
  fleet_arm(fs);
  if (last == 0)
    return;
  fleet_cursor_move(fs, last);
  session_resume(fs->tap); /* may push: fleet_push takes what fits */
}

/* The answer's notification, or NULL (counted) when none of the window
 * waits for it. */
static FleetFlight *
fleet_answered(FleetPublisher *p, const FleetEvent *ev, FleetSession **fsp)
{
  FleetSession *fs = fleet_find(p, ev->id);
  FleetFlight *f = fs ? fleet_flight_find(fs, ev->seq) : NULL;
  if (f == NULL || f->done) {
    p->stale_answers++;
    return NULL;
  }
  *fsp = fs;
  return f;
}

static void
fleet_on_ack(FleetPublisher *p, const FleetEvent *ev)
{
  FleetSession *fs = NULL;
  FleetFlight *f = fleet_answered(p, ev, &fs);
  if (f == NULL)
    return;
  if (ev->duplicate && f->sends_of_id == 1 && f->seq > fs->maybe_sent &&
      f->id_generation < FLEET_ID_GENERATIONS_MAX) {
    /* Nobody of ours sent this id before: another publisher took it, and
     * JetStream dropped our notification as its copy. Sent again under
     * the id's next generation, so that it is in the stream. */
    p->foreign_ids++;
    LOG_WARN(L, "session %s: seq %" PRIu64 ": its message id was already in the stream, "
             "published by someone else (check who may publish to vigil.%s.>); sent again "
             "under a new id", fs->name, f->seq, p->c.engine);
    f->id_generation++;
    f->sends_of_id = 0;
    if (p->up && !fs->retry_due) {
      fleet_send(fs, f);
      fleet_arm(fs);
    }
    return;
  }
  p->acked++;
  if (ev->duplicate)
    p->duplicates++;
  f->done = true;
  fleet_settle(fs);
}

static void
fleet_on_nack(FleetPublisher *p, const FleetEvent *ev)
{
  FleetSession *fs = NULL;
  FleetFlight *f = fleet_answered(p, ev, &fs);
  if (f == NULL)
    return;
  p->refusals++;
  fleet_text_copy(p->last_error, sizeof p->last_error, ev->error);
  if (!ev->permanent) {
    if (!fs->retry_due)
      fleet_retry_later(fs);
    return;
  }
  p->lost++;
  LOG_WARN(L, "session %s: seq %" PRIu64 " is not in the stream and never will be: %s",
           fs->name, f->seq, ev->error);
  f->done = true;
  fleet_settle(fs);
}

/* Up again: every window goes again now, in order, and the taps resume. */
static void
fleet_on_up(FleetPublisher *p)
{
  if (!p->up)
    LOG_INFO(L, "connected to %s; publishing into the stream %s as engine %s", p->url_shown,
             p->c.stream, p->c.engine);
  p->up = true;
  for (FleetSession *fs = p->head; fs; fs = fs->next) {
    uv_timer_stop(&fs->timer);
    fleet_send_window(fs);
  }
  /* Resumed after every window went, so that none waits behind another
   * session's new notifications; a resume may end nothing (a push only
   * appends), so the list stays as it is. */
  for (FleetSession *fs = p->head; fs; fs = fs->next)
    session_resume(fs->tap);
}

/* The window's notifications not acknowledged yet (those acknowledged
 * behind one that is not are in the stream already). */
static size_t
fleet_waiting(FleetSession *fs)
{
  size_t n = 0;
  for (size_t i = 0; i < fs->count; i++)
    n += !fleet_flight_at(fs, i)->done;
  return n;
}

static size_t
fleet_in_flight(const FleetPublisher *p)
{
  size_t n = 0;
  for (FleetSession *fs = p->head; fs; fs = fs->next)
    n += fleet_waiting(fs);
  return n;
}

/* A drain waits: tells its caller once nothing is in flight. */
static void
fleet_drain_check(FleetPublisher *p, bool timed_out)
{
  if (p->drained == NULL)
    return;
  size_t left = fleet_in_flight(p);
  if (left > 0 && !timed_out)
    return;
  if (left > 0)
    LOG_WARN(L, "stopping with %zu session(s) whose latest notification JetStream has not "
             "acknowledged (%s): they are not in the stream", left,
             p->last_error[0] ? p->last_error : "no answer");
  void (*done)(void *) = p->drained;
  p->drained = NULL;
  if (p->drain_timer_ready)
    uv_timer_stop(&p->drain_timer);
  done(p->drained_data);
}

static void
fleet_drain_timer_cb(uv_timer_t *t)
{
  fleet_drain_check(t->data, true);
}

void
fleet_publisher_drain(FleetPublisher *p, uint64_t timeout_ms, void (*done)(void *data),
                      void *data)
{
  p->drained = done;
  p->drained_data = data;
  if (fleet_in_flight(p) > 0) {
    if (!p->drain_timer_ready) {
      uv_timer_init(p->e->loop, &p->drain_timer);
      p->drain_timer.data = p;
      p->drain_timer_ready = true;
    }
    uv_timer_start(&p->drain_timer, fleet_drain_timer_cb, timeout_ms, 0);
  }
  fleet_drain_check(p, false);
}

static void
fleet_on_event(void *data, const FleetEvent *ev)
{
  FleetPublisher *p = data;
  switch (ev->kind) {
  case kFleetAck:
    fleet_on_ack(p, ev);
    fleet_drain_check(p, false);
    break;
  case kFleetNack:
    fleet_on_nack(p, ev);
    fleet_drain_check(p, false);
    break;
  case kFleetUp:
    fleet_on_up(p);
    break;
  case kFleetDown:
    if (p->up)
      LOG_WARN(L, "%s", ev->error);
    p->up = false; /* the timers find it so and wait for kFleetUp */
    fleet_text_copy(p->last_error, sizeof p->last_error, ev->error);
    break;
  case kFleetError:
    p->server_errors++;
    LOG_WARN(L, "the server says: %s", ev->error);
    fleet_text_copy(p->last_error, sizeof p->last_error, ev->error);
    break;
  }
}

/* --- sessions ------------------------------------------------------------ */

/* Taps s, replaying from its FLEET_CURSOR (0: everything it keeps) when
 * asked to: a session brought back from the state directory. */
static void
fleet_tap(FleetPublisher *p, Session *s, bool replay)
{
  if (session_anonymous(s))
    return;
  FleetSession *fs = xcalloc(1, sizeof *fs);
  fs->p = p;
  fs->s = s;
  fs->id = ++p->next_id;
  snprintf(fs->name, sizeof fs->name, "%s", session_name(s));
  fs->cap = p->c.max_in_flight > 0 ? (size_t)p->c.max_in_flight : 1;
  if (fleet_subject(fs->subject, sizeof fs->subject, p->c.engine, fs->name) != 0) {
    free(fs);
    return; /* cannot happen: names are bounded so that it fits */
  }
  fs->flights = xcalloc(fs->cap, sizeof *fs->flights);
  uv_timer_init(p->e->loop, &fs->timer);
  fs->timer.data = fs;
  fs->next = p->head;
  if (p->head)
    p->head->prev = fs;
  p->head = fs;
  p->nsessions++;
  uint64_t cursor = 0;
  session_cursor_get(s, FLEET_CURSOR, &cursor);
  fs->maybe_sent = replay ? session_next_seq(s) - 1 : 0;
  fs->tap = session_attach_tap(s, fleet_push, fs, replay, cursor);
}

static void
fleet_session_closed(uv_handle_t *h)
{
  FleetSession *fs = h->data;
  for (size_t i = 0; i < fs->count; i++)
    free(fleet_flight_at(fs, i)->payload);
  free(fs->flights);
  free(fs);
}

/* Forgets fs (its tap goes with its session, or was detached). */
static void
fleet_forget(FleetPublisher *p, FleetSession *fs)
{
  if (fs->prev)
    fs->prev->next = fs->next;
  else
    p->head = fs->next;
  if (fs->next)
    fs->next->prev = fs->prev;
  p->nsessions--;
  uv_close((uv_handle_t *)&fs->timer, fleet_session_closed);
}

static void
fleet_on_session_create(void *data, Session *s)
{
  fleet_tap(data, s, false);
}

static void
fleet_on_session_destroy(void *data, Session *s)
{
  FleetPublisher *p = data;
  for (FleetSession *fs = p->head; fs; fs = fs->next)
    if (fs->s == s) {
      p->abandoned += fleet_waiting(fs);
      fleet_forget(p, fs);
      return;
    }
}

static void
fleet_tap_existing(void *ctx, Session *s)
{
  fleet_tap(ctx, s, true);
}

/* --- the publisher ------------------------------------------------------- */

FleetPublisher *
fleet_publisher_start(Engine *e, const FleetConfig *c, VigilError *err)
{
  FleetPublisher *p = xcalloc(1, sizeof *p);
  p->e = e;
  p->c = *c;
  p->c.url = xstrdup(c->url);
  p->c.creds = c->creds ? xstrdup(c->creds) : NULL;
  /* The TLS files are the link's to read; api_info says only whether TLS
   * was asked for, so the publisher keeps no copy of them. */
  p->c.tls_ca = p->c.tls_cert = p->c.tls_key = NULL;
  p->tls = c->tls_ca || c->tls_cert || c->tls_key || fleet_url_says_tls(c->url);
  p->c.stream = xstrdup(c->stream);
  p->c.engine = xstrdup(c->engine);
  fleet_url_redacted(c->url, p->url_shown, sizeof p->url_shown);
  char client_name[FLEET_ENGINE_NAME_MAX + 16];
  snprintf(client_name, sizeof client_name, "vigild %s", c->engine);
  FleetLinkOptions o = {
    .url = c->url,
    .creds = c->creds,
    .tls_ca = c->tls_ca,
    .tls_cert = c->tls_cert,
    .tls_key = c->tls_key,
    .stream = c->stream,
    .client_name = client_name,
    .max_age_ms = c->max_age_ms,
    .max_bytes = c->max_bytes,
    .duplicate_window_ms = c->duplicate_window_ms,
    .connect_timeout_ms = c->connect_timeout_ms,
    .retry_min_ms = c->retry_min_ms,
    .retry_max_ms = c->retry_max_ms,
  };
  p->link = fleet_link_start(e->loop, &o, fleet_on_event, p, err);
  if (p->link == NULL) {
    fleet_publisher_free(p);
    return NULL;
  }
  /* A connect and the stream's read (or its creation): two waits at most,
   * and a margin for the thread to get going. */
  VigilError why = VIGIL_ERROR_INIT;
  FleetReadiness r = fleet_link_wait_ready(p->link, 3 * c->connect_timeout_ms + 1000, &why);
  if (r == kFleetRefused) {
    *err = why;
    fleet_publisher_free(p);
    return NULL;
  }
  if (r == kFleetUnreachable) {
    /* The reason alone: the log line's component already says nats, and
     * api_info's last_error is a reason, not an error's code. */
    const char *reason = why.msg;
    size_t code = strlen(error_name(why.code));
    if (strncmp(reason, error_name(why.code), code) == 0 && strncmp(reason + code, ": ", 2) == 0)
      reason += code + 2;
    if (strncmp(reason, "nats: ", 6) == 0)
      reason += 6;
    fleet_text_copy(p->last_error, sizeof p->last_error, reason);
    LOG_WARN(L, "%s; starting anyway: notifications wait in their sessions and are published "
             "once the server answers", reason);
  }
  session_each(e->sessions, fleet_tap_existing, p);
  p->watch = (SessionHooks){.on_create = fleet_on_session_create,
                            .on_destroy = fleet_on_session_destroy};
  engine_watch_sessions(e, &p->watch, p);
  return p;
}

static void
fleet_publisher_closed(uv_handle_t *h)
{
  free(h->data);
}

void
fleet_publisher_free(FleetPublisher *p)
{
  if (p == NULL)
    return;
  if (p->e->session_watch == &p->watch)
    engine_watch_sessions(p->e, NULL, NULL);
  while (p->head) {
    FleetSession *fs = p->head;
    session_detach(fs->tap);
    fleet_forget(p, fs);
  }
  fleet_link_stop(p->link);
  free((char *)p->c.url);
  free((char *)p->c.creds);
  free((char *)p->c.stream);
  free((char *)p->c.engine);
  /* The drain's timer, if it was made, is the last to go. */
  if (p->drain_timer_ready)
    uv_close((uv_handle_t *)&p->drain_timer, fleet_publisher_closed);
  else
    free(p);
}

FleetLink *
fleet_publisher_link(FleetPublisher *p)
{
  return p->link;
}

void
fleet_publisher_pack_info(FleetPublisher *p, msgpack_packer *pk, size_t extra)
{
  FleetLinkStats ls = {0};
  fleet_link_stats(p->link, &ls);
  size_t in_flight = fleet_in_flight(p);
  msgpack_pack_map(pk, 21 + extra);
  wire_key(pk, "url");
  wire_str(pk, p->url_shown);
  wire_key(pk, "tls");
  p->tls ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "engine");
  wire_str(pk, p->c.engine);
  wire_key(pk, "stream");
  wire_str(pk, p->c.stream);
  wire_key(pk, "state");
  wire_str(pk, p->up && ls.connected ? "connected" : "disconnected");
  wire_key(pk, "connects");
  msgpack_pack_uint64(pk, ls.connects);
  wire_key(pk, "sessions");
  msgpack_pack_uint64(pk, p->nsessions);
  wire_key(pk, "in_flight");
  msgpack_pack_uint64(pk, in_flight);
  wire_key(pk, "published");
  msgpack_pack_uint64(pk, p->published);
  wire_key(pk, "acknowledged");
  msgpack_pack_uint64(pk, p->acked);
  wire_key(pk, "duplicates");
  msgpack_pack_uint64(pk, p->duplicates);
  wire_key(pk, "retries");
  msgpack_pack_uint64(pk, p->retries);
  wire_key(pk, "timeouts");
  msgpack_pack_uint64(pk, p->timeouts);
  wire_key(pk, "refusals");
  msgpack_pack_uint64(pk, p->refusals);
  wire_key(pk, "lost");
  msgpack_pack_uint64(pk, p->lost);
  wire_key(pk, "abandoned");
  msgpack_pack_uint64(pk, p->abandoned);
  wire_key(pk, "stale_answers");
  msgpack_pack_uint64(pk, p->stale_answers);
  wire_key(pk, "server_errors");
  msgpack_pack_uint64(pk, p->server_errors);
  wire_key(pk, "foreign_ids");
  msgpack_pack_uint64(pk, p->foreign_ids);
  wire_key(pk, "events_dropped");
  msgpack_pack_uint64(pk, ls.events_dropped);
  wire_key(pk, "last_error");
  if (p->last_error[0])
    wire_str(pk, p->last_error);
  else
    msgpack_pack_nil(pk);
}
