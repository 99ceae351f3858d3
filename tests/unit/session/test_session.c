/*
 * Tests of sessions: what a host attached to a session sees, and in which
 * order. A fake sink records every push (which attachment, seq, type,
 * monitor, mode); the delivery tests need no loop (a registry on a NULL loop
 * never lingers), and the linger tests run a real loop until a flag is set,
 * never sleeping.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "base/memory.h"
#include "pipeline/notification.h"
#include "session/session.h"
#include "session/session_cursor.h"

/* --- the fake host ------------------------------------------------------ */

typedef struct {
  int att;
  uint64_t seq;
  NotificationType type;
  char monitor_id[24];
  DeliveryMode mode;
  uint64_t dropped_count;
  uint64_t from_seq;
  uint64_t to_seq;
  char session[32];
  char text[1024];
  char reason[256];
} Rec;

typedef struct {
  Rec recs[256];
  size_t n;
} Sink;

/* One attachment's context: the shared sink, its id, and whether its
 * connection is full (refuses every push, recording nothing). */
typedef struct {
  Sink *sink;
  int id;
  bool full;
} SinkCtx;

static bool
sink_push(void *ctx, Session *s, const Notification *n)
{
  SinkCtx *c = ctx;
  (void)s;
  if (c->full)
    return false;
  if (c->sink->n == 256)
    return true;
  Rec *r = &c->sink->recs[c->sink->n++];
  r->att = c->id;
  r->seq = n->seq;
  r->type = n->type;
  snprintf(r->monitor_id, sizeof r->monitor_id, "%s", n->monitor_id);
  r->mode = n->mode;
  r->dropped_count = n->dropped_count;
  r->from_seq = n->from_seq;
  r->to_seq = n->to_seq;
  snprintf(r->reason, sizeof r->reason, "%s", n->reason ? n->reason : "");
  snprintf(r->session, sizeof r->session, "%s", n->session ? n->session : "(null)");
  snprintf(r->text, sizeof r->text, "%s", n->text ? n->text : "(null)");
  return true;
}

/* A rendered notification (the text only needs to be there). */
static Notification *
note(NotificationType type, const char *monitor_id, DeliveryMode mode)
{
  Notification *n = notification_new(type, monitor_id, "label", mode);
  n->text = xstrdup("text");
  return n;
}

/* The sink as "att:seq:type:monitor" items, comma-separated. */
static const char *
sink_str(const Sink *sink, size_t from)
{
  static char buf[4096];
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = from; i < sink->n && used < sizeof buf; i++) {
    const Rec *r = &sink->recs[i];
    used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%d:%llu:%s:%s", i > from ? "," : "",
                             r->att, (unsigned long long)r->seq, notification_type_name(r->type),
                             r->monitor_id);
  }
  return buf;
}

static SessionRegistry *
registry(uv_loop_t *loop, size_t queue_max, uint64_t linger_ms, const SessionHooks *hooks,
         void *data)
{
  SessionLimits limits = {.queue_max = queue_max, .linger_ms = linger_ms, .max_cursors = 16};
  return session_registry_new(loop, &limits, hooks, data);
}

/* --- numbering and the two modes ---------------------------------------- */

TEST(seq_starts_at_one_and_counts_across_monitors)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  CHECK_INT(session_next_seq(s), 1);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_b", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_a", kModeLiveSafe));
  session_push(s, note(kNotifExit, "mon_b", kModeIdle));
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a,1:2:output:mon_b,1:3:output:mon_a,1:4:exit:mon_b");
  CHECK_STR(sink.recs[0].session, "a");
  CHECK_INT(sink.recs[2].mode, kModeLiveSafe);
  CHECK_INT(session_next_seq(s), 5);
  CHECK_INT(session_queued(s), 0);
  session_registry_free(reg);
}

TEST(idle_held_while_busy_released_in_order)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  CHECK(!session_busy(s));
  CHECK_INT(session_set_busy(s, true), 0);
  CHECK(session_busy(s));
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_b", kModeIdle));
  session_push(s, note(kNotifExit, "mon_a", kModeIdle));
  CHECK_INT(sink.n, 0);
  CHECK_INT(session_queued(s), 3);
  CHECK_INT(session_set_busy(s, false), 3);
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a,1:2:output:mon_b,1:3:exit:mon_a");
  CHECK_INT(session_queued(s), 0);
  CHECK_INT(session_set_busy(s, false), 0);
  session_registry_free(reg);
}

TEST(live_safe_goes_while_busy_and_seqs_stay_in_arrival_order)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle)); /* seq 1, idle */
  session_set_busy(s, true);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_b", kModeLiveSafe));
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a,1:2:output:mon_b");
  CHECK_INT(session_queued(s), 2);
  CHECK_INT(session_set_busy(s, false), 2);
  CHECK_STR(sink_str(&sink, 2), "1:3:output:mon_a,1:4:output:mon_a");
  for (size_t i = 1; i < sink.n; i++)
    CHECK(sink.recs[i].seq == sink.recs[i - 1].seq + 1);
  session_registry_free(reg);
}

TEST(live_ending_pushes_its_own_held_output_first)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  session_set_busy(s, true);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_b", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifExit, "mon_a", kModeLiveSafe));
  /* mon_a's held output first, then its ending; mon_b's output stays held. */
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a,1:2:output:mon_a,1:3:exit:mon_a");
  CHECK_INT(session_queued(s), 1);
  /* The second of two concurrent tasks is not lost: it arrives on idle. */
  CHECK_INT(session_set_busy(s, false), 1);
  CHECK_STR(sink_str(&sink, 3), "1:4:output:mon_b");
  session_registry_free(reg);
}

TEST(live_ending_without_held_output_goes_alone)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  session_set_busy(s, true);
  session_push(s, note(kNotifOutput, "mon_b", kModeIdle));
  session_push(s, note(kNotifStopped, "mon_a", kModeLiveSafe));
  CHECK_STR(sink_str(&sink, 0), "1:1:stopped:mon_a");
  CHECK_INT(session_queued(s), 1);
  session_registry_free(reg);
}

/* --- overflow ----------------------------------------------------------- */

