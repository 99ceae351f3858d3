/*
 * A monitor's restart policy (see monitor_internal.h): when its program
 * ends by itself, the monitor may start it again instead of ending, as pm2,
 * supervisord, process-compose and systemd's Restart= do for a dev server
 * that crashed.
 *
 * The restart happens inside the monitor, not as a new one: its id, label,
 * ring, capture, event log, counters, rate limit and incident coalescer
 * carry on, so a crash loop that prints the same trace each time is one
 * incident and then repeats (docs/incidents.md), and `vigil logs` shows
 * every run's output in order. The monitor still has exactly one ending
 * notification, the last one; each restart in between is told by an
 * output notification (under the rate limit like any other) whose reason
 * says how the program ended and when it starts again, and logged as a
 * `restart` event, which is no ending (monitor_wait's "exit" does not
 * answer it).
 *
 * What starts the program again is kept from the first start: the argv,
 * the resolved program (the path the allowlist judged, never looked up
 * again, so a PATH changed since cannot swap it), the directory it ran in
 * (its descriptor kept open when the start opened one), the environment
 * it was given and its limits. Restarts in a row wait longer each time
 * (restart_backoff_ms, doubled, up to MONITOR_RESTART_DELAY_CAP_MS) and are
 * bounded (max_restarts); a program that ran MONITOR_RESTART_STABLE_MS or
 * more before it ended starts a new row. When the bound is reached the
 * monitor ends with the last exit, its reason saying it gave up.
 */
#include "monitor/monitor_internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "store/keepspec.h"
#include "base/log.h"
#include "base/memory.h"
#include "base/signals.h"
#include "base/textfmt.h"

/* What starts the program again: copies of everything the first start
 * borrowed (MonitorSpec's pointers are its caller's). */
struct MonitorRespawn {
  char **argv;               /* NULL-terminated */
  char *program;             /* the absolute path that was executed */
  ProcDir dir;               /* the directory it runs in (fd -1: by path) */
  char *cwd;                 /* its path, when dir has no descriptor */
  char **env_inherit;        /* NULL: the default list */
  char **env_extra;          /* may be NULL */
  bool line_buffered;
  int64_t memory_limit;
  double cpu_limit;
  char *keeper_program;      /* NULL: no keeper */
};

/* See monitor_internal.h. */
void
monitor_restart__init(Monitor *m, const MonitorSpec *spec, const char *program)
{
  m->restart = spec->restart;
  m->max_restarts = spec->max_restarts > 0 ? (uint64_t)spec->max_restarts
                                           : MONITOR_MAX_RESTARTS_DEFAULT;
  m->restart_backoff_ms = spec->restart_backoff_ms >= 0 ? (uint64_t)spec->restart_backoff_ms
                                                        : MONITOR_RESTART_BACKOFF_DEFAULT_MS;
  m->restarts = spec->restarts;
  m->restarts_in_row = spec->restarts_in_row;
  m->run_started_at = spec->run_started_at;
  /* A run's stdin is written once; such a start is never restarted. */
  if (m->restart == kRestartNo || spec->stdin_data != NULL || program == NULL)
    return;
  MonitorRespawn *r = xcalloc(1, sizeof *r);
  r->argv = xstrv_dup((const char *const *)spec->argv);
  r->program = xstrdup(program);
  r->dir = (ProcDir)PROC_DIR_INIT;
  if (spec->dir != NULL && spec->dir->fd >= 0) {
    r->dir.fd = fcntl(spec->dir->fd, F_DUPFD_CLOEXEC, 3);
    r->dir.path = r->dir.fd >= 0 && spec->dir->path ? xstrdup(spec->dir->path) : NULL;
    if (r->dir.path == NULL && r->dir.fd >= 0) {
      close(r->dir.fd);
      r->dir.fd = -1;
    }
  }
  const char *cwd = spec->dir != NULL && spec->dir->path ? spec->dir->path : spec->cwd;
  r->cwd = cwd ? xstrdup(cwd) : NULL;
  r->env_inherit = xstrv_dup(spec->env_inherit);
  r->env_extra = xstrv_dup((const char *const *)spec->env_extra);
  r->line_buffered = spec->line_buffered;
  r->memory_limit = spec->memory_limit;
  r->cpu_limit = spec->cpu_limit;
  r->keeper_program = spec->keeper_program ? xstrdup(spec->keeper_program) : NULL;
  m->respawn = r;
}

/* See monitor_internal.h. */
void
monitor_restart__free(Monitor *m)
{
  MonitorRespawn *r = m->respawn;
  if (r == NULL)
    return;
  xstrv_free(r->argv);
  free(r->program);
  proc_dir_close(&r->dir);
  free(r->cwd);
  xstrv_free(r->env_inherit);
  xstrv_free(r->env_extra);
  free(r->keeper_program);
  free(r);
  m->respawn = NULL;
}

/* Whether the policy covers this ending: the program ended by itself (no
 * stop, cap or overload under way), can be started again, and ended in a
 * way the policy restarts (on-failure: a status other than 0, a signal, or
 * an unknown exit). The bound is not asked here. */
