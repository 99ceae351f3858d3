/*
 * The names a fleet's engine uses on NATS (fleet_names.h). Session names
 * may hold '.', which NATS reads as a token separator, so a session's
 * token writes it as "%2E"; '%' is in no session name, so the token reads
 * back to one name only and the escape needs no escape of its own.
 */
#include "spec/fleet_names.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static bool
fleet_engine_char_ok(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-';
}

bool
fleet_engine_token_ok(const char *s, size_t n)
{
  if (s == NULL || n == 0 || n > FLEET_ENGINE_NAME_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!fleet_engine_char_ok(s[i]))
      return false;
  return true;
}

bool
fleet_engine_name_ok(const char *name)
{
  return name != NULL && fleet_engine_token_ok(name, strlen(name));
}

void
fleet_engine_name_default(char *out)
{
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    snprintf(out, FLEET_ENGINE_NAME_MAX + 1, "vigil");
    return;
  }
  size_t i = 0;
  for (; host[i] && i < FLEET_ENGINE_NAME_MAX; i++)
    out[i] = fleet_engine_char_ok(host[i]) ? host[i] : '-';
  out[i] = '\0';
}

int
fleet_session_token(const char *session, char *out, size_t size)
{
  size_t used = 0;
  for (const char *p = session; *p; p++) {
    const char *piece = *p == '.' ? "%2E" : NULL;
    size_t len = piece ? 3 : 1;
    if (used + len >= size)
      return -1;
    if (piece)
      memcpy(out + used, piece, 3);
    else
      out[used] = *p;
    used += len;
  }
  if (used >= size)
    return -1;
  out[used] = '\0';
  return (int)used;
}

/* The bytes a session name is made of (session.h), '.' excepted: in a
 * token it is always escaped. */
static bool
fleet_token_char_ok(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-' || c == ':';
}

int
fleet_session_from_token(const char *token, size_t len, char *out, size_t size)
{
  size_t used = 0;
  for (size_t i = 0; i < len; i++) {
    char c;
    if (token[i] == '%') {
      if (i + 2 >= len || token[i + 1] != '2' || (token[i + 2] != 'E' && token[i + 2] != 'e'))
        return -1;
      c = '.';
      i += 2;
    } else if (fleet_token_char_ok(token[i])) {
      c = token[i];
    } else {
      return -1;
    }
    if (used + 1 >= size)
      return -1;
    out[used++] = c;
  }
  if (used == 0)
    return -1;
  out[used] = '\0';
  return (int)used;
}

int
fleet_subject(char *out, size_t size, const char *engine, const char *session)
{
  char token[FLEET_SESSION_TOKEN_MAX + 1];
  if (fleet_session_token(session, token, sizeof token) < 0)
    return -1;
  int n = snprintf(out, size, "vigil.%s.%s.n", engine, token);
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

int
fleet_rpc_subject(char *out, size_t size, const char *engine, const char *session)
{
  char token[FLEET_SESSION_TOKEN_MAX + 1];
  if (session && fleet_session_token(session, token, sizeof token) < 0)
    return -1;
  int n = session ? snprintf(out, size, "vigil.%s.%s.rpc", engine, token)
                  : snprintf(out, size, "vigil.%s.rpc", engine);
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

int
fleet_rpc_subject_any_session(char *out, size_t size, const char *engine)
{
  int n = snprintf(out, size, "vigil.%s.*.rpc", engine);
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

FleetRpcScope
fleet_rpc_subject_read(const char *subject, const char *engine, char *session, size_t size)
{
  size_t elen = strlen(engine);
  if (strncmp(subject, "vigil.", 6) != 0 || strncmp(subject + 6, engine, elen) != 0 ||
      subject[6 + elen] != '.')
    return kFleetRpcNotOurs;
  const char *rest = subject + 6 + elen + 1;
  if (strcmp(rest, "rpc") == 0)
    return kFleetRpcEngine;
  size_t len = strlen(rest);
  if (len <= 4 || strcmp(rest + len - 4, ".rpc") != 0)
    return kFleetRpcNotOurs;
  if (fleet_session_from_token(rest, len - 4, session, size) < 0)
    return kFleetRpcNotOurs;
  return kFleetRpcSession;
}

bool
fleet_client_id_ok(const char *id)
{
  size_t n = 0;
  for (; id[n]; n++)
    if (!fleet_token_char_ok(id[n]) && id[n] != '.')
      return false;
  return n >= 1 && n <= FLEET_CLIENT_ID_MAX;
}

void
fleet_msg_id(char *out, size_t size, const char *epoch, const char *session, uint64_t seq)
{
  snprintf(out, size, "%s:%s:%" PRIu64, epoch, session, seq);
}

bool
fleet_url_says_tls(const char *url)
{
  for (const char *p = url; p != NULL; p = strchr(p, ',')) {
    if (*p == ',')
      p++;
    if (strncasecmp(p, "tls://", 6) == 0)
      return true;
  }
  return false;
}

void
fleet_url_redacted(const char *url, char *out, size_t size)
{
  /* Each URL of a comma-separated list: scheme://[userinfo@]host:port. */
  size_t used = 0;
  const char *p = url;
  while (*p && used + 1 < size) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *scheme = strstr(p, "://");
    const char *at = NULL;
    for (size_t i = 0; i < len; i++)
      if (p[i] == '@')
        at = p + i;
    if (at && scheme && scheme < at && scheme < p + len) {
      size_t head = (size_t)(scheme + 3 - p);
      used += (size_t)snprintf(out + used, size - used, "%.*s***%.*s", (int)head, p,
                               (int)(len - (size_t)(at - p)), at);
    } else if (at) {
      used += (size_t)snprintf(out + used, size - used, "***%.*s", (int)(len - (size_t)(at - p)),
                               at);
    } else {
      used += (size_t)snprintf(out + used, size - used, "%.*s", (int)len, p);
    }
    if (used >= size)
      used = size - 1;
    if (!end)
      break;
    if (used + 1 < size)
      out[used++] = ',';
    out[used] = '\0';
    p = end + 1;
  }
  out[used < size ? used : size - 1] = '\0';
}
