/*
 * What a request sent on one session's subject may do (docs/fleet.md
 * section 6): "vigil.<engine>.<token>.rpc" gives whoever may publish there
 * that session and nothing else, so NATS permissions on `vigil.e1.s1.>`
 * are a grant of the session s1. A method is judged by what it acts on:
 * one session (it is made to act on the subject's), none (ping, api_info:
 * they answer as they are), or every session (session_list,
 * config_reload, the config's groups, whose monitors live in whatever
 * sessions the config names): refused `denied`. A method this table does
 * not know is refused as well, so a method added to the API later is not
 * open on a session's subject until someone decides it should be; one the
 * API does not know either goes on, for the API to say so.
 */
#ifndef VIGIL_FLEET_SCOPE_H
#define VIGIL_FLEET_SCOPE_H

#include <msgpack.h>
#include <stddef.h>

#include "base/error.h"

typedef enum {
  kScopeSession,  /* acts on one session: made to act on the subject's */
  kScopeFree,     /* acts on no session: as it is */
  kScopeDenied,   /* acts across sessions, or is not known here: refused */
  kScopeUnknown,  /* no such method in the API: it answers unknown_method */
} FleetScopeKind;

/* What method (len bytes, not NUL-terminated) is on a session's subject. */
FleetScopeKind fleet_scope_of(const char *method, size_t len);

/* Refuses (denied, -1 with err naming subject) a call whose arguments
 * name a session other than `session`: every "session" key of args (the
 * argument map, or NULL) must be nil or a str or bin of exactly that name.
 * 0 when none names another. */
int fleet_scope_check_session(const msgpack_object *args, const char *session,
                              const char *subject, VigilError *err);

#endif
