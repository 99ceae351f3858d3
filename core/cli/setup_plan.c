/*
 * A plan of file changes: printing and applying it (see setup_plan.h).
 */
#include "cli/setup_plan.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "cli/setup_diff.h"

void
setup_plan_init(SetupPlan *p)
{
  memset(p, 0, sizeof *p);
  p->notes = (StrBuf)STRBUF_INIT;
}

void
setup_plan_free(SetupPlan *p)
{
  for (size_t i = 0; i < p->n; i++) {
    setup_file_free(&p->changes[i]->file);
    free(p->changes[i]->after);
    strbuf_free(&p->changes[i]->what);
    free(p->changes[i]);
  }
  free(p->changes);
  strbuf_free(&p->notes);
  memset(p, 0, sizeof *p);
}

SetupChange *
setup_plan_open(SetupPlan *p, const char *path, mode_t new_mode, mode_t dir_mode, StrBuf *err)
{
  SetupChange *c = xcalloc(1, sizeof *c);
  if (setup_file_read(&c->file, path, err) != 0) {
    free(c);
    return NULL;
  }
  c->what = (StrBuf)STRBUF_INIT;
  c->new_mode = new_mode;
  c->dir_mode = dir_mode;
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 8;
    p->changes = xrealloc(p->changes, p->cap * sizeof *p->changes);
  }
  p->changes[p->n++] = c;
  return c;
}

void
setup_change_set(SetupChange *c, const char *text, size_t len)
{
  free(c->after);
  c->after = xmalloc(len + 1);
  memcpy(c->after, text, len);
  c->after[len] = '\0';
  c->after_len = len;
  c->remove = false;
}

void
setup_change_delete(SetupChange *c)
{
  free(c->after);
  c->after = NULL;
  c->remove = c->file.exists;
}

void
setup_change_say(SetupChange *c, const char *fmt, ...)
{
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (c->what.len)
    strbuf_puts(&c->what, "; ");
  strbuf_puts(&c->what, buf);
}

void
setup_change_text(SetupChange *c, bool remove, const char *text, size_t len)
{
  bool blank = true;
  for (size_t k = 0; k < len && blank; k++)
    blank = strchr(" \t\r\n", text[k]) != NULL;
  if (remove && blank && c->file.exists && !c->file.link)
    setup_change_delete(c);
  else if (c->file.exists || !blank)
    setup_change_set(c, text, len);
}

bool
setup_change_alters(const SetupChange *c)
{
  if (c->remove)
    return true;
  if (c->after == NULL)
    return false;
  return !c->file.exists || c->file.len != c->after_len ||
         memcmp(c->file.data, c->after, c->after_len) != 0;
}

void
setup_plan_note(SetupPlan *p, const char *fmt, ...)
{
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  strbuf_puts(&p->notes, buf);
  strbuf_putc(&p->notes, '\n');
}

size_t
setup_plan_count(const SetupPlan *p)
{
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++)
    n += setup_change_alters(p->changes[i]);
  return n;
}

void
setup_plan_print(const SetupPlan *p, FILE *f, bool diff, bool done)
{
  for (size_t i = 0; i < p->n; i++) {
    const SetupChange *c = p->changes[i];
    if (!setup_change_alters(c))
      continue;
    if (diff) {
      StrBuf d = STRBUF_INIT;
      setup_diff(&d, c->file.path, c->file.exists ? c->file.data : NULL, c->file.len,
                 c->file.path, c->remove ? NULL : c->after, c->remove ? 0 : c->after_len);
      fputs(strbuf_cstr(&d), f);
      strbuf_free(&d);
      continue;
    }
    const char *verb = c->remove ? (done ? "removed" : "would remove")
                       : c->file.exists ? (done ? "changed" : "would change")
                                        : (done ? "created" : "would create");
    fprintf(f, "  %s %s", verb, c->file.path);
    if (c->what.len)
      fprintf(f, ": %s", strbuf_cstr(&c->what));
    fputc('\n', f);
  }
}

/* Puts back the files written so far. */
static void
setup_plan_undo(SetupPlan *p, StrBuf *err)
{
  for (size_t i = 0; i < p->n; i++) {
    SetupChange *c = p->changes[i];
    if (!c->written)
      continue;
    /* What is there now is what setup wrote: read it as the base. */
    SetupFile now;
    StrBuf why = STRBUF_INIT;
    int rc = setup_file_read(&now, c->file.path, &why);
    if (rc == 0)
      rc = c->file.exists ? setup_file_write(&now, c->file.data, c->file.len, c->file.mode,
                                             c->dir_mode, &why)
                          : setup_file_remove(&now, &why);
    if (rc != 0)
      strbuf_printf(err, "\n  and %s could not be put back: %s", c->file.path, strbuf_cstr(&why));
    else
      strbuf_printf(err, "\n  %s was put back as it was", c->file.path);
    setup_file_free(&now);
    strbuf_free(&why);
    c->written = false;
  }
}

int
setup_plan_apply(SetupPlan *p, StrBuf *err)
{
  for (size_t i = 0; i < p->n; i++) {
    SetupChange *c = p->changes[i];
    if (!setup_change_alters(c))
      continue;
    int rc = c->remove ? setup_file_remove(&c->file, err)
                       : setup_file_write(&c->file, c->after, c->after_len, c->new_mode,
                                          c->dir_mode, err);
    if (rc != 0) {
      setup_plan_undo(p, err);
      return -1;
    }
    c->written = true;
  }
  return 0;
}
