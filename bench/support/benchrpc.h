/*
 * The blocking msgpack-rpc client and engine handling shared by the
 * benchmarks that drive a real vigild (idle, latency, scale).
 *
 * A benchmark calls bench_rpc_init first (its name prefixes every message,
 * and SIGTERM, SIGINT and SIGHUP then stop the engine before the program
 * goes), bench_rpc_engine_start to write its config to a fresh
 * /tmp/vigil-NAME-XXXXXX/, start `vigild --listen` there and connect, and
 * then packs requests with bench_rpc_begin and sends them with
 * bench_rpc_call, which waits for the matching response. Notifications that
 * arrive meanwhile go to the notify hook when one is set and are skipped
 * otherwise; a vigil.error notification is fatal. bench_rpc_die reports,
 * stops the engine and exits 1, keeping the temp dir for its vigild.log.
 * A benchmark with more to undo on a signal sets on_signal.
 */
#ifndef VIGIL_BENCH_RPC_H
#define VIGIL_BENCH_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <msgpack.h>

#include "link/frame.h"

typedef struct BenchRpc BenchRpc;

/* Called with the one params entry of each vigil.notification, from inside
 * bench_rpc_socket_read (so also while bench_rpc_call waits). */
typedef void (*BenchRpcNotify)(BenchRpc *rpc, const msgpack_object *params, void *data);

/* The engine, its temp dir and the connection. */
struct BenchRpc {
  const char *name;              /* the program's, for messages and the dir */
  char dir[64];
  char sock_path[128];
  pid_t vigild;                  /* 0 once it has been reaped */
  bool no_state;                 /* start vigild with --no-state (no keepers,
                                    the capture in memory: docs/restart.md) */
  int fd;
  Frame frame;                   /* cuts the stream into messages, bounded */
  uint32_t next_id;
  uint32_t want_id;              /* the response bench_rpc_call waits for */
  bool have_resp;
  msgpack_unpacked resp;
  int64_t read_ns;               /* when the last socket read returned */
  BenchRpcNotify notify;         /* NULL: notifications are skipped */
  void *notify_data;
  /* NULL, or called first by the signal handlers, before the engine is
   * stopped: what the benchmark must undo itself (its own children, a big
   * temp file). Async-signal-safe calls only. */
  void (*on_signal)(void);
  /* NULL, or called with every response that is not the one awaited (its
   * msgid, its error or nil, its result), from inside
   * bench_rpc_socket_read: for a benchmark that pipelines requests. */
  void (*on_response)(BenchRpc *rpc, uint32_t msgid, const msgpack_object *error,
                      const msgpack_object *result, void *data);
};

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t bench_rpc_now_ns(void);

/* Sleeps ms milliseconds, resuming after signals. */
void bench_rpc_sleep_ms(long ms);

/* Clears rpc, names it (name must outlive it), adds it to the engines that
 * bench_rpc_die and the signal handlers stop (at most 16; the first one's
 * name and on_signal are the program's), ignores SIGPIPE and installs the
 * handlers for SIGTERM, SIGINT and SIGHUP. rpc must outlive the program
 * (a static or main's). */
void bench_rpc_init(BenchRpc *rpc, const char *name);

/* Adds pid, a process the benchmark started itself (a broker), to those
 * bench_rpc_die and the signal handlers stop with SIGTERM after the
 * engines (at most 4); bench_rpc_forget(pid) takes it off once the
 * benchmark has stopped it. */
void bench_rpc_also_stop(pid_t pid);
void bench_rpc_forget(pid_t pid);

/* Prints "NAME: message" to stderr, stops every engine (each stops its
 * monitors) and says where its log is, stops the processes of
 * bench_rpc_also_stop, and exits 1. */
void bench_rpc_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The number after "KEY:" in a /proc status file (status_path, e.g.
 * /proc/PID/status or /proc/PID/task/TID/status), or -1 when the file or
 * the key is missing. */
long long bench_proc_status_field(const char *status_path, const char *key);

/* VmRSS of pid in KiB, or -1. */
long long bench_proc_rss_kib(pid_t pid);

/* The keepers (docs/restart.md) an engine started, and the memory they
 * take: proportional set size (shared pages split among their users) and
 * private pages, summed, in KiB (smaps_rollup). */
typedef struct {
  size_t count;
  long long pss_kib;
  long long private_kib;
  /* Where the private pages are (smaps, summed over the keepers): the
   * program's own file mappings (relocated and written data), anonymous
   * mappings (its .bss among them), the heap, the stack, and the rest
   * (spools and other files mapped). */
  long long image_kib, anon_kib, heap_kib, stack_kib, other_kib;
} BenchKeepers;
void bench_keepers(pid_t engine, BenchKeepers *out);