TEST(live_ending_after_drops_says_so_before_the_held_output)
{
  SessionRegistry *reg = registry(NULL, 2, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  session_set_busy(s, true);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle)); /* dropped */
  session_push(s, note(kNotifOutput, "mon_b", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_INT(session_dropped_total(s), 1);
  session_push(s, note(kNotifExit, "mon_a", kModeLiveSafe));
  /* The drop is older than anything still waiting, so it is told first. */
  CHECK_STR(sink_str(&sink, 0), "1:1:dropped:,1:2:output:mon_a,1:3:exit:mon_a");
  CHECK_INT(sink.recs[0].dropped_count, 1);
  CHECK_INT(session_set_busy(s, false), 1);
  CHECK_STR(sink_str(&sink, 3), "1:4:output:mon_b");
  session_registry_free(reg);
}

TEST(overflow_drops_oldest_outputs_and_says_so_once)
{
  SessionRegistry *reg = registry(NULL, 3, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  session_set_busy(s, true);
  for (int i = 0; i < 5; i++) {
    Notification *n = note(kNotifOutput, "mon_a", kModeIdle);
    n->batch = (uint64_t)i + 1;
    session_push(s, n);
  }
  CHECK_INT(session_queued(s), 3);
  CHECK_INT(session_dropped_total(s), 2);
  CHECK_INT(sink.n, 0);
  CHECK_INT(session_set_busy(s, false), 4);
  CHECK_STR(sink_str(&sink, 0),
            "1:1:dropped:,1:2:output:mon_a,1:3:output:mon_a,1:4:output:mon_a");
  CHECK_INT(sink.recs[0].dropped_count, 2);
  CHECK_INT(sink.recs[0].mode, kModeIdle);
  CHECK_STR(sink.recs[0].session, "a");
  CHECK_CONTAINS(sink.recs[0].text, "VIGIL OBSERVATION");
  CHECK_INT(session_dropped_total(s), 2);
  /* The pending count was reset: the next release says nothing of drops. */
  session_set_busy(s, true);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_INT(session_set_busy(s, false), 1);
  CHECK_STR(sink_str(&sink, 4), "1:5:output:mon_a");
  session_registry_free(reg);
}

TEST(overflow_keeps_the_newest_outputs)
{
  SessionRegistry *reg = registry(NULL, 3, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  session_set_busy(s, true);
  /* Tell them apart by monitor id: mon_1 .. mon_5. */
  for (int i = 1; i <= 5; i++) {
    char id[16];
    snprintf(id, sizeof id, "mon_%d", i);
    session_push(s, note(kNotifOutput, id, kModeIdle));
  }
  session_set_busy(s, false);
  CHECK_STR(sink_str(&sink, 0), "1:1:dropped:,1:2:output:mon_3,1:3:output:mon_4,1:4:output:mon_5");
  session_registry_free(reg);
}

TEST(endings_are_never_dropped)
{
  SessionRegistry *reg = registry(NULL, 2, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  session_set_busy(s, true);
  session_push(s, note(kNotifOutput, "mon_1", kModeIdle));
  session_push(s, note(kNotifExit, "mon_1", kModeIdle));
  session_push(s, note(kNotifTimedOut, "mon_2", kModeIdle));
  session_push(s, note(kNotifStopped, "mon_3", kModeIdle));
  session_push(s, note(kNotifPolicyError, "mon_4", kModeIdle));
  session_push(s, note(kNotifOverload, "mon_4", kModeIdle));
  /* Only the one output could go; the rest exceed the bound, all kept. */
  CHECK_INT(session_dropped_total(s), 1);
  CHECK_INT(session_queued(s), 5);
  CHECK_INT(session_set_busy(s, false), 6);
  CHECK_STR(sink_str(&sink, 0),
            "1:1:dropped:,1:2:exit:mon_1,1:3:timed_out:mon_2,1:4:stopped:mon_3,"
            "1:5:policy_error:mon_4,1:6:overload:mon_4");
  session_registry_free(reg);
}

/* --- detached sessions and resume --------------------------------------- */

TEST(detached_notifications_wait_and_attach_flushes_them)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_a", kModeLiveSafe));
  session_push(s, note(kNotifExit, "mon_a", kModeLiveSafe));
  CHECK_INT(session_queued(s), 3);
  CHECK_INT(session_next_seq(s), 1);
  /* Going idle with nobody attached releases nothing. */
  CHECK_INT(session_set_busy(s, false), 0);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a,1:2:output:mon_a,1:3:exit:mon_a");
  CHECK_INT(session_queued(s), 0);
  session_registry_free(reg);
}

TEST(first_attach_resets_busy)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, false};
  SessionAttachment *a = session_attach(s, sink_push, &c1, false, 0);
  session_set_busy(s, true);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  /* A second attachment leaves the state alone. */
  SessionAttachment *b = session_attach(s, sink_push, &c2, false, 0);
  CHECK(session_busy(s));
  CHECK_INT(sink.n, 0);
  session_detach(a);
  session_detach(b);
  CHECK_INT(session_attached(s), 0);
  session_attach(s, sink_push, &c1, false, 0);
  CHECK(!session_busy(s));
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a");
  session_registry_free(reg);
}

TEST(resume_with_last_seq_replays_kept_then_waiting_once)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, false};
  SessionAttachment *a = session_attach(s, sink_push, &c1, false, 0);
  for (int i = 0; i < 5; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_STR(sink_str(&sink, 0),
            "1:1:output:mon_a,1:2:output:mon_a,1:3:output:mon_a,1:4:output:mon_a,1:5:output:mon_a");
  session_detach(a);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifExit, "mon_a", kModeIdle));
  CHECK_INT(session_queued(s), 2);
  size_t before = sink.n;
  session_attach(s, sink_push, &c2, true, 3);
  CHECK_STR(sink_str(&sink, before),
            "2:4:output:mon_a,2:5:output:mon_a,2:6:output:mon_a,2:7:exit:mon_a");
  CHECK_INT(session_next_seq(s), 8);
  session_registry_free(reg);
}

TEST(resume_with_last_seq_zero_replays_all_kept)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, false};
  SessionAttachment *a = session_attach(s, sink_push, &c1, false, 0);
  for (int i = 0; i < 3; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_detach(a);
  size_t before = sink.n;
  session_attach(s, sink_push, &c2, true, 0);
  CHECK_STR(sink_str(&sink, before), "2:1:output:mon_a,2:2:output:mon_a,2:3:output:mon_a");
  /* Without last_seq nothing is replayed. With one past the end nothing is
   * replayed either, but the numbering goes on above it and everyone
   * attached is told (issue 7: seqs are never reused for a session name). */
  SinkCtx c3 = {&sink, 3, false}, c4 = {&sink, 4, false};
  before = sink.n;
  session_attach(s, sink_push, &c3, false, 0);
  CHECK_INT(sink.n, before);
  session_attach(s, sink_push, &c4, true, 99);
  CHECK_STR(sink_str(&sink, before), "2:100:dropped:,3:100:dropped:,4:100:dropped:");
  session_registry_free(reg);
}

TEST(kept_ring_is_bounded_by_queue_max)
{
  SessionRegistry *reg = registry(NULL, 3, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, false};
  SessionAttachment *a = session_attach(s, sink_push, &c1, false, 0);
  for (int i = 0; i < 10; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_detach(a);
  size_t before = sink.n;
  session_attach(s, sink_push, &c2, true, 0);
  /* 1..7 were evicted: said first (issue 7), then the kept ones. */
  CHECK_STR(sink_str(&sink, before),
            "2:7:dropped:,2:8:output:mon_a,2:9:output:mon_a,2:10:output:mon_a");
  CHECK_INT(sink.recs[before].dropped_count, 7);
  session_registry_free(reg);
}

TEST(two_attachments_both_receive_and_replay_goes_to_one)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, false};
  session_attach(s, sink_push, &c1, false, 0);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_b", kModeIdle));
  size_t before = sink.n;
  session_attach(s, sink_push, &c2, true, 0);
  CHECK_INT(session_attached(s), 2);
  CHECK_STR(sink_str(&sink, before), "2:1:output:mon_a,2:2:output:mon_b");
  before = sink.n;
  session_push(s, note(kNotifOutput, "mon_a", kModeLiveSafe));
  CHECK_STR(sink_str(&sink, before), "1:3:output:mon_a,2:3:output:mon_a");
  session_registry_free(reg);
}

/* --- gaps: what a resume cannot replay is said, never silent ------------- */

TEST(resume_older_than_kept_gets_the_lost_range_first)
{
  SessionRegistry *reg = registry(NULL, 3, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, false}, c3 = {&sink, 3, false};
  SessionAttachment *a = session_attach(s, sink_push, &c1, false, 0);
  for (int i = 0; i < 10; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_detach(a);
  /* Seqs 3..7 are gone (only 8..10 are kept): one dropped first, standing
   * for the last of them, then the kept ones. */
  size_t before = sink.n;
  SessionAttachment *b = session_attach(s, sink_push, &c2, true, 2);
  CHECK_STR(sink_str(&sink, before), "2:7:dropped:,2:8:output:mon_a,2:9:output:mon_a,2:10:output:mon_a");
  const Rec *gap = &sink.recs[before];
  CHECK_INT(gap->from_seq, 3);
  CHECK_INT(gap->to_seq, 7);
  CHECK_INT(gap->dropped_count, 5);
  CHECK_STR(gap->session, "a");
  CHECK_CONTAINS(gap->reason, "3..7");
  CHECK_CONTAINS(gap->text, "3..7");
  /* The marker is that connection's alone: nothing was numbered or kept. */
  CHECK_INT(session_next_seq(s), 11);
  session_detach(b);
  /* A cursor at the oldest kept one's predecessor loses nothing: no marker. */
  before = sink.n;
  session_attach(s, sink_push, &c3, true, 7);
  CHECK_STR(sink_str(&sink, before), "3:8:output:mon_a,3:9:output:mon_a,3:10:output:mon_a");
  session_registry_free(reg);
}

TEST(a_cursor_this_session_never_reached_continues_above_it)
{
  /* After an engine restart the session is new, but the host's cursor is
   * 150: numbering goes on above it, and the first notification says that
   * what came after 150 in the earlier engine is lost (count unknown). */
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "gw", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, false}, c3 = {&sink, 3, false};
  session_attach(s, sink_push, &c1, true, 150);
  CHECK_STR(sink_str(&sink, 0), "1:151:dropped:");
  CHECK_INT(sink.recs[0].from_seq, 151);
  CHECK_INT(sink.recs[0].to_seq, 0);       /* open-ended */
  CHECK_INT(sink.recs[0].dropped_count, 0); /* unknown */
  CHECK_CONTAINS(sink.recs[0].reason, "after seq 150");
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_STR(sink_str(&sink, 1), "1:152:output:mon_a");
  CHECK_INT(session_next_seq(s), 153);
  /* A second cursor from that earlier engine, further on: raised again,
   * said to everyone attached (the numbering jumps for them too). */
  size_t before = sink.n;
  session_attach(s, sink_push, &c2, true, 200);
  CHECK_STR(sink_str(&sink, before), "1:201:dropped:,2:201:dropped:");
  CHECK_INT(sink.recs[before].from_seq, 201);
  /* A cursor below where this session began: the range is named, the
   * count is unknown (those seqs belonged to the earlier engine). */
  before = sink.n;
  session_attach(s, sink_push, &c3, true, 100);
  CHECK_INT(sink.recs[before].type, kNotifDropped);
  CHECK_INT(sink.recs[before].from_seq, 101);
  CHECK_INT(sink.recs[before].to_seq, 150);
  CHECK_INT(sink.recs[before].dropped_count, 0);
  CHECK_INT(sink.recs[before].seq, 150);
  CHECK_STR(sink_str(&sink, before + 1), "3:151:dropped:,3:152:output:mon_a,3:201:dropped:");
  /* A fresh session with last_seq 0 has lost nothing it could know of. */
  Session *t = session_create(reg, "fresh", false);
  before = sink.n;
  session_attach(t, sink_push, &c1, true, 0);
  CHECK_INT(sink.n, before);
  CHECK_INT(session_next_seq(t), 1);
  session_registry_free(reg);
}

