/*
 * A front end's seat in the engine: what it holds for one party it serves
 * (api.c holds one per connection). A seat has its own anonymous
 * session, which lives and dies with it, and may open up to
 * SEAT_SESSIONS_MAX named sessions; calls that name no session act on the
 * current one (the one opened last, else the anonymous one). Notifications
 * of every session it holds reach it through the SeatPush it was opened
 * with, which is where a front end turns them into its own wire format.
 *
 * This module knows the engine's sessions and nothing of a transport.
 */
#ifndef VIGIL_SEAT_H
#define VIGIL_SEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "session/session.h"

#define SEAT_SESSIONS_MAX 64

typedef struct Engine Engine;
typedef struct Seat Seat;

/* Called for each notification a session the client holds delivers.
 * Returns false when the front end has no room for it now: that session
 * then holds the client's further notifications until seat_resume
 * (session.h, Pacing). */
typedef bool (*SeatPush)(void *ctx, const Notification *n);

struct Seat {
  Engine *engine;
  SeatPush push;
  void *push_ctx;
  Session *anon;
  SessionAttachment *anon_att;
  struct {
    Session *s;
    SessionAttachment *att;
  } opened[SEAT_SESSIONS_MAX];
  size_t nopened;
  size_t resume_first;     /* where the next seat_resume starts: each session in turn */
  Session *current;        /* the session calls without `session` act on */
  Seat *prev, *next;     /* engine->clients */
};

/* A new client with a fresh anonymous session, attached to it. */
Seat *seat_open(Engine *e, SeatPush push, void *ctx);

/* Detaches from every session, stops the anonymous session's monitors (they
 * live on invisibly until their processes are gone) and deletes it. */
void seat_close(Seat *c);

/* The session a call acts on: `name` when given (the anonymous session or
 * one this client opened, else not_found), else the current one. */
Session *seat_session(Seat *c, const char *name, VigilError *err);

/* Attaches c to s and makes it current (session_open). Opened again with a
 * cursor (has_last_seq), it attaches afresh so the kept notifications after
 * last_seq are pushed again. limit_exceeded past SEAT_SESSIONS_MAX. */
int seat_attach(Seat *c, Session *s, bool has_last_seq, uint64_t last_seq,
                  VigilError *err);

/* The front end has room again after a push was refused: every session
 * the client holds pushes what it holds back for it, in order, as far as
 * there is room (session_resume), starting each time with the next
 * session so that one busy session cannot starve the others. */
void seat_resume(Seat *c);

/* Forgets s in every client of the list that opened it (s is being
 * deleted). */
void seat_forget_session(Seat *list, Session *s);

#endif
