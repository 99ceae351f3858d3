/*
 * `vigil policy try FILE` and `vigil policy test FILE`: a loop for people
 * writing policies (docs/policies.md section 15). The client links no Lua
 * (CMakeLists.txt), and a second policy runner could drift from the
 * engine's, so this command runs vigild's offline mode (core/engine/policytry.h:
 * `vigild --policy-try`, `--policy-test`), which loads the file with the
 * engine's own policy code and words a notification with the engine's own
 * delivery code. No engine needs to be running.
 *
 * What is done here: the arguments, and --notification JSON parsed
 * (jansson, a repeated key refused) and handed to vigild as one msgpack map
 * on its stdin (a memfd), where it is checked key by key. vigild replaces
 * this process (exec), so its output and its exit status are the
 * command's.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/cli_cmds.h"
#include "cli/cli_json.h"
#include "cli/cli_paths.h"

static const CliOpt cli_policy_opts[] = {
  {.name = "sample", .arg = "NAME",
   .help = "try: the sample to give the policy: crash (a Python\n"
   "traceback, the default), loop (a crash loop's repeat\n"
   "summary), exit, lines (plain lines), overload"},
  {.name = "notification", .arg = "JSON",
   .help = "try: give it this notification instead: a JSON object\n"
   "with the keys of docs/protocol.md section 6 (one from\n"
   "vigil watch --json as it is); missing keys get defaults"},
  {0},
};

/* Puts msgpack of the JSON text on a memfd as this process's stdin.
 * Returns 0, or CLI_EXIT_USAGE after printing why. */
static int
cli_policy_stdin(const CliParsed *p, const char *text)
{
  json_error_t jerr;
  json_t *j = json_loads(text, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
  if (j == NULL)
    return cli_opts_usage_error(p->spec, "--notification: not JSON: %s (line %d, column %d)",
                                jerr.text, jerr.line, jerr.column);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  cli_json_pack(j, &pk);
  json_decref(j);
  int fd = memfd_create("vigil-policy-notification", MFD_CLOEXEC);
  size_t off = 0;
  while (fd >= 0 && off < sb.size) {
    ssize_t w = write(fd, sb.data + off, sb.size - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      close(fd);
      fd = -1;
      break;
    }
    off += (size_t)w;
  }
  msgpack_sbuffer_destroy(&sb);
  if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) != 0) {
    fprintf(stderr, "vigil: policy: cannot hand the notification on: %s\n", strerror(errno));
    if (fd >= 0)
      close(fd);
    return CLI_EXIT_FAILURE;
  }
  close(fd);
  return 0;
}

static int
cli_policy_run(CliClient *c, const CliParsed *p)
{
  (void)c;
  const char *verb = p->args[0], *file = p->args[1];
  bool try = strcmp(verb, "try") == 0;
  if (!try && strcmp(verb, "test") != 0)
    return cli_opts_usage_error(p->spec, "\"%s\" is not try or test", verb);
  const char *sample = cli_opts_get(p, "sample");
  const char *json = cli_opts_get(p, "notification");
  if (!try && (sample || json))
    return cli_opts_usage_error(p->spec, "test takes no --sample or --notification: it runs "
                                         "the examples in the file");
  if (sample && json)
    return cli_opts_usage_error(p->spec, "give --sample or --notification, not both");
  if (json) {
    int rc = cli_policy_stdin(p, json);
    if (rc != 0)
      return rc;
  }
  char vigild[CLI_PATHS_MAX];
  cli_paths_vigild(vigild, sizeof vigild);
  const char *argv[6];
  int n = 0;
  argv[n++] = vigild;
  argv[n++] = try ? "--policy-try" : "--policy-test";
  argv[n++] = file;
  if (sample) {
    argv[n++] = "--sample";
    argv[n++] = sample;
  } else if (json) {
    argv[n++] = "--notification-stdin";
  }
  argv[n] = NULL;
  fflush(stdout);
  execvp(vigild, (char *const *)argv);
  fprintf(stderr, "vigil: policy: cannot run %s: %s\n", vigild, strerror(errno));
  return CLI_EXIT_FAILURE;
}

const CliCommand cli_cmd_policy = {
  .spec = {.name = "policy", .args = "try|test FILE",
           .summary = "try a policy file offline, or run its examples",
           .about = "try: print what an agent would read of a notification worded by the policy\n"
           "in FILE (NAME.lua): the engine's own sandbox, limits, prefix check and\n"
           "frame, and when the policy fails, the built-in envelope and the\n"
           "policy_error the agent would get, with the error's file and line on stderr.\n"
           "stderr also says what the policy's route chose. Exit 0 when the policy\n"
           "worded it, 1 when it failed, 2 for a bad option or notification.\n"
           "test: run the examples FILE carries in its `examples` table and print ok or\n"
           "FAIL for each; exit 0 only when it has some and all pass.\n"
           "No engine is needed (vigild runs offline). docs/policies.md section 15.",
           .opts = cli_policy_opts, .min_args = 2, .max_args = 2},
  .run = cli_policy_run,
};