TEST(a_cursor_ahead_is_said_even_while_busy_and_seqs_stay_in_order)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "gw", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, false};
  session_attach(s, sink_push, &c1, false, 0);
  session_set_busy(s, true);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle)); /* held */
  session_attach(s, sink_push, &c2, true, 40);
  CHECK_INT(sink.n, 0); /* busy: the marker waits, in order, like any idle one */
  session_set_busy(s, false);
  CHECK_STR(sink_str(&sink, 0), "1:41:dropped:,2:41:dropped:,1:42:output:mon_a,2:42:output:mon_a");
  /* Cursors ever further ahead while busy: the numbering follows, but one
   * waiting marker (the earliest cursor's, which covers the later ones)
   * stands for all of them, so they cannot grow the queue. */
  session_set_busy(s, true);
  size_t before = sink.n;
  SinkCtx more[50];
  for (int i = 0; i < 50; i++) {
    more[i] = (SinkCtx){&sink, 10 + i, false};
    session_attach(s, sink_push, &more[i], true, 100 + (uint64_t)i * 10);
  }
  CHECK_INT(session_queued(s), 1);
  CHECK_INT(session_next_seq(s), 100 + 49 * 10 + 1);
  session_set_busy(s, false);
  CHECK_INT(sink.recs[before].from_seq, 101);
  CHECK_INT(sink.recs[before].seq, 100 + 49 * 10 + 1);
  session_registry_free(reg);
}

/* --- pacing: a connection with no room falls behind, then catches up ------ */

TEST(a_full_connection_falls_behind_and_catches_up_in_order)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false};
  SessionAttachment *a = session_attach(s, sink_push, &c1, false, 0);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  c1.full = true;
  /* Refused: numbered and kept, owed to it. */
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  /* Nobody has room: waits unnumbered, as with nobody attached. */
  session_push(s, note(kNotifExit, "mon_a", kModeIdle));
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a");
  CHECK_INT(session_queued(s), 1);
  CHECK_INT(session_next_seq(s), 3);
  /* Still full: a resume takes nothing and loses nothing. */
  session_resume(a);
  CHECK_INT(sink.n, 1);
  c1.full = false;
  session_resume(a);
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a,1:2:output:mon_a,1:3:exit:mon_a");
  CHECK_INT(session_queued(s), 0);
  /* Caught up: pushes go straight to it again. */
  session_push(s, note(kNotifOutput, "mon_b", kModeIdle));
  CHECK_STR(sink_str(&sink, 3), "1:4:output:mon_b");
  CHECK_INT(session_registry_lost_behind(reg), 0);
  session_registry_free(reg);
}

TEST(a_slow_connection_does_not_hold_back_a_fast_one)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, true};
  session_attach(s, sink_push, &c1, false, 0);
  SessionAttachment *b = session_attach(s, sink_push, &c2, false, 0);
  for (int i = 0; i < 3; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a,1:2:output:mon_a,1:3:output:mon_a");
  c2.full = false;
  session_resume(b);
  CHECK_STR(sink_str(&sink, 3), "2:1:output:mon_a,2:2:output:mon_a,2:3:output:mon_a");
  session_registry_free(reg);
}

TEST(one_that_falls_more_than_queue_max_behind_is_told_what_it_lost)
{
  SessionRegistry *reg = registry(NULL, 4, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, true};
  session_attach(s, sink_push, &c1, false, 0);
  SessionAttachment *b = session_attach(s, sink_push, &c2, false, 0);
  for (int i = 0; i < 6; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  size_t before = sink.n;
  c2.full = false;
  session_resume(b);
  /* 1 and 2 left the kept ring before it could take them. */
  CHECK_STR(sink_str(&sink, before), "2:2:dropped:,2:3:output:mon_a,2:4:output:mon_a,"
                                     "2:5:output:mon_a,2:6:output:mon_a");
  const Rec *gap = &sink.recs[before];
  CHECK_INT(gap->from_seq, 1);
  CHECK_INT(gap->to_seq, 2);
  CHECK_INT(gap->dropped_count, 2);
  CHECK_CONTAINS(gap->reason, "fell more than the last 4 behind");
  CHECK_INT(session_registry_lost_behind(reg), 2);
  session_registry_free(reg);
}

TEST(a_replay_goes_as_far_as_there_is_room_then_on_resume)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, true};
  SessionAttachment *a = session_attach(s, sink_push, &c1, false, 0);
  for (int i = 0; i < 3; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_detach(a);
  session_push(s, note(kNotifExit, "mon_a", kModeIdle)); /* waits: nobody there */
  size_t before = sink.n;
  SessionAttachment *b = session_attach(s, sink_push, &c2, true, 0);
  CHECK_INT(sink.n, before);
  CHECK_INT(session_queued(s), 1);
  c2.full = false;
  session_resume(b);
  /* The replay, then what waited, in order, each once. */
  CHECK_STR(sink_str(&sink, before),
            "2:1:output:mon_a,2:2:output:mon_a,2:3:output:mon_a,2:4:exit:mon_a");
  CHECK_INT(session_registry_lost_behind(reg), 0);
  session_registry_free(reg);
}

TEST(busy_catch_up_releases_only_live_safe_ones)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false};
  SessionAttachment *a = session_attach(s, sink_push, &c1, false, 0);
  session_set_busy(s, true);
  c1.full = true;
  session_push(s, note(kNotifOutput, "mon_a", kModeLiveSafe)); /* refused: owed */
  session_push(s, note(kNotifOutput, "mon_b", kModeIdle));     /* waits for idle */
  session_push(s, note(kNotifOutput, "mon_a", kModeLiveSafe)); /* waits for room */
  CHECK_INT(sink.n, 0);
  c1.full = false;
  session_resume(a);
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a,1:2:output:mon_a");
  CHECK_INT(session_queued(s), 1);
  CHECK_INT(session_set_busy(s, false), 1);
  CHECK_STR(sink_str(&sink, 2), "1:3:output:mon_b");
  session_registry_free(reg);
}

/* --- names, destroy, each ----------------------------------------------- */