/* Prints, after indent, the keepers' count, PSS and private memory per
 * keeper and where the private pages are (BenchKeepers); "none" when the
 * engine has no keepers (no state directory). */
void bench_keepers_print(const BenchKeepers *k, const char *indent);

/* Where an engine's resident pages are (/proc/PID/smaps, at one moment),
 * by the kind of mapping: the monitors' spools (the state directory's
 * stdout and stderr files), their event logs (events), checkpoints of a
 * file of their own (checkpoint), the heap (brk's [heap] and anonymous
 * mappings: malloc's arenas and large blocks, libuv's), the stack, and the
 * rest (the program, its libraries, other files). Rss and the private
 * dirty part of it in KiB, and the mappings of each kind. */
typedef enum {
  kBenchMemSpoolOut,
  kBenchMemSpoolErr,
  kBenchMemEvents,
  kBenchMemCheckpoint,
  kBenchMemHeap,
  kBenchMemStack,
  kBenchMemOther,
  kBenchMemKinds
} BenchMemKind;
typedef struct {
  long long rss_kib[kBenchMemKinds];
  long long dirty_kib[kBenchMemKinds]; /* Private_Dirty + Shared_Dirty */
  long long mappings[kBenchMemKinds];
  bool read;                           /* smaps could be read */
} BenchMemory;
void bench_engine_memory(pid_t engine, BenchMemory *out);

/* Prints, after indent, m's kinds per monitor (monitors of them): KiB
 * resident and dirty, and mappings, one line each, and what the kinds sum
 * to; base (may be NULL) is subtracted first (the engine before the
 * monitors), so the figures are the monitors' own. */
void bench_engine_memory_print(const BenchMemory *m, const BenchMemory *base, long monitors,
                               const char *indent);

/* What the monitors' directories in an engine's state directory
 * (run/state/monitors/ under its temp dir) hold on their file system, at
 * one moment: KiB of blocks (st_blocks) of the stdout spools, the stderr
 * spools, the event logs and the rest, and how many directories. On tmpfs
 * (the state directory's default, under $XDG_RUNTIME_DIR) those blocks are
 * memory whether or not the engine maps them. */
typedef struct {
  long long stdout_kib, stderr_kib, events_kib, other_kib;
  long long stderr_files; /* stderr spools that exist */
  long dirs;
  bool tmpfs;
} BenchStateUsage;
void bench_state_usage(const BenchRpc *rpc, BenchStateUsage *out);

/* Prints, after indent, u per monitor directory (nothing without one). */
void bench_state_usage_print(const BenchStateUsage *u, const char *indent);

/* How many live (not zombie) processes are in the process groups
 * groups[0..n) (each monitor's child leads its own): what an engine left
 * behind once it has exited. */
size_t bench_leftovers(const pid_t *groups, size_t n);

/* A peer measured beside the engine: a child whose stdout is a pipe to this
 * program, each of its "Error: K STAMP" lines timed when read(2) returns
 * (STAMP: CLOCK_MONOTONIC ns at the write, as bench_rpc_now_ns). */
typedef struct {
  pid_t pid;
  int fd; /* -1 at EOF */
  char buf[4096];
  size_t len;
} BenchStampPipe;

/* Starts argv (argv[0] a path) with stdin /dev/null and stdout piped to p. */
void bench_stamp_pipe_start(BenchStampPipe *p, char *const argv[]);

/* Called for each stamped line: its stamp and when it was read. */
typedef void (*BenchStampFn)(void *ctx, int64_t stamp_ns, int64_t now_ns);

/* Reads what the pipe has and calls fn for every whole stamped line in it;
 * at EOF closes the pipe (fd -1). */
void bench_stamp_pipe_read(BenchStampPipe *p, BenchStampFn fn, void *ctx);

/* The benchmark's programs: child_name (e.g. "scale_child") beside this
 * program, and vigild one level up (build/vigild for build/bench/NAME)
 * unless vigild_arg names it; into child and vigild (PATH_MAX bytes each).
 * Returns false, having said which is missing (prefixed by name), when
 * either cannot be run. */
bool bench_find_programs(const char *name, const char *child_name, const char *vigild_arg,
                         char *child, char *vigild);

/* Timed lines: each one's stamp (CLOCK_MONOTONIC ns at the write) and its
 * latency (when it was read, minus the stamp). */
