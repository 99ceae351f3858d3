/*
 * The reader's side of the fleet's wire (cli_fleetmsg.h, docs/fleet.md
 * section 1) and its exactly-once rule within one watch (cli_fleetonce.h,
 * section 3): a message passes only when its subject, headers and payload
 * agree, and what it was refused for is named, safe to print; a seq at or
 * below the last printed under the same epoch is a repeat, a new epoch
 * numbers anew.
 */
#include <msgpack.h>
#include <string.h>

#include "check.h"
#include "cli/cli_fleetmsg.h"
#include "cli/cli_fleetonce.h"

/* A packed notification map: session, seq, epoch, type, text (+ extra keys
 * given as a second seq, to make a map with a key twice). */
static void
pack_note(msgpack_sbuffer *sb, const char *session, uint64_t seq, const char *epoch,
          bool seq_twice)
{
  msgpack_packer pk;
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, seq_twice ? 6 : 5);
  const char *keys[] = {"session", "seq", "epoch", "type", "text"};
  for (int i = 0; i < 5; i++) {
    msgpack_pack_str_with_body(&pk, keys[i], strlen(keys[i]));
    if (i == 1)
      msgpack_pack_uint64(&pk, seq);
    else {
      const char *v = i == 0 ? session : i == 2 ? epoch : i == 3 ? "output" : "hello\n";
      msgpack_pack_str_with_body(&pk, v, strlen(v));
    }
  }
  if (seq_twice) {
    msgpack_pack_str_with_body(&pk, "seq", 3);
    msgpack_pack_uint64(&pk, seq + 1);
  }
}

#define EPOCH "3f9c2a61d07be485"

/* A message of session build.prod from engine hostb, seq 7, as an engine
 * publishes it, over payload sb. */
static FleetMsg
good_msg(const msgpack_sbuffer *sb)
{
  return (FleetMsg){
    .subject = "vigil.hostb.build%2Eprod.n",
    .msg_id = EPOCH ":build.prod:7",
    .engine = "hostb",
    .session = "build.prod",
    .seq = "7",
    .epoch = EPOCH,
    .payload = sb->data,
    .payload_len = sb->size,
  };
}

/* Checks m for session build.prod: "" when it passes, else why. The
 * returned text is static. */
static const char *
refusal(const FleetMsg *m)
{
  static char out[512];
  FleetNote note;
  StrBuf why = STRBUF_INIT;
  bool ok = cli_fleetmsg_check(m, "build.prod", &note, &why);
  snprintf(out, sizeof out, "%s", ok ? "" : strbuf_cstr(&why));
  if (ok) {
    CHECK(note.map != NULL);
    CHECK_STR(note.engine, "hostb");
    CHECK_STR(note.epoch, EPOCH);
    CHECK_INT(note.seq, 7);
    cli_fleetmsg_release(&note);
  } else {
    CHECK(why.len > 0);
    CHECK(note.map == NULL);
  }
  strbuf_free(&why);
  return out;
}

TEST(names_and_subjects)
{
  CHECK(cli_fleetmsg_engine_ok("host-b_1"));
  CHECK(!cli_fleetmsg_engine_ok("host.b"));
  CHECK(!cli_fleetmsg_engine_ok(""));
  CHECK(cli_fleetmsg_session_ok("build.prod:1-x_y"));
  CHECK(!cli_fleetmsg_session_ok("a b"));
  CHECK(!cli_fleetmsg_session_ok("a%2Eb"));
  char long_name[66];
  memset(long_name, 'a', 65);
  long_name[65] = '\0';
  CHECK(!cli_fleetmsg_session_ok(long_name));
  long_name[64] = '\0';
  CHECK(cli_fleetmsg_session_ok(long_name));
  StrBuf s = STRBUF_INIT;
  cli_fleetmsg_subject(&s, NULL, "build.prod");
  CHECK_STR(strbuf_cstr(&s), "vigil.*.build%2Eprod.n");
  strbuf_reset(&s);
  cli_fleetmsg_subject(&s, "hostb", "a..b");
  CHECK_STR(strbuf_cstr(&s), "vigil.hostb.a%2E%2Eb.n");
  strbuf_free(&s);
}