TEST(names_are_unique_and_anonymous_names_distinct)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *a = session_create(reg, "work", false);
  CHECK(a != NULL);
  CHECK(session_create(reg, "work", true) == NULL);
  CHECK(session_find(reg, "work") == a);
  CHECK(session_find(reg, "nope") == NULL);
  CHECK(!session_anonymous(a));
  /* A named session that took "anon-2" is skipped, not duplicated. */
  Session *taken = session_create(reg, "anon-2", false);
  Session *x = session_create(reg, NULL, false);
  Session *y = session_create(reg, NULL, false);
  CHECK(taken != NULL && x != NULL && y != NULL);
  CHECK_STR(session_name(x), "anon-1");
  CHECK_STR(session_name(y), "anon-3");
  CHECK(session_anonymous(x));
  CHECK(session_find(reg, "anon-1") == x);
  /* Numbers are never reused, even once their session is gone. */
  session_destroy(x);
  CHECK(session_find(reg, "anon-1") == NULL);
  Session *z = session_create(reg, NULL, false);
  CHECK_STR(session_name(z), "anon-4");
  /* A destroyed name is free again. */
  session_destroy(a);
  CHECK(session_create(reg, "work", false) != NULL);
  session_registry_free(reg);
}

TEST(user_pointer_and_notification_session_name)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, NULL, false);
  int marker;
  CHECK(session_user(s) == NULL);
  session_set_user(s, &marker);
  CHECK(session_user(s) == &marker);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  Notification *n = note(kNotifOutput, "mon_a", kModeIdle);
  n->session = xstrdup("stale");
  session_push(s, n);
  CHECK_STR(sink.recs[0].session, "anon-1");
  session_registry_free(reg);
}

TEST(destroy_frees_waiting_and_kept)
{
  SessionRegistry *reg = registry(NULL, 4, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  for (int i = 0; i < 6; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_set_busy(s, true);
  for (int i = 0; i < 6; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifExit, "mon_a", kModeIdle));
  CHECK_INT(session_queued(s), 4);
  session_destroy(s);
  CHECK(session_find(reg, "a") == NULL);
  session_registry_free(reg);
  /* AddressSanitizer's leak check says whether everything went. */
}

/* Detaches the other attachment from inside a push callback. */
typedef struct {
  Sink *sink;
  int id;
  SessionAttachment *other;
  Session *destroy;
} EvilCtx;

static bool
evil_push(void *ctx, Session *s, const Notification *n)
{
  EvilCtx *e = ctx;
  SinkCtx c = {e->sink, e->id, false};
  sink_push(&c, s, n);
  if (e->other) {
    session_detach(e->other);
    e->other = NULL;
  }
  if (e->destroy) {
    Session *d = e->destroy;
    e->destroy = NULL;
    session_destroy(d);
  }
  return true;
}

TEST(push_callback_may_detach_and_destroy)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  EvilCtx e = {&sink, 1, NULL, NULL};
  SinkCtx c2 = {&sink, 2, false};
  session_attach(s, evil_push, &e, false, 0);
  SessionAttachment *b = session_attach(s, sink_push, &c2, false, 0);
  e.other = b;
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  /* The second attachment was detached before its turn. */
  CHECK_STR(sink_str(&sink, 0), "1:1:output:mon_a");
  CHECK_INT(session_attached(s), 1);
  /* Later pushes reach the one left. */
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_STR(sink_str(&sink, 1), "1:2:output:mon_a");
  session_registry_free(reg);
}

TEST(push_callback_may_destroy_its_session_mid_flush)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  EvilCtx e = {&sink, 1, NULL, NULL};
  session_attach(s, evil_push, &e, false, 0);
  session_set_busy(s, true);
  for (int i = 0; i < 3; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  e.destroy = s;
  /* The first release destroys the session; the rest are freed, not pushed. */
  CHECK_INT(session_set_busy(s, false), 1);
  CHECK_INT(sink.n, 1);
  CHECK(session_find(reg, "a") == NULL);
  /* Destroyed during its own attach: the attach answers NULL. */
  Session *t = session_create(reg, "b", false);
  session_push(t, note(kNotifOutput, "mon_a", kModeIdle));
  EvilCtx e2 = {&sink, 2, NULL, t};
  CHECK(session_attach(t, evil_push, &e2, false, 0) == NULL);
  CHECK(session_find(reg, "b") == NULL);
  session_registry_free(reg);
}

typedef struct {
  char names[8][32];
  size_t n;
  Session *destroy_next; /* destroyed when the first session is visited */
} Visited;

static void
visit_destroy(void *ctx, Session *s)
{
  Visited *v = ctx;
  if (v->n < 8)
    snprintf(v->names[v->n++], sizeof v->names[0], "%s", session_name(s));
  if (v->destroy_next) {
    session_destroy(v->destroy_next);
    v->destroy_next = NULL;
  }
  session_destroy(s);
}

TEST(session_each_visitor_may_destroy_any_session)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *a = session_create(reg, "a", false);
  Session *b = session_create(reg, "b", false);
  session_create(reg, "c", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(a, sink_push, &c, false, 0);
  session_push(b, note(kNotifOutput, "mon_a", kModeIdle));
  Visited v = {.destroy_next = b};
  session_each(reg, visit_destroy, &v);
  CHECK_INT(v.n, 2);
  CHECK_STR(v.names[0], "a");
  CHECK_STR(v.names[1], "c");
  CHECK(session_find(reg, "a") == NULL);
  CHECK(session_find(reg, "c") == NULL);
  Visited none = {0};
  session_each(reg, visit_destroy, &none);
  CHECK_INT(none.n, 0);
  session_registry_free(reg);
}

/* --- linger ------------------------------------------------------------- */

typedef struct {
  int expired;
  char last[32];
  SessionRegistry *reg;
  bool found_during; /* the session was still findable inside on_expire */
} Expiry;

static void
on_expire(void *data, Session *s)
{
  Expiry *e = data;
  e->expired++;
  snprintf(e->last, sizeof e->last, "%s", session_name(s));
  e->found_during = session_find(e->reg, session_name(s)) == s;
}

static bool
expired_once(void *ctx)
{
  return ((Expiry *)ctx)->expired >= 1;
}

TEST(named_session_lingers_out_after_last_detach)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  Expiry e = {0};
  SessionHooks hooks = {.on_expire = on_expire};
  SessionRegistry *reg = registry(&loop, 16, 50, &hooks, &e);
  e.reg = reg;
  Session *s = session_create(reg, "work", false);
  Sink sink = {0};
  SinkCtx c1 = {&sink, 1, false}, c2 = {&sink, 2, false};
  SessionAttachment *a = session_attach(s, sink_push, &c1, false, 0);
  SessionAttachment *b = session_attach(s, sink_push, &c2, false, 0);
  session_detach(a);
  uint64_t t0 = uv_now(&loop);
  session_detach(b);
  /* Notifications keep being held while it lingers. */
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_INT(session_queued(s), 1);
  if (RUN_UNTIL(&loop, expired_once, &e, 5000, "the session to expire")) {
    CHECK_INT(e.expired, 1);
    CHECK_STR(e.last, "work");
    CHECK(e.found_during);
    CHECK(session_find(reg, "work") == NULL);
    uv_update_time(&loop);
    CHECK(uv_now(&loop) - t0 >= 50);
  }
  session_registry_free(reg);
  test_loop_close(&loop);
  CHECK_INT(e.expired, 1);
}

TEST(linger_zero_expires_on_the_next_iteration)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  Expiry e = {0};
  SessionHooks hooks = {.on_expire = on_expire};
  SessionRegistry *reg = registry(&loop, 16, 0, &hooks, &e);
  e.reg = reg;
  Session *s = session_create(reg, "work", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_detach(session_attach(s, sink_push, &c, false, 0));
  /* Not inside detach: the caller still holds a live session. */
  CHECK_INT(e.expired, 0);
  CHECK(session_find(reg, "work") == s);
  RUN_UNTIL(&loop, expired_once, &e, 5000, "the session to expire");
  CHECK(session_find(reg, "work") == NULL);
  session_registry_free(reg);
  test_loop_close(&loop);
}

/* --- taps: a reader that is not a connection (docs/fleet.md) -------------- */

typedef struct {
  int created;
  int destroyed;
  char last_created[32];
  char last_destroyed[32];
} Watch;

static void
watch_create(void *data, Session *s)
{
  Watch *w = data;
  w->created++;
  snprintf(w->last_created, sizeof w->last_created, "%s", session_name(s));
}

