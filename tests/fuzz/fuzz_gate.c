/*
 * libFuzzer harness for the command tokenizer (gate_split) and the
 * allowlist message (gate_check), both of which see bytes straight from the
 * agent.
 *
 * Beyond "no crash, no leak", it checks what callers rely on: a success gives
 * argc > 0 and a NULL-terminated argv; a failure gives invalid_params, a
 * message in the protocol's form and an empty out. It also checks that the
 * split is faithful: quoting every word in single quotes and splitting again
 * must give the same words, which catches a scanner that drops or invents
 * bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spec/gate.h"
#include "base/memory.h"
#include "base/strbuf.h"

/* Appends w to sb as one single-quoted shell word ('' for ""), writing each
 * ' as '\'' since nothing can be escaped inside single quotes. */
static void
fuzz_quote_word(StrBuf *sb, const char *w)
{
  strbuf_putc(sb, '\'');
  for (const char *p = w; *p != '\0'; p++) {
    if (*p == '\'')
      strbuf_puts(sb, "'\\''");
    else
      strbuf_putc(sb, *p);
  }
  strbuf_putc(sb, '\'');
}

/* Checks that a quoted rebuild of a splits back into exactly a. */
static void
fuzz_check_roundtrip(const Argv *a)
{
  StrBuf line = STRBUF_INIT;
  for (size_t i = 0; i < a->argc; i++) {
    if (i > 0)
      strbuf_putc(&line, ' ');
    fuzz_quote_word(&line, a->argv[i]);
  }
  Argv again = ARGV_INIT;
  VigilError err = VIGIL_ERROR_INIT;
  if (gate_split(strbuf_cstr(&line), "command", &again, &err) != 0)
    abort();
  if (again.argc != a->argc)
    abort();
  for (size_t i = 0; i < a->argc; i++) {
    if (strcmp(again.argv[i], a->argv[i]) != 0)
      abort();
  }
  argv_free(&again);
  strbuf_free(&line);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *command = xmemdupz((const char *)data, size);
  Argv a = ARGV_INIT;
  VigilError err = VIGIL_ERROR_INIT;

  if (gate_split(command, "command", &a, &err) == 0) {
    if (a.argc == 0 || a.argv == NULL || a.argv[a.argc] != NULL || err.set)
      abort();
    for (size_t i = 0; i < a.argc; i++) {
      if (a.argv[i] == NULL)
        abort();
    }
    fuzz_check_roundtrip(&a);

    /* The denial message quotes argv[0], which may hold any byte. */
    Allowlist al = ALLOWLIST_INIT;
    allowlist_add(&al, "make");
    allowlist_add(&al, "/usr/bin/make");
    VigilError denied = VIGIL_ERROR_INIT;
    int rc = gate_check(&al, &a, &denied);
    if (rc != 0 && (!denied.set || denied.code != kErrDenied))
      abort();
    if (rc == 0 && !gate_allows(&al, a.argv[0]))
      abort();
    allowlist_free(&al);
    argv_free(&a);
  } else {
    if (!err.set || err.code != kErrInvalidParams || a.argc != 0 || a.argv != NULL)
      abort();
    if (strncmp(err.msg, "invalid_params: command: ", 25) != 0)
      abort();
  }
  free(command);
  return 0;
}
