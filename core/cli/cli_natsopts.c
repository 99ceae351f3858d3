/*
 * The options every NATS connection of the CLI shares (cli_natsopts.h).
 */
#include "cli/cli_natsopts.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/fleet_names.h"

/* The most of a file's path an error message shows. */
#define CLI_NATSOPTS_PATH_SHOWN 200

/* $name when it names something, else NULL (set but empty is unset, as a
 * shell's VAR= is meant). */
static const char *
cli_natsopts_env(const char *name)
{
  const char *v = getenv(name);
  return v && v[0] ? v : NULL;
}

/* See cli_natsopts.h. */
natsStatus
cli_natsopts_apply(natsOptions *o, const char *url, char *why, size_t size)
{
  const char *creds = cli_natsopts_env("VIGIL_NATS_CREDS");
  const char *ca = cli_natsopts_env("VIGIL_NATS_CA");
  const char *cert = cli_natsopts_env("VIGIL_NATS_CERT");
  const char *key = cli_natsopts_env("VIGIL_NATS_KEY");
  natsStatus s = NATS_OK;
  if (creds)
    s = natsOptions_SetUserCredentialsFromFiles(o, creds, NULL);
  if (s != NATS_OK) {
    snprintf(why, size, "$VIGIL_NATS_CREDS %.*s: %s", CLI_NATSOPTS_PATH_SHOWN, creds,
             cli_natsopts_last_error());
    return s;
  }
  /* A certificate without its key (or the other way) is a mistake in the
   * environment, said before anything is sent. */
  if ((cert == NULL) != (key == NULL)) {
    snprintf(why, size, "$VIGIL_NATS_CERT and $VIGIL_NATS_KEY go together (a client certificate "
             "and its private key), got only %s=%.*s",
             cert ? "$VIGIL_NATS_CERT" : "$VIGIL_NATS_KEY", CLI_NATSOPTS_PATH_SHOWN,
             cert ? cert : key);
    return NATS_INVALID_ARG;
  }
  if (!ca && !cert && !fleet_url_says_tls(url))
    return NATS_OK;
  s = natsOptions_SetSecure(o, true);
  if (s == NATS_OK && ca) {
    s = natsOptions_LoadCATrustedCertificates(o, ca);
    if (s != NATS_OK) {
      snprintf(why, size, "$VIGIL_NATS_CA %.*s cannot be loaded: %s", CLI_NATSOPTS_PATH_SHOWN,
               ca, cli_natsopts_last_error());
      return s;
    }
  }
  if (s == NATS_OK && cert) {
    s = natsOptions_LoadCertificatesChain(o, cert, key);
    if (s != NATS_OK) {
      snprintf(why, size, "$VIGIL_NATS_CERT %.*s with $VIGIL_NATS_KEY %.*s cannot be loaded: %s",
               CLI_NATSOPTS_PATH_SHOWN, cert, CLI_NATSOPTS_PATH_SHOWN, key,
               cli_natsopts_last_error());
      return s;
    }
  }
  if (s != NATS_OK)
    snprintf(why, size, "TLS: %s", cli_natsopts_last_error());
  return s;
}

/* See cli_natsopts.h. */
const char *
cli_natsopts_tls_hint(natsStatus s, const char *url)
{
  bool ca = cli_natsopts_env("VIGIL_NATS_CA") != NULL;
  bool cert = cli_natsopts_env("VIGIL_NATS_CERT") != NULL;
  bool tls = ca || cert || fleet_url_says_tls(url);
  if (s == NATS_SECURE_CONNECTION_REQUIRED)
    return " (the server wants TLS: a tls:// URL, or $VIGIL_NATS_CA naming the CA that signed its "
           "certificate)";
  if (s == NATS_SSL_ERROR && !ca)
    return " (is the server's certificate signed by a private CA? $VIGIL_NATS_CA names the CA "
           "file to trust)";
  /* With TLS 1.3 a server that wants a client certificate says so only by
   * closing the connection once the handshake is done: nats.c then reads
   * nothing where it waits for the server's first answer. */
  if ((s == NATS_SSL_ERROR || s == NATS_PROTOCOL_ERROR || s == NATS_CONNECTION_CLOSED) && tls)
    return cert ? " (the server closed the TLS connection: does it trust the CA that signed "
                  "$VIGIL_NATS_CERT?)"
                : " (the server closed the TLS connection: does it ask for a client certificate? "
                  "$VIGIL_NATS_CERT and $VIGIL_NATS_KEY name one and its key)";
  return "";
}

/* See cli_natsopts.h. */
const char *
cli_natsopts_last_error(void)
{
  const char *text = nats_GetLastError(NULL);
  if (text == NULL)
    return "";
  if (text[0] == '(') {
    const char *close = strstr(text, "): ");
    if (close)
      return close + 3;
  }
  return text;
}