static void
watch_destroy(void *data, Session *s)
{
  Watch *w = data;
  w->destroyed++;
  snprintf(w->last_destroyed, sizeof w->last_destroyed, "%s", session_name(s));
}

TEST(a_tap_takes_notifications_while_no_connection_is_attached)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx tap = {&sink, 9, false};
  session_attach_tap(s, sink_push, &tap, false, 0);
  /* No connection: with the tap they are numbered and pushed to it. */
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifExit, "mon_a", kModeIdle));
  CHECK_STR(sink_str(&sink, 0), "9:1:output:mon_a,9:2:exit:mon_a");
  CHECK_INT(session_attached(s), 0);
  CHECK_INT(session_queued(s), 0);
  session_registry_free(reg);
}

TEST(a_tap_falls_behind_and_catches_up_like_a_connection)
{
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx tap = {&sink, 9, true};
  SessionAttachment *t = session_attach_tap(s, sink_push, &tap, false, 0);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_INT(sink.n, 0);
  tap.full = false;
  session_resume(t);
  CHECK_STR(sink_str(&sink, 0), "9:1:output:mon_a,9:2:output:mon_a");
  /* A second tap replays from a cursor, as a re-attach does. */
  SinkCtx tap2 = {&sink, 8, false};
  session_attach_tap(s, sink_push, &tap2, true, 1);
  CHECK_STR(sink_str(&sink, 2), "8:2:output:mon_a");
  session_registry_free(reg);
}

TEST(a_tap_keeps_no_session_from_lingering_out_nor_busy_state_from_holding)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  Expiry e = {0};
  SessionHooks hooks = {.on_expire = on_expire};
  SessionRegistry *reg = registry(&loop, 16, 20, &hooks, &e);
  e.reg = reg;
  Session *s = session_create(reg, "work", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false}, tap = {&sink, 9, false};
  SessionAttachment *a = session_attach(s, sink_push, &c, false, 0);
  session_set_busy(s, true);
  /* A tap attached while busy leaves the state alone (a connection's
   * first attach would reset it). */
  SessionAttachment *t = session_attach_tap(s, sink_push, &tap, false, 0);
  CHECK(session_busy(s));
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_INT(session_queued(s), 1);
  session_detach(a);
  CHECK_INT(session_attached(s), 0);
  /* The last connection left: it lingers out although the tap is there. */
  if (RUN_UNTIL(&loop, expired_once, &e, 5000, "the session to expire with a tap attached"))
    CHECK(session_find(reg, "work") == NULL);
  (void)t;
  session_registry_free(reg);
  test_loop_close(&loop);
}

TEST(a_taps_detach_starts_no_linger)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  Expiry e = {0};
  SessionHooks hooks = {.on_expire = on_expire};
  SessionRegistry *reg = registry(&loop, 16, 0, &hooks, &e);
  e.reg = reg;
  Session *s = session_create(reg, "work", true);
  Sink sink = {0};
  SinkCtx tap = {&sink, 9, false};
  Session *u = session_create(reg, "other", false);
  SessionAttachment *c = session_attach(u, sink_push, &tap, false, 0);
  session_detach(session_attach_tap(s, sink_push, &tap, false, 0));
  /* "other" (its connection gone) is the sentinel: once it has expired,
   * "work" would have too, had the tap's detach started its linger. */
  session_detach(c);
  RUN_UNTIL(&loop, expired_once, &e, 5000, "the sentinel to expire");
  CHECK_STR(e.last, "other");
  CHECK(session_find(reg, "work") == s);
  session_registry_free(reg);
  test_loop_close(&loop);
}

TEST(the_registry_tells_of_every_session_made_and_destroyed)
{
  Watch w = {0};
  SessionHooks hooks = {.on_create = watch_create, .on_destroy = watch_destroy};
  SessionRegistry *reg = registry(NULL, 16, 0, &hooks, &w);
  Session *s = session_create(reg, "a", false);
  CHECK_INT(w.created, 1);
  CHECK_STR(w.last_created, "a");
  session_create(reg, NULL, false);
  CHECK_INT(w.created, 2);
  CHECK(session_create(reg, "a", false) == NULL);
  CHECK_INT(w.created, 2);
  session_destroy(s);
  CHECK_INT(w.destroyed, 1);
  CHECK_STR(w.last_destroyed, "a");
  /* Freeing the registry tells nobody: whoever watched may be gone. */
  session_registry_free(reg);
  CHECK_INT(w.destroyed, 1);
}

/* Set when the sentinel session (unpinned, named) expires: by then every
 * other session's linger, had it one, would have run out too. */
static bool
sentinel_expired(void *ctx)
{
  Expiry *e = ctx;
  return e->expired >= 1 && strcmp(e->last, "sentinel") == 0;
}

TEST(reattach_cancels_expiry_and_pinned_or_anonymous_never_expire)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  Expiry e = {0};
  SessionHooks hooks = {.on_expire = on_expire};
  SessionRegistry *reg = registry(&loop, 16, 30, &hooks, &e);
  e.reg = reg;
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  Session *back = session_create(reg, "back", false);
  Session *pinned = session_create(reg, "pinned", true);
  Session *anon = session_create(reg, NULL, false);
  session_detach(session_attach(back, sink_push, &c, false, 0));
  session_detach(session_attach(pinned, sink_push, &c, false, 0));
  session_detach(session_attach(anon, sink_push, &c, false, 0));
  /* Back before the expiry: the countdown is cancelled. */
  SessionAttachment *again = session_attach(back, sink_push, &c, false, 0);
  /* The sentinel's linger starts last, so it runs out after all the others. */
  Session *sentinel = session_create(reg, "sentinel", false);
  session_detach(session_attach(sentinel, sink_push, &c, false, 0));
  if (RUN_UNTIL(&loop, sentinel_expired, &e, 5000, "the sentinel to expire")) {
    CHECK_INT(e.expired, 1);
    CHECK(session_find(reg, "back") == back);
    CHECK(session_find(reg, "pinned") == pinned);
    CHECK(session_find(reg, "anon-1") == anon);
  }
  /* Detached again, back lingers out after all. */
  session_detach(again);
  e.expired = 0;
  if (RUN_UNTIL(&loop, expired_once, &e, 5000, "back to expire"))
    CHECK_STR(e.last, "back");
  session_registry_free(reg);
  test_loop_close(&loop);
}

/* Destroys the session itself inside on_expire, which the contract allows
 * by way of the in-use guard. */
static void
on_expire_destroy(void *data, Session *s)
{
  Expiry *e = data;
  e->expired++;
  snprintf(e->last, sizeof e->last, "%s", session_name(s));
  session_destroy(s);
}

TEST(on_expire_may_destroy_the_session_itself)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  Expiry e = {0};
  SessionHooks hooks = {.on_expire = on_expire_destroy};
  SessionRegistry *reg = registry(&loop, 16, 0, &hooks, &e);
  e.reg = reg;
  Session *s = session_create(reg, "work", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_detach(session_attach(s, sink_push, &c, false, 0));
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  RUN_UNTIL(&loop, expired_once, &e, 5000, "the session to expire");
  CHECK(session_find(reg, "work") == NULL);
  session_registry_free(reg);
  test_loop_close(&loop);
}

TEST(registry_free_with_active_timers_closes_cleanly)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  Expiry e = {0};
  SessionHooks hooks = {.on_expire = on_expire};
  SessionRegistry *reg = registry(&loop, 16, 60000, &hooks, &e);
  e.reg = reg;
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof name, "s%d", i);
    Session *s = session_create(reg, name, false);
    session_detach(session_attach(s, sink_push, &c, false, 0));
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  }
  /* One whose timer exists but was stopped by a re-attach. */
  Session *t = session_create(reg, "t", false);
  session_detach(session_attach(t, sink_push, &c, false, 0));
  session_attach(t, sink_push, &c, false, 0);
  session_registry_free(reg);
  test_loop_close(&loop);
  CHECK_INT(e.expired, 0);
}

