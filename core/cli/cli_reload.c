/*
 * `vigil reload`: the engine reads its config file and its policies again
 * (config_reload, docs/protocol.md; SIGHUP does the same), so that what a
 * person added to monitor.allowed_commands, as `vigil setup` tells them
 * to, takes effect without restarting the engine and its monitors. A file
 * that does not load is the engine's invalid_params error, naming the file
 * and the line, and the old config stays in force.
 */
#include "cli/cli_cmds.h"
#include "cli/cli_obj.h"

static const CliOpt cli_reload_opts[] = {
  {0},
};

static int
cli_reload_run(CliClient *c, const CliParsed *p)
{
  (void)p;
  CliReply reply;
  if (cli_client_connect(c, false, false, 0) != 0 ||
      cli_client_call(c, "config_reload", NULL, CLI_CALL_TIMEOUT_MS, &reply) != 0)
    return cli_client_fail(c);
  if (c->json) {
    cli_client_print_json(reply.result);
  } else {
    printf("The engine on %s reloaded its config; policies:", c->socket_path);
    const msgpack_object *names = cli_obj_get(reply.result, "policies");
    uint32_t n = names && names->type == MSGPACK_OBJECT_ARRAY ? names->via.array.size : 0;
    for (uint32_t i = 0; i < n; i++) {
      size_t len = 0;
      const char *name = cli_obj_text(&names->via.array.ptr[i], &len);
      /* A policy's name is a file name of the operator's: shown as text,
       * never with its control bytes. */
      printf("%s ", i ? "," : "");
      for (size_t k = 0; name && k < len; k++)
        putchar((unsigned char)name[k] < 0x20 || name[k] == 0x7f ? '?' : name[k]);
    }
    printf("%s\n", n ? "" : " none");
  }
  cli_reply_free(&reply);
  return 0;
}

const CliCommand cli_cmd_reload = {
  .spec = {.name = "reload", .args = "", .summary = "make the engine read its config again",
           .about = "Make the engine read its config file and its policies again (the file it\n"
           "was started with; SIGHUP does the same): monitors started after it use the\n"
           "new settings, running ones keep theirs. A file that does not load is\n"
           "refused with the file and the line, and the old config stays in force.",
           .opts = cli_reload_opts},
  .run = cli_reload_run,
};
