/*
 * The value of --nats (cli_natsurl.h): checked before anything uses it, and
 * shown without its secret. One rule for every command that takes it
 * (vigil watch --nats, vigil --nats ... COMMAND, vigil setup writing it
 * into a harness's files), so that a URL one accepts the others accept.
 */
#include "cli/cli_natsurl.h"

#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"

/* Checks one URL of a comma-separated list: [nats:// | tls://]
 * [USER[:PASS]@]HOST[:PORT]. Returns NULL, or a phrase saying what is
 * wrong. */
static const char *
cli_natsurl_part_problem(const char *s, size_t n)
{
  const char *end = s + n;
  const char *sep = NULL;
  for (const char *p = s; p + 2 < end; p++) {
    if (p[0] == ':' && p[1] == '/' && p[2] == '/') {
      sep = p;
      break;
    }
  }
  if (sep) {
    size_t sn = (size_t)(sep - s);
    if (!((sn == 4 && memcmp(s, "nats", 4) == 0) || (sn == 3 && memcmp(s, "tls", 3) == 0)))
      return "its scheme is neither nats:// nor tls://";
    s = sep + 3;
  }
  const char *at = NULL;
  for (const char *p = s; p < end; p++)
    if (*p == '@')
      at = p;
  if (at)
    s = at + 1;
  if (s < end && *s == '[') { /* an IPv6 address in brackets */
    const char *close = memchr(s, ']', (size_t)(end - s));
    if (close == NULL)
      return "an IPv6 address has no closing ']'";
    s = close + 1;
    if (s < end && *s != ':')
      return "something follows the IPv6 address that is not :PORT";
  } else {
    const char *colon = memchr(s, ':', (size_t)(end - s));
    if ((colon ? colon : end) == s)
      return "it names no host";
    s = colon ? colon : end;
  }
  if (s < end) { /* :PORT */
    s++;
    if (s == end || (size_t)(end - s) > 5)
      return "its port is not a number from 1 to 65535";
    unsigned long port = 0;
    for (const char *p = s; p < end; p++) {
      if (*p < '0' || *p > '9')
        return "its port is not a number from 1 to 65535";
      port = port * 10 + (unsigned long)(*p - '0');
    }
    if (port == 0 || port > 65535)
      return "its port is not a number from 1 to 65535";
  }
  return NULL;
}

/* See cli_natsurl.h. */
const char *
cli_natsurl_problem(const char *url)
{
  size_t n = strlen(url);
  if (n == 0)
    return "it is empty";
  if (n > NATS_URL_MAX)
    return "it is longer than 1024 characters";
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] == 0x7F)
      return "it holds a space or a control character";
  for (const char *part = url;;) {
    const char *comma = strchr(part, ',');
    size_t len = comma ? (size_t)(comma - part) : strlen(part);
    if (len == 0)
      return "one of its comma-separated URLs is empty";
    const char *why = cli_natsurl_part_problem(part, len);
    if (why)
      return why;
    if (comma == NULL)
      return NULL;
    part = comma + 1;
  }
}


/* Where one URL of the list, part..end, has its USERINFO: *host is what
 * follows the scheme (or part), and the return the last '@' before end, or
 * NULL when there is no USERINFO. */
static const char *
cli_natsurl_userinfo_end(const char *part, const char *end, const char **host)
{
  *host = part;
  const char *scheme = strstr(part, "://");
  if (scheme && scheme < end)
    *host = scheme + 3;
  const char *at = NULL;
  for (const char *q = *host; q < end; q++)
    if (*q == '@')
      at = q;
  return at;
}

/* See cli_natsurl.h. */
void
cli_natsurl_shown(char *out, const char *url)
{
  StrBuf sb = STRBUF_INIT;
  for (const char *part = url;;) {
    const char *comma = strchr(part, ',');
    const char *end = comma ? comma : part + strlen(part);
    const char *host;
    const char *at = cli_natsurl_userinfo_end(part, end, &host);
    if (at) {
      const char *colon = memchr(host, ':', (size_t)(at - host));
      strbuf_append(&sb, part, (size_t)((colon ? colon + 1 : host) - part));
      strbuf_puts(&sb, "***");
      strbuf_append(&sb, at, (size_t)(end - at));
    } else {
      strbuf_append(&sb, part, (size_t)(end - part));
    }
    if (comma == NULL)
      break;
    strbuf_putc(&sb, ',');
    part = comma + 1;
  }
  snprintf(out, NATS_URL_MAX + 1, "%s", strbuf_cstr(&sb));
  strbuf_free(&sb);
}

/* See cli_natsurl.h. */
bool
cli_natsurl_has_secret(const char *url)
{
  for (const char *part = url;;) {
    const char *comma = strchr(part, ',');
    const char *end = comma ? comma : part + strlen(part);
    const char *host;
    if (cli_natsurl_userinfo_end(part, end, &host) != NULL)
      return true;
    if (comma == NULL)
      return false;
    part = comma + 1;
  }
}