typedef struct {
  int64_t stamp_ns;
  double ms;
} BenchSample;
typedef struct {
  BenchSample *v;
  size_t n, cap;
} BenchSamples;

/* Adds the line stamped stamp_ns that was read at now_ns. */
void bench_samples_add(BenchSamples *s, int64_t stamp_ns, int64_t now_ns);
/* A BenchStampFn (ctx: a BenchSamples) that adds each line. */
void bench_samples_stamp(void *ctx, int64_t stamp_ns, int64_t now_ns);
void bench_samples_free(BenchSamples *s);

/* The latency of the samples stamped in [from_ns, to_ns): how many, and
 * p50, p99 (nearest rank) and max in ms; all -1 when there are none. */
typedef struct {
  size_t n;
  double p50, p99, max;
} BenchLatency;
BenchLatency bench_samples_latency(const BenchSamples *s, int64_t from_ns, int64_t to_ns);

/* The CPU time pid's live threads have run, in ns (their schedstat), or
 * -1 when it cannot be read; *main_ns (may be NULL) gets its main
 * thread's (the one whose id is pid: vigild's loop). Finer than clock
 * ticks, but a thread that has exited is no longer counted. */
double bench_proc_threads_cpu_ns(pid_t pid, double *main_ns);

/* The time pid's live threads have waited to run (runnable, on a run
 * queue: schedstat's second field), in ns, or -1: what a loaded machine
 * costs a process beside its own CPU. */
double bench_proc_threads_wait_ns(pid_t pid);

/* utime + stime of pid (every thread) in clock ticks, or -1. */
long long bench_cpu_ticks(pid_t pid);

/* The share (%) of the machine's CPU time that was idle (idle + iowait of
 * /proc/stat's "cpu" line) since the sample *prev, which it updates;
 * negative the first time. */
double bench_machine_idle(unsigned long long prev[2]);

/* Whether o is a str (or bin) equal to s. */
bool bench_rpc_obj_is(const msgpack_object *o, const char *s);

/* The value under key in map o, or NULL (also when o is NULL or not a map). */
const msgpack_object *bench_rpc_get(const msgpack_object *o, const char *key);

/* The unsigned integer o, or -1 when o is missing or not one. */
int64_t bench_rpc_uint(const msgpack_object *o);

/* Copies the str o into out (cap bytes, NUL-terminated); "" if not a str. */
void bench_rpc_str(const msgpack_object *o, char *out, size_t cap);

/* Packs s as a msgpack str. */
void bench_rpc_pack_str(msgpack_packer *pk, const char *s);

/* Writes the config (config_fmt, printf-style) to a fresh temp dir, starts
 * `vigild --listen` there with stderr to vigild.log and connects, waiting
 * up to 10 s for the socket. Dies on any failure. */
void bench_rpc_engine_start(BenchRpc *rpc, const char *vigild, const char *config_fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reads what the socket has (one read), stamps rpc->read_ns, and handles
 * every whole message: the awaited response is kept in rpc->resp,
 * notifications go to the hook. Dies when the engine closes the
 * connection. */
void bench_rpc_socket_read(BenchRpc *rpc);

/* Clears sb and packs the header of a request whose params are one map of
 * nargs entries (the caller packs the pairs into pk, which writes to sb);
 * returns its msgid. */
uint32_t bench_rpc_begin(BenchRpc *rpc, msgpack_sbuffer *sb, msgpack_packer *pk,
                         const char *method, size_t nargs);

/* Sends sb (the request with msgid id) and waits for its response; returns
 * its result (valid until the next call). Dies on an error response or
 * after 30 s. */
const msgpack_object *bench_rpc_call(BenchRpc *rpc, uint32_t id, msgpack_sbuffer *sb);

/* bench_rpc_call, except that an error response returns NULL with its
 * message copied into err (cap bytes), for a benchmark that reports a
 * refusal instead of dying of it. */
const msgpack_object *bench_rpc_try_call(BenchRpc *rpc, uint32_t id, msgpack_sbuffer *sb,
                                         char *err, size_t cap);

/* Drops the kept response and the framer and closes the connection. */
void bench_rpc_disconnect(BenchRpc *rpc);

/* SIGTERM to the engine, then up to 30 s for it to exit: true with *status
 * its waitpid status, false when it did not. */
bool bench_rpc_engine_stop(BenchRpc *rpc, int *status);

/* With keep, prints that the temp dir is kept; otherwise removes it (the
 * config, vigild.log, the socket and run/). */
void bench_rpc_cleanup(BenchRpc *rpc, bool keep);

#endif
