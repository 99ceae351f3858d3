/*
 * One hook answer's text, within its bound (see hook_text.h).
 */
#include "cli/hook_text.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Every reference must fit, with a newline, whatever the bound allows. */
_Static_assert((HOOK_TAKE_MAX + 1) * (HOOK_TEXT_REF_MAX + 1) <= HOOK_TEXT_MAX_BYTES,
               "the bound holds a reference to every notification a hook takes");

/* The most bytes of a type or monitor id a reference names. */
#define HOOK_TEXT_WORD_MAX 32

/* The envelope's markers (docs/protocol.md section 7). */
#define HOOK_TEXT_MARK "<<<VIGIL OBSERVATION "
#define HOOK_TEXT_BEGIN " BEGIN>>>"
#define HOOK_TEXT_END " END>>>"

/* s without its trailing newlines: its length. */
static size_t
hook_text_trim(const char *s, size_t len)
{
  while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r'))
    len--;
  return len;
}

/* How many lines s[0..len) is (a trimmed text: newlines + 1; 0 when empty). */
static size_t
hook_text_lines(const char *s, size_t len)
{
  if (len == 0)
    return 0;
  size_t n = 1;
  for (size_t i = 0; i < len; i++)
    n += s[i] == '\n';
  return n;
}

/* Whether s is a plain word fit to stand outside a frame: 1..max of
 * [A-Za-z0-9_-]. */
static bool
hook_text_word(const char *s, size_t max)
{
  if (s == NULL || s[0] == '\0' || strlen(s) > max)
    return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '-'))
      return false;
  return true;
}

size_t
hook_text_plan(const HookNote *notes, size_t n, size_t max_bytes, size_t max_lines)
{
  /* Room for a dropped line is kept back: the take may report one. */
  size_t bytes = HOOK_TEXT_REF_MAX, lines = 1, k = 0;
  for (; k < n; k++) {
    size_t len = hook_text_trim(notes[k].text, notes[k].text_len);
    size_t more = len + (k > 0);
    size_t more_lines = hook_text_lines(notes[k].text, len);
    if (bytes + more > max_bytes || lines + more_lines > max_lines)
      break;
    bytes += more;
    lines += more_lines;
  }
  return k == 0 && n > 0 ? 1 : k;
}

/* The reference to a notification that did not fit: the engine's words
 * only, never text of process origin. */
static void
hook_text_reference(StrBuf *out, const HookNote *note)
{
  char what[2 * HOOK_TEXT_WORD_MAX + 16] = "";
  bool type = hook_text_word(note->type, HOOK_TEXT_WORD_MAX);
  bool id = hook_text_word(note->monitor_id, HOOK_TEXT_WORD_MAX);
  if (type || id)
    snprintf(what, sizeof what, " (%s%s%s)", type ? note->type : "", type && id ? " of " : "",
             id ? note->monitor_id : "");
  strbuf_printf(out,
                "vigil: notification #%llu%s is too long for a hook's answer; "
                "notifications_read {since_seq: %llu} has it whole",
                (unsigned long long)note->seq, what,
                (unsigned long long)(note->seq > 0 ? note->seq - 1 : 0));
}

/* Appends the envelope text[0..len) (trimmed, lines lines) cut to at most
 * max_bytes and max_lines: its first lines, a note, its END marker. Returns
 * false, appending nothing, when it has no frame of its own or even that
 * does not fit. */
