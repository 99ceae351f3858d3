/*
 * installed_program.c: a host built the way a user builds one, against the
 * installed header and library found by pkg-config alone (installed.sh).
 * It spawns the vigild given as its argument without a config, so the
 * engine fails closed, and checks a call that answers and one that is
 * refused. Exit 0 when both behave.
 */
#include <stdio.h>
#include <string.h>

#include <vigil/client.h>

int
main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: installed_program VIGILD\n");
    return 2;
  }
  vigil_error err;
  vigil_client *c = vigil_client_spawn(argv[1], NULL, NULL, &err);
  if (c == NULL) {
    fprintf(stderr, "installed_program: %s\n", err.message);
    return 1;
  }
  vigil_result res;
  if (vigil_client_call(c, "ping", NULL, 30000, &res, &err) != 0) {
    fprintf(stderr, "installed_program: ping: %s\n", err.message);
    return 1;
  }
  printf("engine %s, library %s\n", vigil_result_str(&res, "version"), vigil_client_version());
  vigil_result_free(&res);

  /* No config: every start is denied (fail closed). */
  vigil_args *args = vigil_args_new();
  vigil_args_str(args, "command", "true");
  int rc = vigil_client_call(c, "monitor_start", args, 30000, NULL, &err);
  vigil_args_free(args);
  if (rc == 0 || err.code != VIGIL_ERR_DENIED) {
    fprintf(stderr, "installed_program: expected denied, got %d: %s\n", rc, err.message);
    return 1;
  }
  printf("%s\n", err.message);
  return vigil_client_close(c) == 0 ? 0 : 1;
}
