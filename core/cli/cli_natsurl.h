/*
 * The value of --nats: a NATS server's URL, or several joined by commas,
 * each [nats:// | tls://][USER[:PASS]@]HOST[:PORT] (nats.c's form). It is
 * checked before it reaches nats.c or a file, and every message shows it
 * with its password or token written "***".
 */
#ifndef VIGIL_CLI_NATSURL_H
#define VIGIL_CLI_NATSURL_H

#include <stdbool.h>

/* The longest --nats value taken. */
#define NATS_URL_MAX 1024

/* NULL when url is one the CLI takes, else a phrase saying what is wrong
 * ("its port is not a number from 1 to 65535"). */
const char *cli_natsurl_problem(const char *url);

/* Writes url (checked) into out (NATS_URL_MAX + 1 bytes) as messages show
 * it: a password after USER: is written "***", and so is a token (USERINFO
 * without ':'), so that what lands on a terminal or in a log holds no
 * secret. */
void cli_natsurl_shown(char *out, const char *url);

/* Whether url (checked) carries a user, password or token (USERINFO@). */
bool cli_natsurl_has_secret(const char *url);

#endif
