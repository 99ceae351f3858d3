/*
 * libFuzzer harness for the config loader (config_load_buffer): the Lua
 * sandbox running arbitrary text, and the strict walk of whatever table it
 * returns.
 *
 * Random bytes are almost never a table, so the first byte picks how the
 * rest is used: as the whole file, as the body of the returned table, as the
 * fields of one monitor, or as a command line (a long-bracket string, so any
 * byte can reach gate_split). Beyond "no crash, no leak", it checks the
 * loader's contract: a refusal is invalid_params, names the file first and
 * leaves the defaults; a success gives monitors with a session and an argv.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/config.h"
#include "base/memory.h"
#include "base/strbuf.h"

#define FUZZ_NAME "fuzz.lua"

/* Checks what config_load_buffer promises about cfg and err. */
static void
fuzz_check(int rc, const VigilConfig *cfg, const VigilError *err)
{
  if (rc != 0) {
    if (!err->set || err->code != kErrInvalidParams)
      abort();
    if (strncmp(err->msg, "invalid_params: " FUZZ_NAME, strlen("invalid_params: " FUZZ_NAME)) != 0)
      abort();
    if (cfg->path != NULL || cfg->allowed_commands.n != 0 || cfg->nmonitors != 0 ||
        cfg->nroots != 0 || cfg->allow_shell || cfg->policy == NULL ||
        strcmp(cfg->policy, "envelope") != 0)
      abort();
    return;
  }
  if (err->set || cfg->path == NULL || strcmp(cfg->path, FUZZ_NAME) != 0)
    abort();
  for (size_t i = 0; i < cfg->nmonitors; i++) {
    const ConfigMonitor *m = &cfg->monitors[i];
    if (m->session == NULL || m->session[0] == '\0' || m->req.argv.argc == 0 ||
        m->req.argv.argv[m->req.argv.argc] != NULL || m->req.npatterns > (size_t)cfg->settings.max_patterns)
      abort();
  }
  VigilError check = VIGIL_ERROR_INIT;
  if (settings_check(&cfg->settings, &check) != 0)
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  unsigned mode = size > 0 ? data[0] % 4 : 0;
  const char *body = size > 0 ? (const char *)data + 1 : "";
  size_t len = size > 0 ? size - 1 : 0;
  StrBuf text = STRBUF_INIT;
  switch (mode) {
  case 0:
    strbuf_append(&text, body, len);
    break;
  case 1:
    strbuf_puts(&text, "return {");
    strbuf_append(&text, body, len);
    strbuf_puts(&text, "}");
    break;
  case 2:
    strbuf_puts(&text, "return { monitor = { allowed_commands = { 'echo' } }, "
                       "monitors = { { session = 's', ");
    strbuf_append(&text, body, len);
    strbuf_puts(&text, " } } }");
    break;
  default:
    strbuf_puts(&text, "return { monitors = { { session = 's', command = [==[");
    strbuf_append(&text, body, len);
    strbuf_puts(&text, "]==] } } }");
    break;
  }

  VigilConfig cfg;
  VigilError err = VIGIL_ERROR_INIT;
  int rc = config_load_buffer(strbuf_cstr(&text), text.len, FUZZ_NAME, &cfg, &err);
  fuzz_check(rc, &cfg, &err);
  config_free(&cfg);
  strbuf_free(&text);
  return 0;
}
