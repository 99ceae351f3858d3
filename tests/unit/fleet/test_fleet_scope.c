/*
 * Tests of what a session's request subject may do (fleet_scope.h):
 * methods that span sessions are refused, every method of the API is
 * judged (none is open on a session's subject by default), and a call's
 * session arguments must name the subject's session or nothing.
 */
#include <msgpack.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "check.h"
#include "fleet/fleet_scope.h"

static FleetScopeKind
scope_of(const char *method)
{
  return fleet_scope_of(method, strlen(method));
}

TEST(methods_that_span_sessions_are_refused)
{
  CHECK_INT(scope_of("session_list"), kScopeDenied);
  CHECK_INT(scope_of("config_reload"), kScopeDenied);
  CHECK_INT(scope_of("group_up"), kScopeDenied);
  CHECK_INT(scope_of("group_down"), kScopeDenied);
  CHECK_INT(scope_of("group_list"), kScopeDenied);
  CHECK_INT(scope_of("monitor_start"), kScopeSession);
  CHECK_INT(scope_of("monitor_wait"), kScopeSession);
  CHECK_INT(scope_of("session_open"), kScopeSession);
  CHECK_INT(scope_of("ping"), kScopeFree);
  CHECK_INT(scope_of("api_info"), kScopeFree);
  CHECK_INT(scope_of("no_such_method"), kScopeUnknown);
  /* A prefix of a method is not that method. */
  CHECK_INT(fleet_scope_of("monitor_start", 7), kScopeUnknown);
}

TEST(every_method_of_the_api_is_judged)
{
  /* None falls through to the API unjudged: a method added to the API is
   * refused on a session's subject until fleet_scope.c lists it. */
  for (size_t i = 0; api_method_name(i) != NULL; i++)
    if (scope_of(api_method_name(i)) == kScopeUnknown)
      check_fail(__FILE__, __LINE__, "%s is not judged", api_method_name(i));
}

/* Unpacks a map written as msgpack into *o (zone kept by *u). */
static const msgpack_object *
unpack(msgpack_unpacked *u, msgpack_sbuffer *sb)
{
  msgpack_unpacked_init(u);
  size_t off = 0;
  if (msgpack_unpack_next(u, sb->data, sb->size, &off) != MSGPACK_UNPACK_SUCCESS)
    return NULL;
  return &u->data;
}

static int
check_args(const char *const *keys, const char *const *values, size_t n, bool bin)
{
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, n);
  for (size_t i = 0; i < n; i++) {
    msgpack_pack_str_with_body(&pk, keys[i], strlen(keys[i]));
    if (values[i] == NULL)
      msgpack_pack_nil(&pk);
    else if (bin)
      msgpack_pack_bin_with_body(&pk, values[i], strlen(values[i]));
    else
      msgpack_pack_str_with_body(&pk, values[i], strlen(values[i]));
  }
  msgpack_unpacked u;
  const msgpack_object *o = unpack(&u, &sb);
  VigilError err = VIGIL_ERROR_INIT;
  int rc = fleet_scope_check_session(o, "s1", "vigil.e1.s1.rpc", &err);
  if (rc != 0 && (err.code != kErrDenied || strstr(err.msg, "vigil.e1.s1.rpc") == NULL))
    check_fail(__FILE__, __LINE__, "unexpected refusal: %s", err.msg);
  msgpack_unpacked_destroy(&u);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

TEST(a_session_argument_must_be_the_subjects)
{
  const char *k1[] = {"session"}, *k2[] = {"label", "session"};
  const char *k3[] = {"session", "session"};
  CHECK_INT(fleet_scope_check_session(NULL, "s1", "vigil.e1.s1.rpc", &(VigilError)VIGIL_ERROR_INIT),
            0);
  CHECK_INT(check_args(k1, (const char *[]){"s1"}, 1, false), 0);
  CHECK_INT(check_args(k1, (const char *[]){NULL}, 1, false), 0);
  CHECK_INT(check_args(k2, (const char *[]){"s2", "s1"}, 2, false), 0); /* a label may be s2 */
  CHECK_INT(check_args(k1, (const char *[]){"s2"}, 1, false), -1);
  CHECK_INT(check_args(k1, (const char *[]){"s1x"}, 1, false), -1);
  CHECK_INT(check_args(k1, (const char *[]){"s"}, 1, false), -1);
  /* Bin counts as the name it spells, as the API reads it. */
  CHECK_INT(check_args(k1, (const char *[]){"s1"}, 1, true), 0);
  CHECK_INT(check_args(k1, (const char *[]){"s2"}, 1, true), -1);
  /* A second session key that names another is refused, whichever the
   * API would read. */
  CHECK_INT(check_args(k3, (const char *[]){"s1", "s2"}, 2, false), -1);
  CHECK_INT(check_args(k3, (const char *[]){"s2", "s1"}, 2, false), -1);
}

TEST(a_session_argument_of_another_type_is_refused)
{
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  msgpack_pack_str_with_body(&pk, "session", 7);
  msgpack_pack_int(&pk, 5);
  msgpack_unpacked u;
  const msgpack_object *o = unpack(&u, &sb);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(fleet_scope_check_session(o, "s1", "vigil.e1.s1.rpc", &err), -1);
  CHECK_INT(err.code, kErrDenied);
  msgpack_unpacked_destroy(&u);
  msgpack_sbuffer_destroy(&sb);
}

int
main(void)
{
  RUN(methods_that_span_sessions_are_refused);
  RUN(every_method_of_the_api_is_judged);
  RUN(a_session_argument_must_be_the_subjects);
  RUN(a_session_argument_of_another_type_is_refused);
  return check_summary();
}
