/*
 * Tests of the fleet's names on NATS (fleet_names.h): a session's token is
 * one subject token and reads back to exactly that session, engine names
 * are single tokens, URLs are reported without their credentials.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "spec/fleet_names.h"

TEST(a_session_token_escapes_dots_and_reads_back)
{
  char token[FLEET_SESSION_TOKEN_MAX + 1], back[65];
  CHECK_INT(fleet_session_token("build.prod", token, sizeof token), 12);
  CHECK_STR(token, "build%2Eprod");
  CHECK_INT(fleet_session_from_token(token, strlen(token), back, sizeof back), 10);
  CHECK_STR(back, "build.prod");
  CHECK_INT(fleet_session_token("a:b_c-d", token, sizeof token), 7);
  CHECK_STR(token, "a:b_c-d");
  /* The longest name, all dots, still fits. */
  char dots[65];
  memset(dots, '.', 64);
  dots[64] = '\0';
  CHECK_INT(fleet_session_token(dots, token, sizeof token), 192);
  CHECK_INT(fleet_session_from_token(token, strlen(token), back, sizeof back), 64);
  CHECK_STR(back, dots);
  /* Too small a buffer is refused, not cut. */
  CHECK_INT(fleet_session_token("a.b", token, 5), -1);
}

TEST(a_token_that_is_no_session_name_is_refused)
{
  char back[65];
  const char *bad[] = {"a.b", "a*", ">", "a%2", "a%41", "%", "", "a b", "a\x01", "caf\xc3\xa9"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = fleet_session_from_token(bad[i], strlen(bad[i]), back, sizeof back);
    if (rc != -1)
      check_fail(__FILE__, __LINE__, "token \"%s\" read back as \"%s\"", bad[i], back);
  }
  /* Longer than a session name may be. */
  char long_token[80];
  memset(long_token, 'a', 65);
  CHECK_INT(fleet_session_from_token(long_token, 65, back, sizeof back), -1);
}

TEST(engine_names_are_one_token)
{
  CHECK(fleet_engine_name_ok("build-host_1"));
  CHECK(!fleet_engine_name_ok(""));
  CHECK(!fleet_engine_name_ok("a.b"));
  CHECK(!fleet_engine_name_ok("a*"));
  CHECK(!fleet_engine_name_ok("a>"));
  CHECK(!fleet_engine_name_ok("a b"));
  char long_name[70];
  memset(long_name, 'x', 65);
  long_name[65] = '\0';
  CHECK(!fleet_engine_name_ok(long_name));
  char def[FLEET_ENGINE_NAME_MAX + 1];
  fleet_engine_name_default(def);
  CHECK(fleet_engine_name_ok(def));
}

TEST(subject_and_message_id)
{
  char subject[FLEET_SUBJECT_MAX], id[FLEET_SUBJECT_MAX];
  CHECK_INT(fleet_subject(subject, sizeof subject, "e1", "build.prod"), 0);
  CHECK_STR(subject, "vigil.e1.build%2Eprod.n");
  fleet_msg_id(id, sizeof id, "0123456789abcdef", "build.prod", 42);
  CHECK_STR(id, "0123456789abcdef:build.prod:42");
}

TEST(urls_are_shown_without_their_credentials)
{
  char out[256];
  fleet_url_redacted("nats://127.0.0.1:4222", out, sizeof out);
  CHECK_STR(out, "nats://127.0.0.1:4222");
  fleet_url_redacted("nats://alice:s3cret@host:4222", out, sizeof out);
  CHECK_STR(out, "nats://***@host:4222");
  fleet_url_redacted("nats://tok@a:1,nats://b:2,nats://u:p@c:3", out, sizeof out);
  CHECK_STR(out, "nats://***@a:1,nats://b:2,nats://***@c:3");
  fleet_url_redacted("user:pw@host:4222", out, sizeof out);
  CHECK_STR(out, "***@host:4222");
  CHECK(strstr(out, "pw") == NULL);
}

