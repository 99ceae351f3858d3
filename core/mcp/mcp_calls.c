/*
 * Tool calls in flight, each in a thread of its own (see mcp_calls.h).
 */
#include "mcp/mcp_calls.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* One call: a place among MCP_CALLS_THREADS_MAX, under mcp_calls_mu. */
typedef struct {
  bool used;               /* its thread runs */
  bool cancelled;          /* notifications/cancelled came, or stdin ended */
  bool counted;            /* in mcp_calls_in_flight: neither answered nor cancelled */
  json_t *key;             /* the request's id, the reading thread's copy */
  json_t *id, *params;     /* the call thread's own copies */
  McpCaller caller;        /* its engine calls (mcp_engine.h) */
  McpServer *s;
  McpCallFn run;
} McpCall;

static pthread_mutex_t mcp_calls_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mcp_calls_ended = PTHREAD_COND_INITIALIZER;
static McpCall mcp_calls[MCP_CALLS_THREADS_MAX];
static size_t mcp_calls_in_flight; /* counted: neither answered nor cancelled */
static size_t mcp_calls_threads;   /* used */
static uint64_t mcp_calls_refused; /* refused past the bound, counted */

/* The call the calling thread runs, or NULL outside a call's thread. */
static _Thread_local McpCall *mcp_calls_self;

/* Frees c's place (mcp_calls_mu held): it was answered or cancelled, so the
 * harness no longer waits for it, and its next call must find the place
 * free even while this thread is still ending. */
static void
mcp_calls_uncount(McpCall *c)
{
  if (c->counted)
    mcp_calls_in_flight--;
  c->counted = false;
}

static void *
mcp_calls_main(void *arg)
{
  McpCall *c = arg;
  mcp_calls_self = c;
  mcp_engine_caller_set(&c->caller);
  c->run(c->s, c->id, c->params);
  pthread_mutex_lock(&mcp_calls_mu);
  json_decref(c->id);
  json_decref(c->params);
  json_decref(c->key);
  mcp_calls_uncount(c);
  mcp_calls_threads--;
  *c = (McpCall){0};
  pthread_cond_broadcast(&mcp_calls_ended);
  pthread_mutex_unlock(&mcp_calls_mu);
  return NULL;
}

int
mcp_calls_start(McpServer *s, json_t *id, json_t *params, McpCallFn run, char *msg, size_t cap)
{
  pthread_mutex_lock(&mcp_calls_mu);
  McpCall *c = NULL;
  for (size_t i = 0; i < MCP_CALLS_THREADS_MAX && c == NULL; i++)
    if (!mcp_calls[i].used)
      c = &mcp_calls[i];
  if (mcp_calls_in_flight >= MCP_CALLS_MAX || c == NULL) {
    mcp_calls_refused++;
    snprintf(msg, cap,
             "busy: %zu tool calls are in flight (MCP_CALLS_MAX %d%s); answer or cancel one, "
             "then call again (%llu refused so far)",
             mcp_calls_in_flight, MCP_CALLS_MAX,
             c == NULL ? ", and the cancelled ones are still ending" : "",
             (unsigned long long)mcp_calls_refused);
    pthread_mutex_unlock(&mcp_calls_mu);
    return -1;
  }
  /* Deep copies: a jansson value is not shared between threads. */
  *c = (McpCall){.used = true, .counted = true, .key = json_deep_copy(id), .id = json_deep_copy(id),
                 .params = params ? json_deep_copy(params) : NULL, .s = s, .run = run};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  int rc = pthread_create(&t, &attr, mcp_calls_main, c);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    json_decref(c->key);
    json_decref(c->id);
    json_decref(c->params);
    *c = (McpCall){0};
    snprintf(msg, cap, "busy: no thread for this call (%s); %zu tool calls are in flight",
             strerror(rc), mcp_calls_in_flight);
    pthread_mutex_unlock(&mcp_calls_mu);
    return -1;
  }
  mcp_calls_in_flight++;
  mcp_calls_threads++;
  pthread_mutex_unlock(&mcp_calls_mu);
  return 0;
}

/* Cancels c (mcp_calls_mu held). */
static void
mcp_calls_cancel_one(McpServer *s, McpCall *c)
{
  if (!c->used || c->cancelled)
    return;
  c->cancelled = true;
  mcp_calls_uncount(c);
  mcp_engine_cancel(&s->engine, &c->caller);
}

void
mcp_calls_cancel(McpServer *s, const json_t *id)
{
  if (id == NULL)
    return;
  pthread_mutex_lock(&mcp_calls_mu);
  for (size_t i = 0; i < MCP_CALLS_THREADS_MAX; i++)
    if (mcp_calls[i].used && json_equal(mcp_calls[i].key, id))
      mcp_calls_cancel_one(s, &mcp_calls[i]);
  pthread_mutex_unlock(&mcp_calls_mu);
}

bool
mcp_calls_answering(void)
{
  if (mcp_calls_self == NULL)
    return true;
  pthread_mutex_lock(&mcp_calls_mu);
  return !mcp_calls_self->cancelled;
}

void
mcp_calls_answered(void)
{
  if (mcp_calls_self != NULL) {
    mcp_calls_uncount(mcp_calls_self);
    pthread_mutex_unlock(&mcp_calls_mu);
  }
}

void
mcp_calls_wait_idle(void)
{
  pthread_mutex_lock(&mcp_calls_mu);
  while (mcp_calls_threads > 0)
    pthread_cond_wait(&mcp_calls_ended, &mcp_calls_mu);
  pthread_mutex_unlock(&mcp_calls_mu);
}

void
mcp_calls_end_all(McpServer *s)
{
  pthread_mutex_lock(&mcp_calls_mu);
  for (size_t i = 0; i < MCP_CALLS_THREADS_MAX; i++)
    mcp_calls_cancel_one(s, &mcp_calls[i]);
  while (mcp_calls_threads > 0)
    pthread_cond_wait(&mcp_calls_ended, &mcp_calls_mu);
  pthread_mutex_unlock(&mcp_calls_mu);
}
