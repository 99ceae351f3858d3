/*
 * A monitor's start, described once. Every argument that monitor_start,
 * process_run and an entry of the config's `monitors` can give about what to
 * run and how to watch it is a row of one table (monitor_fields): its name,
 * its type, its bounds, its default, which of the three forms accepts it and
 * which layer consumes it. The wire parser (api) and the config parser
 * (config.c) both read a request through start_request_read, which walks
 * the table and checks every rule once; docs/monitor-fields.md is what the
 * table renders (monitor_fields_render_markdown, checked by a unit test).
 *
 * A form reads values its own way (a msgpack map, a Lua table) through a
 * FieldSource, whose type errors name the field as its caller knows it
 * ("label", "monitors[2].label"); the rules here then speak of the same
 * names. A field added to the table works from the wire and the config
 * alike.
 */
#ifndef VIGIL_MONITOR_FIELDS_H
#define VIGIL_MONITOR_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "spec/gate.h"
#include "spec/monitor_defs.h"
#include "spec/settings.h"
#include "base/strbuf.h"

/* A start's env_denied: what a name of its env that monitor.env_deny
 * refuses does (engine_check_start). */
typedef enum {
  kEnvDeniedRefuse = 0,    /* the start is denied (the default) */
  kEnvDeniedDrop,          /* the variable is left out, and the result's note names it */
} StartEnvDenied;

/* The names of StartEnvDenied, in its order, NULL-terminated. */
extern const char *const start_env_denied_names[];

/* What a start asks for, from monitor_start, process_run or the config.
 * Every pointer is owned (start_request_free). */
typedef struct {
  Argv argv;               /* split command, explicit argv, or /bin/sh -c */
  bool shell;
  char *cwd;
  char **env;              /* "K=V", NULL-terminated */
  int env_denied;          /* StartEnvDenied: what a name monitor.env_deny refuses does */
  bool line_buffered;      /* the child's stdout line-buffered (when line_buffered_given) */
  bool line_buffered_given;
  char *label;
  char *description;
  char **patterns;         /* NULL-terminated */
  size_t npatterns;
  bool patterns_given;     /* false: the built-in crash patterns (crashpatterns.h) */
  bool incidents;          /* assemble incidents and coalesce them (when incidents_given) */
  bool incidents_given;
  int envelope;            /* EnvelopeStyle (when envelope_given) */
  bool envelope_given;
  MatchStreams match_streams;
  NotifyMode notify;
  DeliveryMode mode;
  char *policy;
  int64_t timeout_ms;      /* 0: the config's max_runtime_ms */
  bool persistent;
  int64_t idle_timeout_ms;
  int64_t quiet_after_ms;  /* the stall notice; 0: off */
  int restart;             /* RestartPolicy */
  int64_t max_restarts;    /* 0: MONITOR_MAX_RESTARTS_DEFAULT */
  int64_t restart_backoff_ms;
  bool restart_backoff_given;
  int64_t memory_limit;
  double cpu_limit;
  char *stdin_data;        /* process_run */
  size_t stdin_len;
  bool process_run;        /* timeout_ms may exceed max_runtime_ms (process_run's own cap) */
  char *group;             /* the config group it is started for (engine_group.h), set
                              by the engine, never read from a request; NULL: none */
  /* source: {file, from} (docs/sources.md): a file followed in place of a
   * command; NULL: a command. */
  char *source_file;
  int source_from;         /* FileFrom (filesrc.h) */
  uint64_t source_offset;  /* from: a byte offset */
  char *source_ws;         /* source: {ws: URL}: a WebSocket (wssrc.h); NULL: none */
  /* Readiness and health (monitor_ready.c, docs/readiness.md). */
  char *ready_log;
  int64_t ready_tcp;
  char *ready_http;
  char *ready_status;
  int64_t ready_timeout_ms;
  int64_t health_interval_ms;
  int64_t health_failures;
} StartRequest;

void start_request_free(StartRequest *req);

/* Copies src into dst (everything owned anew). */
void start_request_copy(StartRequest *dst, const StartRequest *src);

/* The forms that accept a field (a bit set). */
enum {
  kFormStart = 1 << 0,     /* monitor_start */
  kFormRun = 1 << 1,       /* process_run */
  kFormConfig = 1 << 2,    /* an entry of the config's `monitors` */
};