TEST(a_notification_as_an_engine_publishes_it_passes)
{
  msgpack_sbuffer sb;
  pack_note(&sb, "build.prod", 7, EPOCH, false);
  FleetMsg m = good_msg(&sb);
  CHECK_STR(refusal(&m), "");
  m.msg_id = NULL; /* Nats-Msg-Id is JetStream's: checked only when there */
  CHECK_STR(refusal(&m), "");
  m.msg_id = EPOCH ":build.prod:7:2"; /* sent again under a new id */
  CHECK_STR(refusal(&m), "");
  m.msg_id = EPOCH ":build.prod:7:";
  CHECK_CONTAINS(refusal(&m), "Nats-Msg-Id");
  m.msg_id = EPOCH ":build.prod:70";
  CHECK_CONTAINS(refusal(&m), "Nats-Msg-Id");
  msgpack_sbuffer_destroy(&sb);
}

TEST(headers_that_disagree_are_named)
{
  msgpack_sbuffer sb;
  pack_note(&sb, "build.prod", 7, EPOCH, false);
  FleetMsg m = good_msg(&sb);
  m.seq = "8";
  CHECK_CONTAINS(refusal(&m), "Nats-Msg-Id");
  m.msg_id = NULL;
  CHECK_STR(refusal(&m), "Vigil-Seq 8 disagrees with the payload's seq 7");
  m = good_msg(&sb);
  m.seq = "07";
  CHECK_CONTAINS(refusal(&m), "Vigil-Seq \"07\" is not a seq");
  m.seq = "0";
  CHECK_CONTAINS(refusal(&m), "Vigil-Seq \"0\"");
  m.seq = "99999999999999999999";
  CHECK_CONTAINS(refusal(&m), "is not a seq");
  m = good_msg(&sb);
  m.engine = "hostc";
  CHECK_CONTAINS(refusal(&m), "Vigil-Engine \"hostc\" disagrees with the subject's engine");
  m.engine = NULL;
  CHECK_CONTAINS(refusal(&m), "Vigil-Engine (none)");
  m = good_msg(&sb);
  m.session = "build_prod";
  CHECK_CONTAINS(refusal(&m), "Vigil-Session \"build_prod\" is not the session watched");
  m = good_msg(&sb);
  m.epoch = "3F9C2A61D07BE48";
  CHECK_CONTAINS(refusal(&m), "is not 16 hex digits");
  m = good_msg(&sb);
  m.msg_id = NULL;
  m.epoch = "3f9c2a61d07be486";
  CHECK_CONTAINS(refusal(&m), "the payload's epoch \"" EPOCH "\" disagrees with Vigil-Epoch");
  msgpack_sbuffer_destroy(&sb);
}

TEST(a_subject_of_another_shape_or_session_is_refused)
{
  msgpack_sbuffer sb;
  pack_note(&sb, "build.prod", 7, EPOCH, false);
  static const char *const subjects[] = {
    "vigil.hostb.build.prod.n", "vigil.hostb.build%2Eprod", "vigil..build%2Eprod.n",
    "vigil.hostb.other.n",      "vigilx.hostb.build%2Eprod.n", "vigil.ho st.build%2Eprod.n",
    "",
  };
  for (size_t i = 0; i < sizeof subjects / sizeof *subjects; i++) {
    FleetMsg m = good_msg(&sb);
    m.subject = subjects[i];
    CHECK_CONTAINS(refusal(&m), "the subject");
  }
  msgpack_sbuffer_destroy(&sb);
}

TEST(a_payload_that_is_no_notification_is_refused)
{
  msgpack_sbuffer sb;
  pack_note(&sb, "build.prod", 7, EPOCH, false);
  FleetMsg m = good_msg(&sb);
  m.payload_len = sb.size - 1; /* cut short */
  CHECK_CONTAINS(refusal(&m), "is not one msgpack value");
  char twice[512];
  memcpy(twice, sb.data, sb.size);
  memcpy(twice + sb.size, sb.data, sb.size); /* something after the map */
  m.payload = twice;
  m.payload_len = sb.size * 2;
  CHECK_CONTAINS(refusal(&m), "is not one msgpack value");
  m.payload = "\x93\x01\x02\x03"; /* an array */
  m.payload_len = 4;
  CHECK_CONTAINS(refusal(&m), "is not a msgpack map");
  m.payload_len = FLEET_PAYLOAD_MAX + 1;
  CHECK_CONTAINS(refusal(&m), "past the bound");
  msgpack_sbuffer_destroy(&sb);
  pack_note(&sb, "build.prod", 7, EPOCH, true);
  m = good_msg(&sb);
  CHECK_CONTAINS(refusal(&m), "the key \"seq\" more than once");
  msgpack_sbuffer_destroy(&sb);
  pack_note(&sb, "other", 7, EPOCH, false);
  m = good_msg(&sb);
  CHECK_CONTAINS(refusal(&m), "the payload's session \"other\" disagrees");
  msgpack_sbuffer_destroy(&sb);
}

