/*
 * --wait-for (see cli_waitfor.h): the pattern made into a regex_t, the
 * monitor's lines followed (cli_stream.h) and matched one by one, and a
 * ring of the last lines kept to show why when no line matched.
 */
#include "cli_waitfor.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_cmds.h"
#include "cli_obj.h"
#include "cli_stream.h"
#include "memory.h"

/* The longest pattern taken (the engine's own pattern bound is 512). */
#define CLI_WAITFOR_PATTERN_MAX 4096

typedef struct {
  regex_t re;
  char *tail[CLI_WAITFOR_TAIL_LINES]; /* the last lines, "out| text" */
  size_t ntail, next;                 /* how many are kept; where the next goes */
  char *matched;                      /* the line that matched, safe for a terminal */
} CliWaitFor;

/* Writes pattern into out with \d and \D spelled as POSIX brackets, which
 * <regex.h> lacks; everything else is kept as written. */
static void
cli_waitfor_translate(const char *pattern, StrBuf *out)
{
  for (const char *p = pattern; *p; p++) {
    if (p[0] == '\\' && (p[1] == 'd' || p[1] == 'D')) {
      strbuf_puts(out, p[1] == 'd' ? "[0-9]" : "[^0-9]");
      p++;
    } else if (p[0] == '\\' && p[1] != '\0') {
      strbuf_append(out, p, 2);
      p++;
    } else {
      strbuf_putc(out, *p);
    }
  }
}

/* Compiles pattern into re. Returns 0, or the regcomp error with its text
 * in msg. */
static int
cli_waitfor_compile(regex_t *re, const char *pattern, char *msg, size_t size)
{
  if (strlen(pattern) > CLI_WAITFOR_PATTERN_MAX) {
    snprintf(msg, size, "longer than %d bytes", CLI_WAITFOR_PATTERN_MAX);
    return -1;
  }
  StrBuf translated = STRBUF_INIT;
  cli_waitfor_translate(pattern, &translated);
  int rc = regcomp(re, strbuf_cstr(&translated), REG_EXTENDED | REG_NOSUB);
  strbuf_free(&translated);
  if (rc != 0) {
    regerror(rc, re, msg, size);
    regfree(re);
  }
  return rc;
}

int
cli_waitfor_check(const CliSpec *spec, const char *opt, const char *pattern)
{
  regex_t re;
  char msg[256];
  if (cli_waitfor_compile(&re, pattern, msg, sizeof msg) != 0)
    return cli_opts_usage_error(spec, "--%s: \"%s\" is not a regular expression: %s", opt,
                                pattern, msg);
  regfree(&re);
  return 0;
}

/* Keeps a line in the tail and tells whether it matches. */
static bool
cli_waitfor_on_line(void *ctx, const msgpack_object *line)
{
  CliWaitFor *w = ctx;
  size_t n;
  const char *text = cli_obj_get_text(line, "text", &n);
  StrBuf safe = STRBUF_INIT;
  cli_fmt_safe(&safe, text ? text : "", n, true);
  StrBuf shown = STRBUF_INIT;
  strbuf_printf(&shown, "%s| %s", cli_obj_get_is(line, "stream", "stderr") ? "err" : "out",
                strbuf_cstr(&safe));
  free(w->tail[w->next]);
  w->tail[w->next] = strbuf_take(&shown);
  w->next = (w->next + 1) % CLI_WAITFOR_TAIL_LINES;
  if (w->ntail < CLI_WAITFOR_TAIL_LINES)
    w->ntail++;
  /* regexec needs a C string: the text may hold a NUL only as U+FFFD, so
   * a copy is the line. */
  char *copy = xmalloc(n + 1);
  memcpy(copy, text ? text : "", n);
  copy[n] = '\0';
  bool hit = regexec(&w->re, copy, 0, NULL, 0) == 0;
  free(copy);
  if (hit)
    w->matched = strbuf_take(&safe);
  strbuf_free(&safe);
  return hit;
}

/* Prints the kept lines, oldest first, to stderr. */
static void
cli_waitfor_print_tail(const CliWaitFor *w)
{
  if (w->ntail == 0) {
    fputs("  (it printed nothing)\n", stderr);
    return;
  }
  fprintf(stderr, "  its last %zu line%s:\n", w->ntail, w->ntail == 1 ? "" : "s");
  size_t first = (w->next + CLI_WAITFOR_TAIL_LINES - w->ntail) % CLI_WAITFOR_TAIL_LINES;
  for (size_t i = 0; i < w->ntail; i++)
    fprintf(stderr, "    %s\n", w->tail[(first + i) % CLI_WAITFOR_TAIL_LINES]);
}

/* Appends how monitor id ended, from monitor_status. */
static void
cli_waitfor_ending(CliClient *c, const char *id, StrBuf *how)
{
  CliReply reply;
  if (cli_client_monitor_status(c, id, kCliStartNone, &reply) == 0) {
    cli_cmds_end_status(reply.result, how);
    cli_reply_free(&reply);
  } else {
    strbuf_puts(how, "ended");
  }
}

int
cli_waitfor_run(CliClient *c, const char *id, const char *pattern, uint64_t timeout_ms)
{
  CliWaitFor w;
  memset(&w, 0, sizeof w);
  char msg[256];
  if (cli_waitfor_compile(&w.re, pattern, msg, sizeof msg) != 0) {
    fprintf(stderr, "vigil: --wait-for: %s\n", msg);
    return CLI_EXIT_FAILURE;
  }
  CliStream s = {id, 0, 0, cli_waitfor_on_line, &w};
  CliStreamEnd end = cli_stream_follow(c, &s, cli_now_ms() + (int64_t)timeout_ms);
  int rc = 0;
  StrBuf d = STRBUF_INIT;
  if (end == kCliStreamDone) {
    fprintf(stderr, "vigil: %s is ready: %s\n", id, w.matched);
  } else if (end == kCliStreamEnded) {
    StrBuf how = STRBUF_INIT;
    cli_waitfor_ending(c, id, &how);
    fprintf(stderr, "vigil: %s %s before a line matched \"%s\"\n", id, strbuf_cstr(&how), pattern);
    strbuf_free(&how);
    cli_waitfor_print_tail(&w);
    rc = CLI_EXIT_FAILURE;
  } else if (end == kCliStreamDeadline) {
    cli_fmt_duration(&d, timeout_ms);
    fprintf(stderr,
            "vigil: no line of %s matched \"%s\" within %s; it is still running (vigil stop %s)\n",
            id, pattern, strbuf_cstr(&d), id);
    cli_waitfor_print_tail(&w);
    rc = CLI_EXIT_FAILURE;
  } else {
    rc = cli_client_fail(c);
  }
  strbuf_free(&d);
  for (size_t i = 0; i < CLI_WAITFOR_TAIL_LINES; i++)
    free(w.tail[i]);
  free(w.matched);
  regfree(&w.re);
  return rc;
}