typedef enum {
  kFieldString,            /* a string without NUL */
  kFieldText,              /* a string shown to agents: UTF-8 text, no control character */
  kFieldStrings,           /* an array of strings */
  kFieldBool,
  kFieldUint,              /* a whole number in [min, max] */
  kFieldNumber,            /* a number in [min, max] */
  kFieldChoice,            /* one of `choices` */
  kFieldEnv,               /* a map of variable name to value */
  kFieldBytes,             /* raw bytes (str or bin) */
} FieldKind;

/* A row, written with named fields (`.name = ..., .kind = ...`); a field
 * left out is 0, NULL or false. */
typedef struct {
  const char *name;
  FieldKind kind;
  unsigned forms;          /* kForm* that accept it */
  size_t slot;             /* where start_request_read stores the value: its offset in
                              StartRequest plus one; 0: the reader's own rules settle it
                              (command, argv, patterns, ...) */
  bool by_form;            /* read by the form's own code, not start_request_read
                              (process_run's call options, a config entry's session) */
  bool nonempty;           /* strings: "" is refused */
  uint64_t min, max;       /* kFieldUint / kFieldNumber: the range; strings: max
                              bytes; lists and maps: max entries (0: unbounded here) */
  const char *max_setting; /* the setting whose value is max (NULL: max) */
  const char *const *choices; /* kFieldChoice: NULL-terminated, in enum order */
  const char *fallback;    /* the default, in words */
  const char *consumer;    /* which layer consumes it, in words */
  const char *doc;         /* one line for the docs */
} MonitorField;

/* The table, terminated by a row whose name is NULL. */
extern const MonitorField monitor_fields[];

/* The names a form accepts, NULL-terminated, in table order, with `extra`
 * (a name every call of the form takes, e.g. "session"; may be NULL) first.
 * The array is static: built on first use, never freed. */
const char *const *monitor_fields_names(unsigned form, const char *extra);

/* The row named `name`, or NULL. */
const MonitorField *monitor_field(const char *name);

/* Whether the form accepts a field of this name. */
bool monitor_fields_accepts(unsigned form, const char *name);

/* How a form hands its values to start_request_read. Each getter returns 1
 * when the field is present and of its type (out filled), 0 when absent
 * (nil counts as absent; out untouched), -1 with err naming the field
 * (src->name) when it is of another type. Strings are copies the caller of
 * the getter owns. */
typedef struct FieldSource FieldSource;
struct FieldSource {
  void *ctx;
  const char *base;        /* the request as a whole, in messages ("monitor_start",
                              "monitors[2]") */
  /* The field as this form names it ("label", "monitors[2].label"). */
  void (*name)(const FieldSource *src, const char *key, char *buf, size_t size);
  int (*string)(const FieldSource *src, const char *key, char **out, VigilError *err);
  int (*strings)(const FieldSource *src, const char *key, char ***out, size_t *n,
                 VigilError *err);
  int (*boolean)(const FieldSource *src, const char *key, bool *out, VigilError *err);
  /* A whole number; `why` ends a range error's bound (" (monitor.max_runtime_ms)"). */
  int (*uint)(const FieldSource *src, const char *key, uint64_t min, uint64_t max,
              const char *why, uint64_t *out, VigilError *err);
  int (*number)(const FieldSource *src, const char *key, double min, double max, double *out,
                VigilError *err);
  int (*choice)(const FieldSource *src, const char *key, const char *const *choices, int *out,
                VigilError *err);
  /* "K=V" copies, NULL-terminated; at most max entries. With numbers, a
   * value may also be a non-negative integer, told in decimal (a map like
   * ready's {tcp: 3000}); else only strings (env). */
  int (*env)(const FieldSource *src, const char *key, size_t max, bool numbers, char ***out,
             VigilError *err);
};

#define FIELD_NAME_MAX 160

/* Reads every field the form accepts (and does not read itself) from src
 * into req, which must be zeroed, then checks what involves several fields:
 * exactly one of command and argv, shell only with command, at most one of
 * patterns and match_pattern, and of timeout_ms and persistent. The command
 * is split (or given to /bin/sh -c) into req->argv. On error req holds what
 * was read so far (start_request_free it). */
int start_request_read(const FieldSource *src, unsigned form, const VigilSettings *settings,
                       StartRequest *req, VigilError *err);

/* Appends the table as Markdown (docs/monitor-fields.md is this output). */
void monitor_fields_render_markdown(StrBuf *out);

#endif
