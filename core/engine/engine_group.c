/*
 * Named groups of the config's monitors (see engine_group.h): which
 * monitor is an entry's, bringing a group up (every entry checked before
 * any starts, so a group never comes up half) and down.
 */
#include "engine/engine_group.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_start.h"
#include "base/memory.h"
#include "monitor/monitor.h"

void
engine_group_hits_free(EngineGroupHits *h)
{
  free(h->recs);
  h->recs = NULL;
  h->n = 0;
}

/* Whether the entry belongs to group (to any group when group is NULL). */
static bool
engine_group_has(const ConfigMonitor *cm, const char *group)
{
  return cm->group != NULL && (group == NULL || strcmp(cm->group, group) == 0);
}

/* Whether r runs for group (for any group when NULL) and is still its
 * entry's. */
static bool
engine_group_runs(const MonRecord *r, const char *group)
{
  return r->running && !r->group_released && r->session != NULL && r->group != NULL &&
         (group == NULL || strcmp(r->group, group) == 0);
}

bool
engine_group_known(Engine *e, const char *group)
{
  for (size_t i = 0; i < e->config.nmonitors; i++)
    if (engine_group_has(&e->config.monitors[i], group))
      return true;
  for (MonRecord *r = e->records; r; r = r->next)
    if (engine_group_runs(r, group))
      return true;
  return false;
}

static int
engine_group_cmp(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void
engine_group_names(Engine *e, StrBuf *out)
{
  size_t max = e->config.nmonitors, n = 0;
  for (MonRecord *r = e->records; r; r = r->next)
    max++;
  const char **names = xcalloc(max ? max : 1, sizeof *names);
  for (size_t i = 0; i < e->config.nmonitors; i++)
    if (e->config.monitors[i].group)
      names[n++] = e->config.monitors[i].group;
  for (MonRecord *r = e->records; r; r = r->next)
    if (engine_group_runs(r, NULL))
      names[n++] = r->group;
  qsort(names, n, sizeof *names, engine_group_cmp);
  size_t said = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || strcmp(names[i], names[i - 1]) != 0)
      strbuf_printf(out, "%s%s", said++ ? ", " : "", names[i]);
  if (said == 0)
    strbuf_puts(out, "none");
  free(names);
}

MonRecord *
engine_group_record(Engine *e, const ConfigMonitor *cm, bool running_only)
{
  MonRecord *ended = NULL;
  for (MonRecord *r = e->records; r; r = r->next) {
    if (r->group == NULL || r->session == NULL || strcmp(r->group, cm->group) != 0 ||
        strcmp(session_name(r->session), cm->session) != 0 ||
        strcmp(monitor_label(r->monitor), cm->req.label) != 0)
      continue;
    if (engine_group_runs(r, NULL))
      return r;
    if (ended == NULL)
      ended = r;
  }
  return running_only ? NULL : ended;
}

/* Checks the start of entry i as engine_start will make it, with `before`
 * more monitors about to start in the engine and `in_session` of them in
 * the entry's session. Returns 0 or -1 with err naming the entry. */
static int
engine_group_check(Engine *e, size_t i, size_t before, size_t in_session, VigilError *err)
{
  const VigilConfig *cfg = &e->config;
  const ConfigMonitor *cm = &cfg->monitors[i];
  Session *s = session_find(e->sessions, cm->session);
  in_session += s ? engine_running_in(e, s) : 0;
  StartRequest req;
  start_request_copy(&req, &cm->req);
  VigilError sub = VIGIL_ERROR_INIT;
  StartPlan plan;
  if (engine_check_start(cfg, e->policies, cm->session, &req, (long)getpid(), &plan, &sub) == 0) {
    if (engine_check_counts(cfg, cm->session, in_session, e->running + before, &sub) == 0) {
      VigilSettings settings = engine_settings(cfg, &req);
      MonitorSpec spec = engine_spec(cfg, &req, &plan);
      monitor_check(&settings, &spec, &sub);
    }
    start_plan_free(&plan);
  }
  start_request_free(&req);
  return sub.set ? engine_config_entry_fail(cfg, i, &sub, err) : 0;
}