TEST(a_tls_url_anywhere_in_the_list_asks_for_tls)
{
  CHECK(fleet_url_says_tls("tls://n1:4222"));
  CHECK(fleet_url_says_tls("TLS://n1:4222"));
  CHECK(fleet_url_says_tls("nats://n1:4222,tls://n2:4222"));
  CHECK(!fleet_url_says_tls("nats://n1:4222,nats://n2:4222"));
  CHECK(!fleet_url_says_tls("n1:4222"));
  CHECK(!fleet_url_says_tls("nats://tls:pw@n1:4222")); /* a user named tls */
  CHECK(!fleet_url_says_tls(""));
}

TEST(request_subjects_read_back_to_their_scope)
{
  char subject[FLEET_SUBJECT_MAX], session[65];
  CHECK_INT(fleet_rpc_subject(subject, sizeof subject, "e1", NULL), 0);
  CHECK_STR(subject, "vigil.e1.rpc");
  CHECK_INT(fleet_rpc_subject(subject, sizeof subject, "e1", "build.prod"), 0);
  CHECK_STR(subject, "vigil.e1.build%2Eprod.rpc");
  CHECK_INT(fleet_rpc_subject_any_session(subject, sizeof subject, "e1"), 0);
  CHECK_STR(subject, "vigil.e1.*.rpc");
  CHECK_INT(fleet_rpc_subject_read("vigil.e1.rpc", "e1", session, sizeof session), kFleetRpcEngine);
  CHECK_INT(fleet_rpc_subject_read("vigil.e1.build%2Eprod.rpc", "e1", session, sizeof session),
            kFleetRpcSession);
  CHECK_STR(session, "build.prod");
  /* A session named "rpc" has its own subject, one token longer. */
  CHECK_INT(fleet_rpc_subject_read("vigil.e1.rpc.rpc", "e1", session, sizeof session),
            kFleetRpcSession);
  CHECK_STR(session, "rpc");
  const char *not_ours[] = {"vigil.e2.rpc", "vigil.e1x.rpc", "vigil.e1.s1.n", "vigil.e1.a.b.rpc",
                            "vigil.e1..rpc", "vigil.e1.a%41.rpc", "vigil.e1.rpcx", "vigil.e1",
                            "other.e1.rpc", "vigil.e1.*.rpc"};
  for (size_t i = 0; i < sizeof not_ours / sizeof not_ours[0]; i++)
    if (fleet_rpc_subject_read(not_ours[i], "e1", session, sizeof session) != kFleetRpcNotOurs)
      check_fail(__FILE__, __LINE__, "\"%s\" was read as e1's", not_ours[i]);
}

TEST(requester_ids_are_checked)
{
  CHECK(fleet_client_id_ok("cli-1"));
  CHECK(fleet_client_id_ok("gw:build.host_2"));
  CHECK(!fleet_client_id_ok(""));
  CHECK(!fleet_client_id_ok("a b"));
  CHECK(!fleet_client_id_ok("a\r\nb"));
  CHECK(!fleet_client_id_ok("a*"));
  char long_id[70];
  memset(long_id, 'x', 65);
  long_id[65] = '\0';
  CHECK(!fleet_client_id_ok(long_id));
  long_id[64] = '\0';
  CHECK(fleet_client_id_ok(long_id));
}

int
main(void)
{
  RUN(a_session_token_escapes_dots_and_reads_back);
  RUN(a_token_that_is_no_session_name_is_refused);
  RUN(engine_names_are_one_token);
  RUN(subject_and_message_id);
  RUN(urls_are_shown_without_their_credentials);
  RUN(a_tls_url_anywhere_in_the_list_asks_for_tls);
  RUN(request_subjects_read_back_to_their_scope);
  RUN(requester_ids_are_checked);
  return check_summary();
}