TEST(null_loop_never_lingers)
{
  Expiry e = {0};
  SessionHooks hooks = {.on_expire = on_expire};
  SessionRegistry *reg = registry(NULL, 16, 0, &hooks, &e);
  Session *s = session_create(reg, "work", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_detach(session_attach(s, sink_push, &c, false, 0));
  CHECK(session_find(reg, "work") == s);
  CHECK_INT(e.expired, 0);
  session_registry_free(reg);
}

TEST(set_limits_applies_to_new_sessions)
{
  SessionRegistry *reg = registry(NULL, 2, 0, NULL, NULL);
  Session *old = session_create(reg, "old", false);
  SessionLimits bigger = {.queue_max = 5, .linger_ms = 0};
  session_registry_set_limits(reg, &bigger);
  Session *young = session_create(reg, "new", false);
  for (int i = 0; i < 5; i++) {
    session_push(old, note(kNotifOutput, "mon_a", kModeIdle));
    session_push(young, note(kNotifOutput, "mon_a", kModeIdle));
  }
  CHECK_INT(session_queued(old), 2);
  CHECK_INT(session_dropped_total(old), 3);
  CHECK_INT(session_queued(young), 5);
  CHECK_INT(session_dropped_total(young), 0);
  session_registry_free(reg);
}

/* --- model cursors (session_cursor.h) ------------------------------------ */

/* A read's seqs, comma-separated, then "|cursor=C last=L dropped=D(F..T)". */
static const char *
read_str(const SessionRead *r)
{
  static char buf[4096];
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < r->count && used < sizeof buf; i++)
    used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%llu", i ? "," : "",
                             (unsigned long long)r->items[i]->seq);
  if (used < sizeof buf)
    snprintf(buf + used, sizeof buf - used, "|cursor=%llu last=%llu dropped=%llu(%llu..%llu)",
             (unsigned long long)r->cursor, (unsigned long long)r->last_seq,
             (unsigned long long)r->dropped, (unsigned long long)r->dropped_from,
             (unsigned long long)r->dropped_to);
  return buf;
}

/* Takes for cursor name with limit and returns read_str of it. */
static const char *
take_str(Session *s, const char *name, size_t limit)
{
  SessionRead r;
  static VigilError err;
  err.set = false;
  if (session_cursor_take(s, name, limit, &r, &err) != 0)
    return err.msg;
  const char *out = read_str(&r);
  session_read_free(&r);
  return out;
}

/* A session "a" in a registry, attached to a sink, with n notifications. */
typedef struct {
  SessionRegistry *reg;
  Sink sink;
  SinkCtx c;
} Pushed;

/* Makes session "a" in reg (p then owns reg) with one attachment and n
 * notifications pushed, seqs 1..n. */
