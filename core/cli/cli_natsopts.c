/*
 * The options every NATS connection of the CLI shares (cli_natsopts.h).
 */
#include "cli/cli_natsopts.h"

#include <stdlib.h>
#include <string.h>

/* See cli_natsopts.h. */
natsStatus
cli_natsopts_credentials(natsOptions *o)
{
  const char *creds = getenv("VIGIL_NATS_CREDS");
  if (creds == NULL || creds[0] == '\0')
    return NATS_OK;
  return natsOptions_SetUserCredentialsFromFiles(o, creds, NULL);
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
