/*
 * The three ways `vigil watch` prints a notification (see cli_watchfmt.h),
 * shared by the watch over the socket (cli_follow.c) and the one over the
 * broker (cli_watchnats.c), so that a person sees the same thing from both.
 */
#include "cli/cli_watchfmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/strbuf.h"
#include "base/textfmt.h"
#include "cli/cli_client.h"
#include "cli/cli_fmt.h"
#include "cli/cli_obj.h"

/* Appends the text of n as it may be shown: as it is from the engine; from
 * the broker, each line sanitized (its newlines kept as the envelope's line
 * ends, anything else that is not plain text shown escaped). */
static void
watchfmt_text(StrBuf *out, const char *text, size_t len, WatchSource from)
{
  if (from == kWatchFromEngine) {
    strbuf_append(out, text, len);
    return;
  }
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && text[i] != '\n')
      continue;
    textfmt_sanitize(out, text + start, i - start);
    if (i < len)
      strbuf_putc(out, '\n');
    start = i + 1;
  }
}

/* One notification as one line: its seq, its monitor (or "-"), and its
 * text with every backslash, newline, carriage return and tab escaped, so
 * a line reader gets one notification per line and can undo the escapes.
 * The text holds no other control character: the envelope escapes them. */
static void
watchfmt_oneline(const msgpack_object *n, WatchSource from)
{
  size_t tn = 0, in = 0;
  const char *raw = cli_obj_get_text(n, "text", &tn);
  const char *id = cli_obj_get_text(n, "monitor_id", &in);
  StrBuf text = STRBUF_INIT;
  watchfmt_text(&text, raw ? raw : "", tn, from);
  StrBuf line = STRBUF_INIT;
  strbuf_printf(&line, "%llu ", (unsigned long long)cli_obj_get_uint(n, "seq", 0));
  if (id && in)
    cli_fmt_safe(&line, id, in, false);
  else
    strbuf_putc(&line, '-');
  strbuf_putc(&line, ' ');
  /* A trailing newline ends the envelope; it is the line's own end here. */
  size_t len = text.len;
  while (len > 0 && text.data[len - 1] == '\n')
    len--;
  for (size_t i = 0; i < len; i++) {
    char ch = text.data[i];
    if (ch == '\\')
      strbuf_puts(&line, "\\\\");
    else if (ch == '\n')
      strbuf_puts(&line, "\\n");
    else if (ch == '\r')
      strbuf_puts(&line, "\\r");
    else if (ch == '\t')
      strbuf_puts(&line, "\\t");
    else
      strbuf_putc(&line, ch);
  }
  strbuf_putc(&line, '\n');
  fwrite(strbuf_cstr(&line), 1, line.len, stdout);
  strbuf_free(&line);
  strbuf_free(&text);
}

/* The line that starts each notification in the text style, so that one
 * envelope is told from the next at a glance: its seq, monitor (label and
 * id), type, delivery mode and local time:
 *   --- #3 web (mon_q3k9x0b2m1aa) output, idle, 14:02:11 --- */
static void
watchfmt_header(const msgpack_object *n)
{
  StrBuf h = STRBUF_INIT;
  size_t in = 0, ln = 0, yn = 0, mn = 0, an = 0;
  const char *id = cli_obj_get_text(n, "monitor_id", &in);
  const char *label = cli_obj_get_text(n, "label", &ln);
  const char *type = cli_obj_get_text(n, "type", &yn);
  const char *mode = cli_obj_get_text(n, "mode", &mn);
  const char *at = cli_obj_get_text(n, "at", &an);
  strbuf_printf(&h, "--- #%llu ", (unsigned long long)cli_obj_get_uint(n, "seq", 0));
  if (label && !(id && ln == in && memcmp(label, id, in) == 0)) {
    cli_fmt_safe(&h, label, ln, false);
    strbuf_puts(&h, " (");
    cli_fmt_safe(&h, id ? id : "", in, false);
    strbuf_puts(&h, ") ");
  } else if (id) {
    cli_fmt_safe(&h, id, in, false);
    strbuf_putc(&h, ' ');
  }
  cli_fmt_safe(&h, type ? type : "?", type ? yn : 1, false);
  strbuf_puts(&h, ", ");
  cli_fmt_safe(&h, mode ? mode : "?", mode ? mn : 1, false);
  int64_t epoch_ms;
  if (at && cli_fmt_parse_time(at, an, &epoch_ms) == 0) {
    time_t t = (time_t)(epoch_ms / 1000);
    struct tm tm;
    char when[16];
    if (localtime_r(&t, &tm) && strftime(when, sizeof when, "%H:%M:%S", &tm) > 0)
      strbuf_printf(&h, ", %s", when);
  }
  strbuf_puts(&h, " ---");
  printf("%s%s%s\n", cli_fmt_sgr(kCliColBold), strbuf_cstr(&h), cli_fmt_reset(kCliColBold));
  strbuf_free(&h);
}

int
cli_watchfmt_print(const msgpack_object *n, WatchStyle style, WatchSource from)
{
  if (style == kWatchJson) {
    cli_client_print_json(n);
  } else if (style == kWatchOneline) {
    watchfmt_oneline(n, from);
  } else {
    watchfmt_header(n);
    size_t tn;
    const char *raw = cli_obj_get_text(n, "text", &tn);
    if (raw) {
      StrBuf text = STRBUF_INIT;
      watchfmt_text(&text, raw, tn, from);
      fwrite(strbuf_cstr(&text), 1, text.len, stdout);
      if (text.len == 0 || text.data[text.len - 1] != '\n')
        putchar('\n');
      strbuf_free(&text);
    }
    putchar('\n');
  }
  return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
}