TEST(a_hostile_value_is_quoted_safely_and_cut)
{
  msgpack_sbuffer sb;
  pack_note(&sb, "build.prod", 7, EPOCH, false);
  FleetMsg m = good_msg(&sb);
  char evil[400];
  memset(evil, 'x', sizeof evil - 1);
  evil[sizeof evil - 1] = '\0';
  memcpy(evil, "\x1b[2J\xe2\x80\xae", 7);
  m.session = evil;
  const char *why = refusal(&m);
  CHECK_CONTAINS(why, "Vigil-Session \"\\e[2J\\u{202e}xxx");
  CHECK_CONTAINS(why, "\"... is not the session watched");
  CHECK(strlen(why) < 200);
  for (const char *p = why; *p; p++)
    CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
  msgpack_sbuffer_destroy(&sb);
}

TEST(exactly_once_per_engine_and_epoch)
{
  static FleetOnce o;
  cli_fleetonce_init(&o);
  CHECK(!cli_fleetonce_seen(&o, "hostb", EPOCH, 1));
  cli_fleetonce_mark(&o, "hostb", EPOCH, 1);
  cli_fleetonce_mark(&o, "hostb", EPOCH, 2);
  CHECK(cli_fleetonce_seen(&o, "hostb", EPOCH, 1));
  CHECK(cli_fleetonce_seen(&o, "hostb", EPOCH, 2));
  CHECK(!cli_fleetonce_seen(&o, "hostb", EPOCH, 3));
  /* Another engine's seqs are its own. */
  CHECK(!cli_fleetonce_seen(&o, "hostc", EPOCH, 1));
  /* A new epoch numbers anew; a message of the epoch it left behind,
   * delivered again late, is a repeat whatever its seq. */
  CHECK(!cli_fleetonce_seen(&o, "hostb", "00000000000000aa", 1));
  cli_fleetonce_mark(&o, "hostb", "00000000000000aa", 1);
  CHECK(cli_fleetonce_seen(&o, "hostb", "00000000000000aa", 1));
  CHECK(cli_fleetonce_seen(&o, "hostb", EPOCH, 2));
  CHECK(cli_fleetonce_seen(&o, "hostb", EPOCH, 3));
  /* Only the last few are remembered. */
  static const char *const later[] = {"00000000000000b1", "00000000000000b2",
                                      "00000000000000b3", "00000000000000b4"};
  for (size_t i = 0; i < 4; i++)
    cli_fleetonce_mark(&o, "hostb", later[i], 1);
  CHECK(cli_fleetonce_seen(&o, "hostb", "00000000000000aa", 9));
  CHECK(!cli_fleetonce_seen(&o, "hostb", EPOCH, 9));
}

TEST(the_table_is_bounded_and_forgets_the_oldest)
{
  static FleetOnce o;
  cli_fleetonce_init(&o);
  char name[16];
  for (unsigned i = 0; i < FLEET_ONCE_MAX + 3; i++) {
    snprintf(name, sizeof name, "e%u", i);
    cli_fleetonce_mark(&o, name, EPOCH, 5);
  }
  CHECK_INT(o.n, FLEET_ONCE_MAX);
  CHECK_INT(o.forgotten, 3);
  CHECK(!cli_fleetonce_seen(&o, "e0", EPOCH, 5)); /* forgotten: the oldest */
  CHECK(!cli_fleetonce_seen(&o, "e2", EPOCH, 5));
  CHECK(cli_fleetonce_seen(&o, "e3", EPOCH, 5));
  snprintf(name, sizeof name, "e%u", FLEET_ONCE_MAX + 2);
  CHECK(cli_fleetonce_seen(&o, name, EPOCH, 5));
}

int
main(void)
{
  RUN(names_and_subjects);
  RUN(a_notification_as_an_engine_publishes_it_passes);
  RUN(headers_that_disagree_are_named);
  RUN(a_subject_of_another_shape_or_session_is_refused);
  RUN(a_payload_that_is_no_notification_is_refused);
  RUN(a_hostile_value_is_quoted_safely_and_cut);
  RUN(exactly_once_per_engine_and_epoch);
  RUN(the_table_is_bounded_and_forgets_the_oldest);
  return check_summary();
}