static Session *
pushed(Pushed *p, SessionRegistry *reg, int n)
{
  p->reg = reg;
  p->sink.n = 0;
  p->c = (SinkCtx){&p->sink, 1, false};
  Session *s = session_create(reg, "a", false);
  session_attach(s, sink_push, &p->c, false, 0);
  for (int i = 0; i < n; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  return s;
}

TEST(cursor_names)
{
  CHECK(session_cursor_name_ok("model"));
  CHECK(session_cursor_name_ok("claude:hook-1.x_y"));
  CHECK(session_cursor_name_ok("anon-1")); /* only session names keep that prefix */
  CHECK(!session_cursor_name_ok(""));
  CHECK(!session_cursor_name_ok("a b"));
  CHECK(!session_cursor_name_ok("a/b"));
  char longest[SESSION_CURSOR_NAME_MAX + 2];
  memset(longest, 'x', sizeof longest);
  longest[SESSION_CURSOR_NAME_MAX] = '\0';
  CHECK(session_cursor_name_ok(longest));
  longest[SESSION_CURSOR_NAME_MAX] = 'x';
  longest[SESSION_CURSOR_NAME_MAX + 1] = '\0';
  CHECK(!session_cursor_name_ok(longest));
}

TEST(a_take_gives_what_is_above_the_cursor_once_and_moves_it)
{
  static Pushed p;
  Session *s = pushed(&p, registry(NULL, 16, 0, NULL, NULL), 3);
  uint64_t seq = 99;
  CHECK(!session_cursor_get(s, "model", &seq));
  CHECK_INT(seq, 0);
  CHECK_INT(session_cursor_count(s), 0); /* a get makes nothing */
  CHECK_STR(take_str(s, "model", 0), "1,2,3|cursor=3 last=3 dropped=0(0..0)");
  CHECK(session_cursor_get(s, "model", &seq));
  CHECK_INT(seq, 3);
  /* Taken once: the next take has nothing until something new comes. */
  CHECK_STR(take_str(s, "model", 0), "|cursor=3 last=3 dropped=0(0..0)");
  session_push(s, note(kNotifExit, "mon_a", kModeIdle));
  CHECK_STR(take_str(s, "model", 0), "4|cursor=4 last=4 dropped=0(0..0)");
  /* Another cursor is its own: it has everything still. */
  CHECK_STR(take_str(s, "hook", 0), "1,2,3,4|cursor=4 last=4 dropped=0(0..0)");
  CHECK_INT(session_cursor_count(s), 2);
  CHECK_STR(session_cursor_at(s, 1, &seq), "hook");
  /* The notifications are the pushed ones, text and all. */
  SessionRead r;
  VigilError err = VIGIL_ERROR_INIT;
  session_read_since(s, 3, 0, &r);
  CHECK_INT(r.count, 1);
  CHECK_INT(r.items[0]->type, kNotifExit);
  CHECK_STR(r.items[0]->text, "text");
  CHECK_STR(r.items[0]->session, "a");
  session_read_free(&r);
  CHECK_INT(session_cursor_take(s, "model", 0, &r, &err), 0);
  session_read_free(&r);
  session_registry_free(p.reg);
}

TEST(a_take_gives_at_most_limit_oldest_first)
{
  static Pushed p;
  Session *s = pushed(&p, registry(NULL, 16, 0, NULL, NULL), 5);
  CHECK_STR(take_str(s, "m", 2), "1,2|cursor=2 last=5 dropped=0(0..0)");
  CHECK_STR(take_str(s, "m", 2), "3,4|cursor=4 last=5 dropped=0(0..0)");
  CHECK_STR(take_str(s, "m", 2), "5|cursor=5 last=5 dropped=0(0..0)");
  session_registry_free(p.reg);
}

TEST(what_waits_for_idle_or_a_connection_is_not_taken_until_it_goes)
{
  static Pushed p;
  Session *s = pushed(&p, registry(NULL, 16, 0, NULL, NULL), 1);
  session_set_busy(s, true);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_push(s, note(kNotifOutput, "mon_b", kModeLiveSafe));
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  /* The live_safe one was numbered 2; the idle ones wait, with no seq. */
  CHECK_STR(take_str(s, "m", 0), "1,2|cursor=2 last=2 dropped=0(0..0)");
  CHECK_INT(session_queued(s), 2);
  CHECK_INT(session_set_busy(s, false), 2);
  CHECK_STR(take_str(s, "m", 0), "3,4|cursor=4 last=4 dropped=0(0..0)");
  /* Nobody attached: they wait unnumbered too. */
  Session *t = session_create(p.reg, "alone", false);
  session_push(t, note(kNotifOutput, "mon_c", kModeIdle));
  CHECK_STR(take_str(t, "m", 0), "|cursor=0 last=0 dropped=0(0..0)");
  session_registry_free(p.reg);
}

TEST(seqs_the_session_no_longer_keeps_are_said_and_passed)
{
  static Pushed p;
  Session *s = pushed(&p, registry(NULL, 3, 0, NULL, NULL), 5);
  /* 1 and 2 were evicted: said, and the cursor moves past them too. */
  CHECK_STR(take_str(s, "m", 1), "3|cursor=3 last=5 dropped=2(1..2)");
  CHECK_INT(session_kept_from(s), 3);
  for (int i = 0; i < 4; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  /* Kept now: 7..9; 4..6 went before this cursor took them. */
  CHECK_STR(take_str(s, "m", 0), "7,8,9|cursor=9 last=9 dropped=3(4..6)");
  CHECK_STR(take_str(s, "m", 0), "|cursor=9 last=9 dropped=0(0..0)");
  /* A read since an older seq says the same without moving anything. */
  SessionRead r;
  session_read_since(s, 2, 2, &r);
  CHECK_STR(read_str(&r), "7,8|cursor=0 last=9 dropped=4(3..6)");
  session_read_free(&r);
  uint64_t seq = 0;
  CHECK(session_cursor_get(s, "m", &seq));
  CHECK_INT(seq, 9);
  session_registry_free(p.reg);
}

TEST(seqs_an_earlier_engine_gave_are_not_counted_as_dropped)
{
  /* A session whose numbering began above a host's cursor (session.h):
   * the seqs below it were never this session's to keep or drop; the
   * `dropped` notification it numbered first says what is lost. */
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "gw", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, true, 150);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_STR(take_str(s, "m", 0), "151,152|cursor=152 last=152 dropped=0(0..0)");
  session_registry_free(reg);
}

TEST(advance_moves_forward_only_and_never_past_the_last_seq)
{
  static Pushed p;
  Session *s = pushed(&p, registry(NULL, 16, 0, NULL, NULL), 5);
  uint64_t seq = 0;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(session_cursor_advance(s, "m", 3, &seq, &err), 0);
  CHECK_INT(seq, 3);
  CHECK_INT(session_cursor_advance(s, "m", 1, &seq, &err), 0);
  CHECK_INT(seq, 3); /* never back */
  CHECK_INT(session_cursor_advance(s, "m", 6, &seq, &err), -1);
  CHECK_INT(err.code, kErrInvalidParams);
  CHECK_STR(err.msg, "invalid_params: to must be 0..5 (session \"a\"'s last seq), got 6");
  CHECK(session_cursor_get(s, "m", &seq));
  CHECK_INT(seq, 3);
  CHECK_STR(take_str(s, "m", 0), "4,5|cursor=5 last=5 dropped=0(0..0)");
  /* An advance of a cursor that is not there makes it. */
  CHECK_INT(session_cursor_advance(s, "new", 2, &seq, &err), 0);
  CHECK_STR(take_str(s, "new", 0), "3,4,5|cursor=5 last=5 dropped=0(0..0)");
  session_registry_free(p.reg);
}

TEST(a_session_has_at_most_max_cursors)
{
  SessionLimits limits = {.queue_max = 16, .linger_ms = 0, .max_cursors = 2};
  static Pushed p;
  Session *s = pushed(&p, session_registry_new(NULL, &limits, NULL, NULL), 2);
  CHECK_STR(take_str(s, "one", 1), "1|cursor=1 last=2 dropped=0(0..0)");
  uint64_t seq = 0;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(session_cursor_advance(s, "two", 1, &seq, &err), 0);
  CHECK_STR(take_str(s, "three", 0),
            "limit_exceeded: session.max_cursors is 2 and session \"a\" has 2 cursors (one, two); \"three\" "
            "would be one more");
  CHECK_INT(session_cursor_advance(s, "three", 1, &seq, &err), -1);
  CHECK_INT(err.code, kErrLimitExceeded);
  CHECK_INT(session_cursor_count(s), 2);
  /* The ones it has go on. */
  CHECK_STR(take_str(s, "one", 0), "2|cursor=2 last=2 dropped=0(0..0)");
  session_registry_free(p.reg);
}

/* What the cursor waiters of a test were told, in order. */
typedef struct {
  char said[8][128];
  int n;
} WaitLog;

typedef struct {
  WaitLog *log;
  const char *who;
} WaitCtx;

static void
wait_ready(void *ctx, Session *s, const SessionRead *r)
{
  WaitCtx *w = ctx;
  (void)s;
  if (w->log->n < 8)
    snprintf(w->log->said[w->log->n++], sizeof w->log->said[0], "%s:%s", w->who,
             r ? read_str(r) : "gone");
}

TEST(a_waiter_is_woken_by_the_push_and_takes_it)
{
  static Pushed p;
  Session *s = pushed(&p, registry(NULL, 16, 0, NULL, NULL), 1);
  CHECK_STR(take_str(s, "m", 0), "1|cursor=1 last=1 dropped=0(0..0)");
  WaitLog log = {0};
  WaitCtx w = {&log, "w"};
  session_cursor_wait(s, "m", 0, wait_ready, &w);
  CHECK_INT(log.n, 0);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_INT(log.n, 1);
  CHECK_STR(log.said[0], "w:2|cursor=2 last=2 dropped=0(0..0)");
  /* Taken: the cursor moved with it. */
  CHECK_STR(take_str(s, "m", 0), "|cursor=2 last=2 dropped=0(0..0)");
  /* Several released at once (going idle) are taken by one wake. */
  session_set_busy(s, true);
  for (int i = 0; i < 3; i++)
    session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  session_cursor_wait(s, "m", 0, wait_ready, &w);
  session_set_busy(s, false);
  CHECK_INT(log.n, 2);
  CHECK_STR(log.said[1], "w:3,4,5|cursor=5 last=5 dropped=0(0..0)");
  session_registry_free(p.reg);
}

TEST(two_waiters_on_one_cursor_never_get_the_same_seq)
{
  static Pushed p;
  Session *s = pushed(&p, registry(NULL, 16, 0, NULL, NULL), 0);
  CHECK_STR(take_str(s, "m", 0), "|cursor=0 last=0 dropped=0(0..0)");
  CHECK_STR(take_str(s, "other", 0), "|cursor=0 last=0 dropped=0(0..0)");
  WaitLog log = {0};
  WaitCtx w1 = {&log, "w1"}, w2 = {&log, "w2"}, w3 = {&log, "other"};
  session_cursor_wait(s, "m", 0, wait_ready, &w1);
  session_cursor_wait(s, "m", 0, wait_ready, &w2);
  session_cursor_wait(s, "other", 0, wait_ready, &w3);
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  /* The first waiter of "m" took seq 1; the second waits on. A waiter of
   * another cursor gets it too: its cursor is its own. */
  CHECK_INT(log.n, 2);
  CHECK_STR(log.said[0], "w1:1|cursor=1 last=1 dropped=0(0..0)");
  CHECK_STR(log.said[1], "other:1|cursor=1 last=1 dropped=0(0..0)");
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_INT(log.n, 3);
  CHECK_STR(log.said[2], "w2:2|cursor=2 last=2 dropped=0(0..0)");
  session_registry_free(p.reg);
}

TEST(a_waiter_dropped_or_timed_out_takes_nothing_and_destroy_tells_the_rest)
{
  static Pushed p;
  Session *s = pushed(&p, registry(NULL, 16, 0, NULL, NULL), 0);
  CHECK_STR(take_str(s, "m", 0), "|cursor=0 last=0 dropped=0(0..0)");
  WaitLog log = {0};
  WaitCtx w1 = {&log, "closed"}, w2 = {&log, "late"}, w3 = {&log, "left"};
  /* Its reader went (a closed connection): it takes nothing. */
  session_cursor_unwait(session_cursor_wait(s, "m", 0, wait_ready, &w1));
  session_push(s, note(kNotifOutput, "mon_a", kModeIdle));
  CHECK_INT(log.n, 0);
  uint64_t seq = 9;
  CHECK(session_cursor_get(s, "m", &seq));
  CHECK_INT(seq, 0);
  CHECK_STR(take_str(s, "m", 0), "1|cursor=1 last=1 dropped=0(0..0)");
  /* Its time ran out: told what there is, nothing. */
  session_cursor_wait_end(session_cursor_wait(s, "m", 0, wait_ready, &w2));
  CHECK_INT(log.n, 1);
  CHECK_STR(log.said[0], "late:|cursor=1 last=1 dropped=0(0..0)");
  /* Its session went: told so, with nothing taken. */
  session_cursor_wait(s, "m", 0, wait_ready, &w3);
  session_destroy(s);
  CHECK_INT(log.n, 2);
  CHECK_STR(log.said[1], "left:gone");
  session_registry_free(p.reg);
}

/* A fresh state directory with its sessions/ (statedir.h's layout), for
 * the journal. */
typedef struct {
  char path[64];
  int state_fd;
  int sessions_fd;
} TmpState;

static void
tmp_state(TmpState *t)
{
  snprintf(t->path, sizeof t->path, "/tmp/vigil-test-session-XXXXXX");
  CHECK(mkdtemp(t->path) != NULL);
  t->state_fd = open(t->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  CHECK(mkdirat(t->state_fd, "sessions", 0700) == 0);
  CHECK(mkdirat(t->state_fd, "aside", 0700) == 0);
  t->sessions_fd = openat(t->state_fd, "sessions", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void
tmp_state_free(TmpState *t)
{
  char cmd[128];
  close(t->sessions_fd);
  close(t->state_fd);
  snprintf(cmd, sizeof cmd, "rm -rf %s", t->path);
  CHECK(system(cmd) == 0);
}

/* Cursors in a journal written with appends (a large bound) or rewritten
 * at every change (a bound of 1 byte). */
static void
cursors_come_back_with_journal_bound(uint64_t journal_max_bytes)
{
  TmpState t;
  tmp_state(&t);
  SessionRegistry *before = registry(NULL, 16, 0, NULL, NULL);
  CHECK_INT(session_registry_restore(before, t.state_fd, t.sessions_fd, journal_max_bytes), 0);
  static Pushed p;
  Session *s = pushed(&p, before, 5);
  CHECK_STR(take_str(s, "model", 2), "1,2|cursor=2 last=5 dropped=0(0..0)");
  uint64_t seq = 0;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(session_cursor_advance(s, "hook", 4, &seq, &err), 0);
  /* An engine started on the directory while this one's files are there,
   * as after a SIGKILL (with descriptors of its own: a directory's read
   * offset is shared by its duplicates). */
  TmpState again = t;
  again.state_fd = open(t.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  again.sessions_fd = openat(again.state_fd, "sessions", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  SessionRegistry *after = registry(NULL, 16, 0, NULL, NULL);
  CHECK_INT(session_registry_restore(after, again.state_fd, again.sessions_fd, journal_max_bytes),
            1);
  Session *back = session_find(after, "a");
  CHECK(back != NULL);
  if (back != NULL) {
    CHECK(session_cursor_get(back, "model", &seq));
    CHECK_INT(seq, 2);
    CHECK(session_cursor_get(back, "hook", &seq));
    CHECK_INT(seq, 4);
    /* It goes on exactly: nothing at or below the cursor again, nothing
     * above it lost. */
    CHECK_STR(take_str(back, "model", 0), "3,4,5|cursor=5 last=5 dropped=0(0..0)");
    CHECK_STR(take_str(back, "hook", 0), "5|cursor=5 last=5 dropped=0(0..0)");
  }
  session_registry_free(after);
  session_registry_free(before);
  close(again.sessions_fd);
  close(again.state_fd);
  tmp_state_free(&t);
}

TEST(a_journal_rewritten_by_a_push_keeps_that_notification)
{
  /* A bound of 1 byte rewrites the journal at every record: the rewrite
   * of the record of a notification being pushed must hold it. */
  TmpState t;
  tmp_state(&t);
  SessionRegistry *before = registry(NULL, 16, 0, NULL, NULL);
  session_registry_restore(before, t.state_fd, t.sessions_fd, 1);
  static Pushed p;
  SinkCtx c2 = {&p.sink, 2, false};
  pushed(&p, before, 3);
  int state_fd = open(t.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int sessions_fd = openat(state_fd, "sessions", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  SessionRegistry *after = registry(NULL, 16, 0, NULL, NULL);
  CHECK_INT(session_registry_restore(after, state_fd, sessions_fd, 1), 1);
  Session *back = session_find(after, "a");
  size_t from = p.sink.n;
  if (back != NULL)
    session_attach(back, sink_push, &c2, true, 0);
  CHECK_STR(sink_str(&p.sink, from), "2:1:output:mon_a,2:2:output:mon_a,2:3:output:mon_a");
  session_registry_free(after);
  session_registry_free(before);
  close(sessions_fd);
  close(state_fd);
  tmp_state_free(&t);
}

TEST(cursors_survive_a_restore_from_the_journal)
{
  cursors_come_back_with_journal_bound(1 << 20);
  cursors_come_back_with_journal_bound(1);
}


/* --- preconditions ------------------------------------------------------ */

/* A notification pushed twice, so it already has a seq (and is held in a
 * queue): session_push takes only one that is in no queue yet. */
static void
session_push_twice(void *arg)
{
  (void)arg;
  SessionRegistry *reg = registry(NULL, 16, 0, NULL, NULL);
  Session *s = session_create(reg, "a", false);
  Sink sink = {0};
  SinkCtx c = {&sink, 1, false};
  session_attach(s, sink_push, &c, false, 0);
  Notification *n = note(kNotifOutput, "mon_a", kModeIdle);
  session_push(s, n);
  session_push(s, n);
}

TEST(a_broken_precondition_ends_the_process_by_its_assert)
{
  CHECK_ABORTS(session_push_twice, NULL);
}

int
main(void)
{
  RUN(seq_starts_at_one_and_counts_across_monitors);
  RUN(idle_held_while_busy_released_in_order);
  RUN(live_safe_goes_while_busy_and_seqs_stay_in_arrival_order);
  RUN(live_ending_pushes_its_own_held_output_first);
  RUN(live_ending_without_held_output_goes_alone);
  RUN(live_ending_after_drops_says_so_before_the_held_output);
  RUN(overflow_drops_oldest_outputs_and_says_so_once);
  RUN(overflow_keeps_the_newest_outputs);
  RUN(endings_are_never_dropped);
  RUN(detached_notifications_wait_and_attach_flushes_them);
  RUN(first_attach_resets_busy);
  RUN(resume_with_last_seq_replays_kept_then_waiting_once);
  RUN(resume_with_last_seq_zero_replays_all_kept);
  RUN(kept_ring_is_bounded_by_queue_max);
  RUN(two_attachments_both_receive_and_replay_goes_to_one);
  RUN(resume_older_than_kept_gets_the_lost_range_first);
  RUN(a_cursor_this_session_never_reached_continues_above_it);
  RUN(a_cursor_ahead_is_said_even_while_busy_and_seqs_stay_in_order);
  RUN(a_full_connection_falls_behind_and_catches_up_in_order);
  RUN(a_slow_connection_does_not_hold_back_a_fast_one);
  RUN(one_that_falls_more_than_queue_max_behind_is_told_what_it_lost);
  RUN(a_replay_goes_as_far_as_there_is_room_then_on_resume);
  RUN(busy_catch_up_releases_only_live_safe_ones);
  RUN(names_are_unique_and_anonymous_names_distinct);
  RUN(user_pointer_and_notification_session_name);
  RUN(destroy_frees_waiting_and_kept);
  RUN(push_callback_may_detach_and_destroy);
  RUN(push_callback_may_destroy_its_session_mid_flush);
  RUN(session_each_visitor_may_destroy_any_session);
  RUN(a_tap_takes_notifications_while_no_connection_is_attached);
  RUN(a_tap_falls_behind_and_catches_up_like_a_connection);
  RUN(a_tap_keeps_no_session_from_lingering_out_nor_busy_state_from_holding);
  RUN(a_taps_detach_starts_no_linger);
  RUN(the_registry_tells_of_every_session_made_and_destroyed);
  RUN(named_session_lingers_out_after_last_detach);
  RUN(linger_zero_expires_on_the_next_iteration);
  RUN(reattach_cancels_expiry_and_pinned_or_anonymous_never_expire);
  RUN(on_expire_may_destroy_the_session_itself);
  RUN(registry_free_with_active_timers_closes_cleanly);
  RUN(null_loop_never_lingers);
  RUN(set_limits_applies_to_new_sessions);
  RUN(cursor_names);
  RUN(a_take_gives_what_is_above_the_cursor_once_and_moves_it);
  RUN(a_take_gives_at_most_limit_oldest_first);
  RUN(what_waits_for_idle_or_a_connection_is_not_taken_until_it_goes);
  RUN(seqs_the_session_no_longer_keeps_are_said_and_passed);
  RUN(seqs_an_earlier_engine_gave_are_not_counted_as_dropped);
  RUN(advance_moves_forward_only_and_never_past_the_last_seq);
  RUN(a_session_has_at_most_max_cursors);
  RUN(a_waiter_is_woken_by_the_push_and_takes_it);
  RUN(two_waiters_on_one_cursor_never_get_the_same_seq);
  RUN(a_waiter_dropped_or_timed_out_takes_nothing_and_destroy_tells_the_rest);
  RUN(a_journal_rewritten_by_a_push_keeps_that_notification);
  RUN(cursors_survive_a_restore_from_the_journal);
  RUN(a_broken_precondition_ends_the_process_by_its_assert);
  return check_summary();
}