static bool
monitor_restart_applies(const Monitor *m, const ProcExit *x)
{
  if (m->restart == kRestartNo || m->respawn == NULL || m->ending != kMonRunning)
    return false;
  bool failed = !x->exited || x->term_signal != 0 || x->exit_code != 0;
  return m->restart != kRestartOnFailure || failed;
}

/* See monitor_internal.h. */
bool
monitor_restart__wanted(const Monitor *m, const ProcExit *x)
{
  if (!monitor_restart_applies(m, x))
    return false;
  /* A run long enough starts a new row (checked here, where the row's
   * count decides). */
  uint64_t row = x->duration_ms >= MONITOR_RESTART_STABLE_MS ? 0 : m->restarts_in_row;
  return row < m->max_restarts;
}

/* The delay before the n-th restart of a row (from 1). */
static uint64_t
monitor_restart_delay(const Monitor *m, uint64_t n)
{
  uint64_t cap = m->restart_backoff_ms > MONITOR_RESTART_DELAY_CAP_MS
                     ? m->restart_backoff_ms
                     : MONITOR_RESTART_DELAY_CAP_MS;
  uint64_t d = m->restart_backoff_ms;
  for (uint64_t i = 1; i < n && d < cap; i++)
    d *= 2;
  return d < cap ? d : cap;
}

/* How the program ended, in words: "exited with code 1", "killed by
 * SIGSEGV", "ended (its exit is unknown)". */
static void
monitor_restart_how(StrBuf *out, const ProcExit *x)
{
  if (!x->exited)
    strbuf_puts(out, "ended (its exit is unknown)");
  else if (x->term_signal != 0) {
    const char *name = signals_name(x->term_signal);
    if (name)
      strbuf_printf(out, "was killed by %s", name);
    else
      strbuf_printf(out, "was killed by signal %d", x->term_signal);
  } else
    strbuf_printf(out, "exited with code %d", x->exit_code);
}

/* See monitor_internal.h. */
void
monitor_restart__schedule(Monitor *m)
{
  const ProcExit *x = &m->exit;
  if (x->duration_ms >= MONITOR_RESTART_STABLE_MS)
    m->restarts_in_row = 0;
  m->restarts_in_row++;
  m->restarts++;
  uint64_t delay = monitor_restart_delay(m, m->restarts_in_row);
  monitor_restart__respec(m, false);

  /* The run is over: its open incidents close and its batch goes, before
   * the notification that says it ended (the order an ending has). The
   * coalescer stays: the next run's same trace is a repeat. */
  monitor_signal__pause(m);
  monitor__timer_stop(m->idle_timer);
  monitor_quiet__pause(m);
  proc_close(m->proc);
  m->proc = NULL;
  m->pid = 0;

  StrBuf why = STRBUF_INIT;
  monitor_restart_how(&why, x);
  strbuf_puts(&why, " after ");
  textfmt_duration(&why, x->duration_ms);
  strbuf_printf(&why, "; restart %" PRIu64 " of %" PRIu64 " in ", m->restarts_in_row,
                m->max_restarts);
  textfmt_duration(&why, delay);
  strbuf_printf(&why, " (restart: %s)", monitor_restart_name(m->restart));
  monitor__event(m, kEventRestart, -1, NULL, 0, x->exited && x->term_signal == 0, x->exit_code,
                x->term_signal, strbuf_cstr(&why));
  monitor__notify_note(m, strbuf_cstr(&why), true, x, NULL);
  LOG_INFO("monitor", "%s: %s", m->id, strbuf_cstr(&why));
  strbuf_free(&why);

  m->restart_pending = true;
  m->restart_due_mono = uv_now(m->loop) + delay;
  uv_timer_start(monitor__timer(m, &m->restart_timer), monitor_restart__timer_cb, delay, 0);
}

/* The program could not be started again: the monitor ends, failed, with
 * its last exit and why. */
/* See monitor_internal.h. */
void
monitor_restart__fail(Monitor *m, const VigilError *err)
{
  StrBuf reason = STRBUF_INIT;
  strbuf_printf(&reason, "restart %" PRIu64 " of %" PRIu64 " failed: %s", m->restarts_in_row,
                m->max_restarts, err->msg);
  LOG_WARN("monitor", "%s: %s", m->id, strbuf_cstr(&reason));
  m->ending = kMonFailed;
  free(m->ending_reason);
  m->ending_reason = strbuf_take(&reason);
  monitor__end(m);
}

/* The monitor's spec in its directory names the running program's pid
 * and keeper (a later engine takes over only the keeper its spec names)
 * and the counts so far: rewritten when a restart is decided (the counts)
 * and when it is made (the new pid and keeper). A spec that cannot be
 * rewritten costs the takeover only, as at the start. */
static void
monitor_restart_edit(const Monitor *m, KeepSpec *ks, const void *ctx)
{
  bool new_run = *(const bool *)ctx;
  if (new_run && proc_keeper_pid(m->proc) > 0) {
    ks->pid = m->pid;
    ks->keeper = proc_keeper_pid(m->proc);
  }
  ks->restarts = (int64_t)m->restarts;
  ks->restarts_in_row = (int64_t)m->restarts_in_row;
  ks->run_started_at_ms = m->run_started_at;
}