static bool
hook_text_cut(StrBuf *out, const HookNote *note, const char *text, size_t len, size_t lines,
              size_t max_bytes, size_t max_lines)
{
  const char *first_end = memchr(text, '\n', len);
  const char *last = text + len;
  while (last > text && last[-1] != '\n')
    last--;
  if (first_end == NULL || last <= first_end)
    return false;
  size_t first_len = (size_t)(first_end - text), last_len = (size_t)(text + len - last);
  size_t mark = strlen(HOOK_TEXT_MARK);
  if (first_len < mark + strlen(HOOK_TEXT_BEGIN) || memcmp(text, HOOK_TEXT_MARK, mark) != 0 ||
      memcmp(first_end - strlen(HOOK_TEXT_BEGIN), HOOK_TEXT_BEGIN, strlen(HOOK_TEXT_BEGIN)) !=
          0 ||
      last_len < mark + strlen(HOOK_TEXT_END) || memcmp(last, HOOK_TEXT_MARK, mark) != 0 ||
      memcmp(text + len - strlen(HOOK_TEXT_END), HOOK_TEXT_END, strlen(HOOK_TEXT_END)) != 0)
    return false;
  /* Whole lines from the top while the note and the END line still fit;
   * the note's count is at most `lines`, so its length is bounded by this
   * one written with that count. */
  char note_line[256];
  int note_max = snprintf(note_line, sizeof note_line,
                          "note: %zu more lines of this notification are left out here (a "
                          "hook's answer holds %zu bytes); notifications_read {since_seq: "
                          "%llu} has it whole",
                          lines, (size_t)HOOK_TEXT_MAX_BYTES,
                          (unsigned long long)(note->seq > 0 ? note->seq - 1 : 0));
  if (note_max < 0 || (size_t)note_max >= sizeof note_line)
    return false;
  size_t fixed = (size_t)note_max + 1 + last_len;
  if (max_lines < 3 || first_len + 1 + fixed > max_bytes)
    return false;
  size_t kept = first_len + 1, kept_lines = 1; /* the BEGIN line and its newline */
  const char *p = first_end + 1;
  while (p < last) {
    const char *nl = memchr(p, '\n', (size_t)(last - p));
    size_t line = (size_t)(nl - p) + 1;
    if (kept + line + fixed > max_bytes || kept_lines + 1 + 2 > max_lines)
      break;
    kept += line;
    kept_lines++;
    p = nl + 1;
  }
  strbuf_append(out, text, kept);
  snprintf(note_line, sizeof note_line,
           "note: %zu more lines of this notification are left out here (a hook's answer "
           "holds %zu bytes); notifications_read {since_seq: %llu} has it whole",
           lines - kept_lines - 1, (size_t)HOOK_TEXT_MAX_BYTES,
           (unsigned long long)(note->seq > 0 ? note->seq - 1 : 0));
  strbuf_puts(out, note_line);
  strbuf_putc(out, '\n');
  strbuf_append(out, last, last_len);
  return true;
}

void
hook_text_join(StrBuf *out, const HookNote *notes, size_t n, uint64_t dropped,
               uint64_t dropped_from, uint64_t dropped_to, size_t max_bytes, size_t max_lines)
{
  size_t start = out->len, lines = 0;
  if (dropped > 0) {
    strbuf_printf(out,
                  "vigil: %llu notification%s (seq %llu..%llu) left the engine's keeping "
                  "before a hook could take %s: lost",
                  (unsigned long long)dropped, dropped == 1 ? "" : "s",
                  (unsigned long long)dropped_from, (unsigned long long)dropped_to,
                  dropped == 1 ? "it" : "them");
    lines = 1;
  }
  for (size_t i = 0; i < n; i++) {
    const HookNote *note = &notes[i];
    size_t sep = out->len > start;
    size_t used = out->len - start;
    /* Kept back: a reference (and its newline) for each one after this. */
    size_t later = n - 1 - i;
    size_t held = used + sep + later * (HOOK_TEXT_REF_MAX + 1);
    size_t room = held < max_bytes ? max_bytes - held : 0;
    size_t room_lines = lines + later < max_lines ? max_lines - lines - later : 0;
    size_t len = hook_text_trim(note->text, note->text_len);
    size_t nlines = hook_text_lines(note->text, len);
    if (sep)
      strbuf_putc(out, '\n');
    size_t before = out->len;
    if (len > 0 && len <= room && nlines <= room_lines) {
      strbuf_append(out, note->text, len);
      lines += nlines;
      continue;
    }
    if (len > 0 && hook_text_cut(out, note, note->text, len, nlines, room, room_lines)) {
      lines += hook_text_lines(out->data + before, out->len - before);
      continue;
    }
    hook_text_reference(out, note);
    lines++;
  }
}
