/*
 * A front end's seat in the engine (see seat.h): its anonymous session,
 * the named sessions it opened, and the one its calls act on.
 */
#include "engine/seat.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "base/memory.h"

/* Every session a client holds delivers through here to the front end. */
static bool
seat_on_push(void *ctx, Session *s, const Notification *n)
{
  Seat *c = ctx;
  return c->push(c->push_ctx, n);
}

Seat *
seat_open(Engine *e, SeatPush push, void *ctx)
{
  Seat *c = xcalloc(1, sizeof *c);
  c->engine = e;
  c->push = push;
  c->push_ctx = ctx;
  c->anon = session_create(e->sessions, NULL, false);
  c->anon_att = session_attach(c->anon, seat_on_push, c, false, 0);
  c->current = c->anon;
  c->next = e->clients;
  if (e->clients)
    e->clients->prev = c;
  e->clients = c;
  return c;
}

void
seat_close(Seat *c)
{
  Engine *e = c->engine;
  for (size_t i = 0; i < c->nopened; i++)
    session_detach(c->opened[i].att);
  c->nopened = 0;
  session_detach(c->anon_att);
  if (c->prev)
    c->prev->next = c->next;
  else
    e->clients = c->next;
  if (c->next)
    c->next->prev = c->prev;
  engine_abandon_session(e, c->anon);
  free(c);
}

Session *
seat_session(Seat *c, const char *name, VigilError *err)
{
  if (name == NULL)
    return c->current;
  if (strcmp(name, session_name(c->anon)) == 0)
    return c->anon;
  for (size_t i = 0; i < c->nopened; i++)
    if (strcmp(session_name(c->opened[i].s), name) == 0)
      return c->opened[i].s;
  error_set(err, kErrNotFound, "session: no session \"%s\" is open on this connection", name);
  return NULL;
}

int
seat_attach(Seat *c, Session *s, bool has_last_seq, uint64_t last_seq, VigilError *err)
{
  for (size_t i = 0; i < c->nopened; i++) {
    if (c->opened[i].s != s)
      continue;
    c->current = s;
    if (has_last_seq) {
      /* Opened again with a cursor: attach afresh so the kept notifications
       * after it are pushed again, as for any re-attach. */
      session_detach(c->opened[i].att);
      c->opened[i].att = session_attach(s, seat_on_push, c, true, last_seq);
    }
    return 0;
  }
  if (c->nopened == SEAT_SESSIONS_MAX)
    return error_set(err, kErrLimitExceeded, "session: at most %d sessions per connection",
                     SEAT_SESSIONS_MAX);
  c->opened[c->nopened].s = s;
  c->opened[c->nopened].att = session_attach(s, seat_on_push, c, has_last_seq, last_seq);
  c->nopened++;
  c->current = s;
  return 0;
}

void
seat_resume(Seat *c)
{
  /* The anonymous session is slot 0, the opened ones 1..nopened. A resume
   * cannot open or close sessions (pushes only write), but the count is
   * read again each turn all the same. */
  size_t first = c->resume_first++;
  for (size_t k = 0; k <= c->nopened; k++) {
    size_t i = (first + k) % (c->nopened + 1);
    session_resume(i == 0 ? c->anon_att : c->opened[i - 1].att);
  }
}

void
seat_forget_session(Seat *list, Session *s)
{
  for (Seat *c = list; c; c = c->next) {
    for (size_t i = 0; i < c->nopened; i++) {
      if (c->opened[i].s != s)
        continue;
      session_detach(c->opened[i].att);
      c->opened[i] = c->opened[--c->nopened];
      i--;
    }
    if (c->current == s)
      c->current = c->nopened ? c->opened[c->nopened - 1].s : c->anon;
  }
}