/* See monitor_internal.h. */
void
monitor_restart__respec(Monitor *m, bool new_run)
{
  VigilError err = VIGIL_ERROR_INIT;
  if (!monitor__respec(m, monitor_restart_edit, &new_run, &err))
    LOG_WARN("monitor", "%s: its spec could not be rewritten after a restart (%s): a restarted "
             "engine will not take it over", m->id, err.msg);
}

/* Starts the program again, as it was first started. */
static void
monitor_respawn(Monitor *m)
{
  MonitorRespawn *r = m->respawn;
  VigilError err = VIGIL_ERROR_INIT;
  ProcSpawnOptions opts = {
    .argv = r->argv,
    .program = r->program,
    .cwd = r->cwd,
    .dir = r->dir.fd >= 0 ? &r->dir : NULL,
    .env_inherit = (const char *const *)r->env_inherit,
    .env_extra = r->env_extra,
    .line_buffered = r->line_buffered,
    .memory_limit = r->memory_limit,
    .cpu_limit = r->cpu_limit,
    .max_processes = m->settings.max_processes,
    .exit_drain_ms = m->settings.exit_drain_ms,
    .tag = m->id,
  };
  /* The run before's cgroup may still be emptying (its keeper exits after
   * it reported): this run's is its own. */
  char group[sizeof m->id + 24];
  snprintf(group, sizeof group, "%s.r%" PRIu64, m->id, m->restarts);
  opts.group = group;
  ProcKeeperOptions keeper;
  if (m->keep != NULL && r->keeper_program != NULL) {
    /* A new keeper, in the same directory: its spools go on, its socket
     * and exit file are new (monitor_keep_rearm). */
    if (monitor_keep_rearm(m->keep, &err) != 0) {
      monitor_restart__fail(m, &err);
      return;
    }
    keeper = (ProcKeeperOptions){r->keeper_program, m->keep->dir_fd, m->keep->listen_fd,
                                 m->settings.keeper_unattended_ms, m->settings.kill_grace_ms};
    opts.keeper = &keeper;
  }
  ProcCallbacks callbacks = {monitor__on_output, monitor__on_eof, monitor__on_exit,
                             monitor__on_start, monitor__on_launched};
  int rc = proc_spawn(m->loop, &opts, &callbacks, m, &m->proc, &err);
  if (m->keep != NULL && m->keep->listen_fd >= 0) {
    close(m->keep->listen_fd); /* the keeper holds it now (or nobody will) */
    m->keep->listen_fd = -1;
  }
  if (rc != 0) {
    m->proc = NULL;
    monitor_restart__fail(m, &err);
    return;
  }
  m->pid = proc_pid(m->proc);
  m->run_started_at = clock_now_ms();
  m->last_output_mono = uv_now(m->loop);
  if (m->idle_timeout_ms > 0)
    uv_timer_start(monitor__timer(m, &m->idle_timer), monitor__idle_timer_cb, m->idle_timeout_ms, 0);
  monitor_quiet__arm(m);
  /* Through a keeper, the new pid (and so the spec and the started event)
   * comes with its hello (monitor__on_start). */
  if (proc_starting(m->proc))
    return;
  monitor_restart__respec(m, true);
  monitor__event(m, kEventStarted, -1, NULL, 0, false, 0, 0, NULL);
}

/* See monitor_internal.h. */
void
monitor_restart__timer_cb(uv_timer_t *t)
{
  Monitor *m = t->data;
  if (!m->restart_pending)
    return;
  m->restart_pending = false;
  if (m->ending != kMonRunning) {
    /* Stopped (or capped) while it waited: it ends with its last exit. */
    monitor__end(m);
    return;
  }
  monitor_respawn(m);
}

/* See monitor_internal.h. */
bool
monitor_restart__interrupt(Monitor *m, MonitorState why, const char *reason)
{
  if (!m->restart_pending || m->ending != kMonRunning)
    return false;
  m->ending = why;
  free(m->ending_reason);
  m->ending_reason = reason ? xstrdup(reason) : NULL;
  /* Ended from the loop, not inside the caller's call. */
  uv_timer_start(monitor__timer(m, &m->restart_timer), monitor_restart__timer_cb, 0, 0);
  return true;
}

/* See monitor_internal.h. */
char *
monitor_restart__give_up(const Monitor *m, const ProcExit *x)
{
  if (m->restarts_in_row == 0 || !monitor_restart_applies(m, x))
    return NULL;
  StrBuf why = STRBUF_INIT;
  monitor_restart_how(&why, x);
  strbuf_printf(&why, "; gave up after %" PRIu64 " restart%s in a row (max_restarts %" PRIu64
                ", restart: %s)", m->restarts_in_row, m->restarts_in_row == 1 ? "" : "s",
                m->max_restarts, monitor_restart_name(m->restart));
  return strbuf_take(&why);
}