/* Starts entry i in its session (made and pinned when missing, as at
 * boot); NULL with err naming the entry. */
static MonRecord *
engine_group_start(Engine *e, size_t i, VigilError *err)
{
  const ConfigMonitor *cm = &e->config.monitors[i];
  VigilError sub = VIGIL_ERROR_INIT;
  Session *s = session_find(e->sessions, cm->session);
  if (s == NULL)
    s = session_create(e->sessions, cm->session, true);
  MonRecord *r = NULL;
  if (s == NULL) {
    error_set(&sub, kErrLimitExceeded, "session \"%s\" cannot be made (session.max_sessions)",
              cm->session);
  } else {
    StartRequest req;
    start_request_copy(&req, &cm->req);
    req.group = xstrdup(cm->group); /* kept in its spec: a takeover knows it too */
    char *note = NULL;
    r = engine_start(e, s, &req, &note, &sub);
    start_request_free(&req);
    free(note);
  }
  if (r == NULL) {
    engine_config_entry_fail(&e->config, i, &sub, err);
    return NULL;
  }
  return r;
}

int
engine_group_up(Engine *e, const char *group, EngineGroupHits *started,
                EngineGroupHits *running, VigilError *err)
{
  size_t n = e->config.nmonitors;
  *started = (EngineGroupHits){xcalloc(n ? n : 1, sizeof(MonRecord *)), 0};
  *running = (EngineGroupHits){xcalloc(n ? n : 1, sizeof(MonRecord *)), 0};
  size_t *todo = xcalloc(n ? n : 1, sizeof *todo);
  size_t ntodo = 0;
  for (size_t i = 0; i < n; i++) {
    const ConfigMonitor *cm = &e->config.monitors[i];
    if (!engine_group_has(cm, group))
      continue;
    MonRecord *r = engine_group_record(e, cm, true);
    if (r != NULL)
      running->recs[running->n++] = r;
    else
      todo[ntodo++] = i;
  }
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < ntodo; k++) {
    size_t in_session = 0;
    for (size_t j = 0; j < k; j++)
      in_session += strcmp(e->config.monitors[todo[j]].session,
                           e->config.monitors[todo[k]].session) == 0;
    rc = engine_group_check(e, todo[k], k, in_session, err);
  }
  for (size_t k = 0; rc == 0 && k < ntodo; k++) {
    MonRecord *r = engine_group_start(e, todo[k], err);
    if (r != NULL) {
      started->recs[started->n++] = r;
      continue;
    }
    /* The checks passed and a spawn failed: the group does not stay half up. */
    for (size_t j = 0; j < started->n; j++) {
      started->recs[j]->group_released = true;
      monitor_stop(started->recs[j]->monitor, SIGTERM, -1);
    }
    rc = -1;
  }
  free(todo);
  if (rc != 0) {
    engine_group_hits_free(started);
    engine_group_hits_free(running);
  }
  return rc;
}

void
engine_group_down(Engine *e, const char *group, EngineGroupHits *stopped)
{
  size_t n = 0;
  for (MonRecord *r = e->records; r; r = r->next)
    n++;
  *stopped = (EngineGroupHits){xcalloc(n ? n : 1, sizeof(MonRecord *)), 0};
  /* The list is newest first: walked from its end, the oldest (the
   * first the group started, in config order) comes first. */
  MonRecord *last = e->records;
  while (last && last->next)
    last = last->next;
  for (MonRecord *r = last; r; r = r->prev) {
    if (!engine_group_runs(r, group))
      continue;
    r->group_released = true;
    if (monitor_stop(r->monitor, SIGTERM, -1) == kMonitorStopping)
      stopped->recs[stopped->n++] = r;
  }
}
