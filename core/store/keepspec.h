/*
 * A kept monitor's spec (docs/restart.md, stage 2): what an engine needs to
 * take over a monitor that an earlier engine started, written once into the
 * monitor's directory when it starts. It says what runs (argv, the program,
 * the directory), how its output is watched (patterns and the monitor's
 * choices, every setting it runs under), where it belongs (its id, session
 * and policy), whom to ask (the child's and keeper's pids) and the start map
 * monitor_status reports (startmap.h), kept as it was packed.
 *
 * The file is msgpack behind a header (magic, version, length, a 64-bit
 * FNV-1a sum of the body, as the spool's), written to a temporary name and renamed. Read back, every
 * field is checked as a request's would be (types, settings within their
 * bounds, the choices known); the error names the field.
 */
#ifndef VIGIL_KEEPSPEC_H
#define VIGIL_KEEPSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "spec/settings.h"

#define KEEPSPEC_NAME "spec"
#define KEEPSPEC_MAX_BYTES (4 * 1024 * 1024)

typedef struct {
  char *id;
  char *session;            /* its session's name */
  bool session_anonymous;   /* an anonymous session: not taken over */
  char *label;
  char *description;        /* may be NULL */
  char *policy;
  char *group;              /* the config group it was started for; NULL: none */
  char **argv;              /* NULL-terminated */
  char *program;            /* the resolved path that was executed */
  char *cwd;                /* the directory it runs in */
  char **patterns;          /* NULL-terminated; empty with builtin_patterns */
  bool builtin_patterns;
  bool incidents;
  int envelope, match_streams, notify, mode;
  int64_t timeout_ms;       /* the runtime cap it was given (0: none) */
  int64_t idle_timeout_ms;
  int64_t quiet_after_ms;   /* the stall notice (monitor_quiet.c); 0: off, also a
                               spec from before it was kept */
  int64_t memory_limit;
  double cpu_limit;
  char **env;               /* the start's env, "K=V", NULL-terminated; NULL: none
                               (also a spec from before it was kept) */
  /* The restart policy (monitor_restart.c); a spec from before it was kept
   * has none. The counts are rewritten at each restart. */
  int restart;              /* RestartPolicy */
  int64_t max_restarts, restart_backoff_ms;
  int64_t restarts, restarts_in_row;
  int64_t run_started_at_ms; /* Unix ms the running program started; 0: started_at_ms */
  int64_t started_at_ms;    /* Unix ms */
  pid_t pid, keeper;         /* pid 0: its keeper had not said hello yet (a takeover
                                asks the keeper, checked as `keeper`) */
  VigilSettings settings;
  char *start;              /* its start map (startmap.h), msgpack bytes, start_len
                               of them; NULL: none (a spec from before it was kept) */
  size_t start_len;
  /* Readiness and health (monitor_ready.c); a spec from before they were
   * kept has none. ready_at_ms is rewritten when the monitor becomes
   * ready, so a monitor taken over stays ready. */
  char *ready_log, *ready_http, *ready_status; /* NULL: none */
  int64_t ready_tcp, ready_timeout_ms, health_interval_ms, health_failures;
  int64_t ready_at_ms;      /* Unix ms it became ready; 0: not */
} KeepSpec;

/* Writes s as dir_fd/spec (temporary name, then rename; 0600). */
int keepspec_write(int dir_fd, const KeepSpec *s, VigilError *err);
/* Reads and checks dir_fd/spec into s (free with keepspec_free). */
int keepspec_read(int dir_fd, KeepSpec *s, VigilError *err);
void keepspec_free(KeepSpec *s);

#endif
