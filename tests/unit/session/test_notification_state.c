/*
 * Tests of a notification's checkpoint as a session's journal keeps it
 * (notification_state.h): its words come back as written, a record an
 * older engine wrote (the first eight words) is read with the rest as 0,
 * and any other count is refused, naming the field. A health incident
 * (kind health, its change as pattern_name) comes back as it went, and a
 * kind this engine does not know is refused.
 */
#include <msgpack.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "pipeline/incident.h"
#include "pipeline/notification.h"
#include "session/notification_state.h"

/* n packed and read back with its checkpoint array cut to words (0: as
 * packed). Returns the notification read (NULL: refused, err says why). */
static Notification *
round_trip(const Notification *n, uint32_t words, VigilError *err)
{
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  notification_state_pack(&pk, n);
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  CHECK(msgpack_unpack_next(&u, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS);
  msgpack_object_map *map = &u.data.via.map;
  for (uint32_t i = 0; words != 0 && i < map->size; i++) {
    msgpack_object_kv *kv = &map->ptr[i];
    if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == 10 &&
        memcmp(kv->key.via.str.ptr, "checkpoint", 10) == 0) {
      CHECK(kv->val.type == MSGPACK_OBJECT_ARRAY && kv->val.via.array.size >= words);
      kv->val.via.array.size = words;
    }
  }
  Notification *back = notification_state_unpack(&u.data, err);
  if (back == NULL && words == 0)
    fprintf(stderr, "  refused: %s\n", err->msg);
  msgpack_unpacked_destroy(&u);
  msgpack_sbuffer_destroy(&sb);
  return back;
}

static Notification *
with_checkpoint(void)
{
  Notification *n = notification_new(kNotifOutput, "mon_abc", "label", kModeIdle);
  n->seq = 7;
  n->text = strdup("its text, as rendered");
  n->has_checkpoint = true;
  for (int i = 0; i < NOTIFICATION_CHECKPOINT_WORDS; i++)
    n->checkpoint[i] = 100 + (uint64_t)i;
  return n;
}

TEST(every_word_of_a_checkpoint_comes_back)
{
  Notification *n = with_checkpoint();
  VigilError err = VIGIL_ERROR_INIT;
  Notification *back = round_trip(n, 0, &err);
  CHECK(back != NULL && back->has_checkpoint);
  for (int i = 0; back != NULL && i < NOTIFICATION_CHECKPOINT_WORDS; i++)
    CHECK_INT(back->checkpoint[i], 100 + i);
  notification_free(back);
  notification_free(n);
}

TEST(an_older_engines_checkpoint_reads_with_the_rest_as_none)
{
  Notification *n = with_checkpoint();
  VigilError err = VIGIL_ERROR_INIT;
  Notification *back = round_trip(n, NOTIFICATION_CHECKPOINT_WORDS_V1, &err);
  CHECK(back != NULL && back->has_checkpoint);
  for (int i = 0; back != NULL && i < NOTIFICATION_CHECKPOINT_WORDS; i++)
    CHECK_INT(back->checkpoint[i], i < NOTIFICATION_CHECKPOINT_WORDS_V1 ? 100 + i : 0);
  notification_free(back);
  notification_free(n);
}

TEST(a_checkpoint_of_another_length_is_refused_by_name)
{
  Notification *n = with_checkpoint();
  VigilError err = VIGIL_ERROR_INIT;
  CHECK(round_trip(n, 9, &err) == NULL);
  CHECK(strstr(err.msg, "checkpoint: neither nil nor 8 or 14 unsigned integers") != NULL);
  notification_free(n);
}

/* An output notification holding one health incident of kind. */
static Notification *
with_health_incident(int kind)
{
  Notification *n = with_checkpoint();
  notification_add_line(n, 41, 0, -1, false, "request 3", 9);
  NoteIncident inc = {.id = 4, .kind = kind, .fingerprint = 0x0fb34b47277273d4ULL,
                      .pattern = -1, .pattern_name = INCIDENT_HEALTH_UNHEALTHY,
                      .first_seq = 41, .last_seq = 41, .first_line = 0, .nlines = 1};
  notification_add_incident(n, &inc);
  return n;
}

TEST(a_health_incident_comes_back_as_it_went)
{
  Notification *n = with_health_incident(kIncidentHealth);
  VigilError err = VIGIL_ERROR_INIT;
  Notification *back = round_trip(n, 0, &err);
  CHECK(back != NULL && back->nincidents == 1);
  if (back != NULL && back->nincidents == 1) {
    CHECK_INT(back->incidents[0].kind, kIncidentHealth);
    CHECK_STR(back->incidents[0].pattern_name, "unhealthy");
    CHECK(back->incidents[0].pattern == -1 && back->incidents[0].nlines == 1);
  }
  notification_free(back);
  notification_free(n);
}

TEST(an_unknown_incident_kind_is_refused)
{
  Notification *n = with_health_incident(kIncidentKindCount);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK(round_trip(n, 0, &err) == NULL);
  CHECK(strstr(err.msg, "incidents[0]: malformed") != NULL);
  notification_free(n);
}

int
main(void)
{
  RUN(every_word_of_a_checkpoint_comes_back);
  RUN(an_older_engines_checkpoint_reads_with_the_rest_as_none);
  RUN(a_checkpoint_of_another_length_is_refused_by_name);
  RUN(a_health_incident_comes_back_as_it_went);
  RUN(an_unknown_incident_kind_is_refused);
  return check_summary();
}
