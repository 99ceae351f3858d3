/*
 * --wait-for (see cli_waitfor.h): the pattern compiled with PCRE2 as the
 * engine compiles -e, the monitor's lines followed (cli_stream.h) and
 * matched one by one, and a ring of the last lines kept to show why when no
 * line matched.
 */
#include "cli/cli_waitfor.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_cmds.h"
#include "cli/cli_obj.h"
#include "cli/cli_stream.h"

/* The longest pattern taken (the engine's own pattern bound is 512). */
#define CLI_WAITFOR_PATTERN_MAX 4096

/* The bounds of one match, the engine's defaults (monitor.match_limit and
 * monitor.depth_limit): a pattern that backtracks without end on a hostile
 * line makes that line not match, it never hangs the client. */
#define CLI_WAITFOR_MATCH_LIMIT 1000000
#define CLI_WAITFOR_DEPTH_LIMIT 10000

typedef struct {
  pcre2_code *re;
  pcre2_match_data *match_data;
  pcre2_match_context *mctx;
  char *tail[CLI_WAITFOR_TAIL_LINES]; /* the last lines, "out| text" */
  size_t ntail, next;                 /* how many are kept; where the next goes */
  char *matched;                      /* the line that matched, safe for a terminal */
} CliWaitFor;

/* Compiles pattern as the engine compiles a monitor's patterns (UTF, any
 * bytes matched). Returns the code, or NULL with why in msg ("missing
 * closing parenthesis at offset 4"). */
static pcre2_code *
cli_waitfor_compile(const char *pattern, char *msg, size_t size)
{
  size_t len = strlen(pattern);
  if (len > CLI_WAITFOR_PATTERN_MAX) {
    snprintf(msg, size, "longer than %d bytes", CLI_WAITFOR_PATTERN_MAX);
    return NULL;
  }
  int errcode;
  PCRE2_SIZE offset;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                                 &errcode, &offset, NULL);
  if (re == NULL) {
    char why[200];
    if (pcre2_get_error_message(errcode, (PCRE2_UCHAR *)why, sizeof why) < 0)
      snprintf(why, sizeof why, "error %d", errcode);
    snprintf(msg, size, "%s at offset %zu", why, (size_t)offset);
  }
  return re;
}

int
cli_waitfor_check(const CliSpec *spec, const char *opt, const char *pattern)
{
  char msg[256];
  pcre2_code *re = cli_waitfor_compile(pattern, msg, sizeof msg);
  if (re == NULL)
    return cli_opts_usage_error(spec, "--%s: \"%s\" is not a regular expression (PCRE2): %s",
                                opt, pattern, msg);
  pcre2_code_free(re);
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
  /* A match error (a limit reached) counts as no match, as in the engine. */
  bool hit =
      pcre2_match(w->re, (PCRE2_SPTR)(text ? text : ""), n, 0, 0, w->match_data, w->mctx) >= 0;
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
  w.re = cli_waitfor_compile(pattern, msg, sizeof msg);
  if (w.re == NULL) {
    fprintf(stderr, "vigil: --wait-for: %s\n", msg);
    return CLI_EXIT_FAILURE;
  }
  w.match_data = pcre2_match_data_create_from_pattern(w.re, NULL);
  w.mctx = pcre2_match_context_create(NULL);
  if (w.match_data == NULL || w.mctx == NULL) {
    fputs("vigil: --wait-for: out of memory\n", stderr);
    pcre2_match_context_free(w.mctx);
    pcre2_match_data_free(w.match_data);
    pcre2_code_free(w.re);
    return CLI_EXIT_FAILURE;
  }
  pcre2_set_match_limit(w.mctx, CLI_WAITFOR_MATCH_LIMIT);
  pcre2_set_depth_limit(w.mctx, CLI_WAITFOR_DEPTH_LIMIT);
  StrBuf d = STRBUF_INIT;
  /* On a terminal, a line that says what it waits for, erased when the wait
   * ends; a script (stderr not a terminal) sees only the outcome. */
  bool waiting_line = isatty(STDERR_FILENO) == 1;
  if (waiting_line) {
    cli_fmt_duration(&d, timeout_ms);
    fprintf(stderr, "vigil: waiting for %s to print a line matching \"%s\" (%s at most)...", id,
            pattern, strbuf_cstr(&d));
    fflush(stderr);
    strbuf_free(&d);
  }
  CliStream s = {id, 0, 0, cli_waitfor_on_line, &w};
  CliStreamEnd end = cli_stream_follow(c, &s, cli_now_ms() + (int64_t)timeout_ms);
  if (waiting_line)
    fputs("\r\033[K", stderr);
  int rc = 0;
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
  pcre2_match_context_free(w.mctx);
  pcre2_match_data_free(w.match_data);
  pcre2_code_free(w.re);
  return rc;
}
