/*
 * One child process: spawning it in its own session and process group with
 * stdin on /dev/null (or a pipe fed with given bytes), stdout and stderr on
 * two pipes and no other inherited descriptor; reading both pipes inside the
 * libuv loop; stopping the whole process group with a grace period before
 * SIGKILL; and reaping it with its resource usage.
 *
 * Lifecycle: proc_spawn -> on_output/on_eof callbacks while it runs ->
 * exactly one on_exit, called when the child has exited AND both streams
 * have reached EOF, or when monitor.exit_drain_ms has passed since the exit
 * (a grandchild holding a pipe open cannot stall teardown). At that point
 * every survivor is sent SIGKILL, so nothing is left behind: the process
 * group, and every descendant that left it (contain.h says how they are
 * found). After on_exit, the Proc stays readable until proc_close.
 *
 * The program is resolved before anything is forked: a program that does not
 * exist or is not an executable regular file is command_not_found; a refusal
 * by the OS (fork, pipe, exec failures) is spawn_failed. Either way nothing
 * is left running and no callback fires.
 *
 * What runs, and where, is decided by the engine, never by the child's
 * environment: a bare program name is looked up in the search path the
 * caller of proc_spawn gives (the engine's PATH by default, absolute
 * directories only), not in a PATH set in env_extra; the child enters the
 * directory that was opened and checked (ProcDir), not whatever its path
 * names by the time of the fork.
 */
#ifndef VIGIL_PROC_H
#define VIGIL_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "proc/contain.h"
#include "base/error.h"
#include "spec/stream.h"


/* A working directory opened for a child. Its path is read from the open
 * descriptor, so what a caller checks (the path) and what the child enters
 * (fchdir to the descriptor) are the same directory even if a symlink on
 * the way is changed in between. */
typedef struct {
  int fd;                   /* O_DIRECTORY | O_CLOEXEC (O_PATH where there is one); -1: none */
  char *path;               /* its absolute real path, as the kernel names it; owned */
} ProcDir;

#define PROC_DIR_INIT {-1, NULL}

/* Opens cwd (NULL: the engine's own cwd) for a child. Errors, with out left
 * as PROC_DIR_INIT: invalid_params naming cwd ("does not exist", "is not a
 * directory", "cannot be used: <why>"); internal when it is the engine's
 * own cwd that is gone. */
int proc_dir_open(const char *cwd, ProcDir *out, VigilError *err);

/* Closes the descriptor and frees the path; leaves d as PROC_DIR_INIT. */
void proc_dir_close(ProcDir *d);

/* A keeper for the child (docs/restart.md): the program is started by a
 * vigil-keeper process, its parent and subreaper, so that it outlives the
 * engine. Everything below stays the caller's. */
typedef struct {
  const char *program;      /* vigil-keeper's path */
  int state_fd;             /* the monitor's directory: its spools, the exit file */
  int listen_fd;            /* a listening socket there, for a later engine */
  int64_t unattended_ms;    /* keeper.unattended_ms */
  int64_t kill_grace_ms;    /* monitor.kill_grace_ms, for an unattended stop */
} ProcKeeperOptions;

typedef struct {
  char *const *argv;        /* argv[0] as given; NULL-terminated; copied */
  const char *program;      /* the absolute path to execute, resolved before (a
                               restart runs what the first start's allowlist
                               judged); NULL: argv[0] is resolved */
  const char *cwd;          /* NULL: the engine's cwd; unused when dir is set */
  const ProcDir *dir;       /* the directory the child runs in, opened by the
                               caller (proc_dir_open) and still theirs; NULL:
                               cwd is opened here */
  const char *search_path;  /* where a bare argv[0] is looked up: directories
                               separated by ':', non-absolute ones ignored.
                               NULL: the engine's PATH (its absolute entries),
                               or /usr/local/bin:/usr/bin:/bin when it has none.
                               A PATH in env_extra is never searched. */
  const char *const *env_inherit; /* which of the engine's variables the child
                               gets (childenv.h patterns); NULL: the default
                               list (childenv_default_inherit) */
  char *const *env_extra;   /* "KEY=VALUE" added to (or replacing in) what is
                               inherited; NULL-terminated; may be NULL */
  bool line_buffered;       /* add what makes the child's stdout line-buffered
                               (PYTHONUNBUFFERED, libstdbuf: childenv.h) */
  const char *stdin_data;   /* NULL: stdin is /dev/null; else these bytes are
                               written to a pipe that is then closed */
  size_t stdin_len;
  int64_t memory_limit;     /* bytes: the cgroup's memory limit where there is one,
                               else of address space (RLIMIT_AS); 0: none */
  double cpu_limit;         /* cores, at most the machine's; 0: none (contain.h) */
  int64_t max_processes;    /* processes and threads at once; 0: none (contain.h) */
  const char *tag;          /* the monitor's id, naming its cgroup and set as
                               VIGIL_MONITOR_ID; NULL: one is made */
  const char *group;        /* its cgroup's name when not the tag (contain.h) */
  int64_t exit_drain_ms;    /* see the lifecycle above */
  const ProcKeeperOptions *keeper; /* NULL: the engine is the child's parent */
} ProcSpawnOptions;

typedef struct {
  bool exited;              /* false only if the exit could not be observed */
  int exit_code;            /* -1 when killed by a signal */
  int term_signal;          /* 0 when it exited normally */
  uint64_t duration_ms;     /* spawn to exit */
  uint64_t cpu_ms;          /* user + system of the child and its reaped descendants */
  uint64_t memory_peak_bytes;
  uint64_t io_read_bytes;   /* /proc/PID/io rchar where the OS tells it, else 0 */
  uint64_t io_write_bytes;  /* /proc/PID/io wchar, likewise */
  bool drain_cut;           /* streams were closed by the drain bound, not EOF */
  LimitKind exceeded;    /* the limit that ended it (contain_finish), or none */
  uint64_t oom_kills;       /* processes its memory limit's OOM killer killed */
  uint64_t forks_refused;   /* forks refused at its max_processes */
} ProcExit;

typedef struct {
  /* Bytes read from one stream. buf is only valid during the call. */
  void (*on_output)(void *data, StreamId stream, const char *buf, size_t len);
  /* The stream reached EOF (or was cut by the drain bound). */
  void (*on_eof)(void *data, StreamId stream);
  /* Once, last. */
  void (*on_exit)(void *data, const ProcExit *exit);
  /* With a keeper only, once, before any other callback: the keeper said
   * its first word. err NULL: the child runs (proc_pid is its pid now);
   * else why it does not (spawn_failed, as proc_spawn's own errors), and
   * nothing of it is left but the Proc, which the caller closes
   * (proc_close) and which calls nothing more. */
  void (*on_start)(void *data, const VigilError *err);
  /* With a keeper only, before on_start: the keeper is running (it was
   * launched off the loop, proc_spawn): proc_keeper_pid says its pid from
   * now on. May be NULL. Not called when the launch failed (on_start says
   * why) or the Proc was closed meanwhile. */
  void (*on_launched)(void *data);
} ProcCallbacks;

typedef struct Proc Proc;

/* Resolves and starts the program. With a keeper (opts->keeper) the start
 * is asynchronous: proc_spawn returns at once, the keeper's clone and exec
 * run in libuv's thread pool (on_launched says when it runs), and the
 * keeper's first word (the child's pid, or why it did not start) is read
 * from the loop and handed to on_start; until then proc_pid is 0, nothing
 * is read from the pipes, and proc_stop only records the stop, which is
 * applied when the child's pid is known. A keeper that says nothing within
 * the hello bound (proc_keeper_set_hello_ms) is killed and the start fails.
 * Errors: command_not_found (naming the
 * program and why: not found in PATH / no such file / not a regular file /
 * not executable), spawn_failed (naming the OS error, or the cgroup file
 * that could not be made or written), invalid_params for a memory_limit
 * below 1 MiB, a cpu_limit that is not above 0 and at most the machine's
 * cores, or a negative max_processes. */
int proc_spawn(uv_loop_t *loop, const ProcSpawnOptions *opts, const ProcCallbacks *cb,
               void *data, Proc **out, VigilError *err);

/* Calls cb(data) once no keeper is being launched (proc_spawn): now, or
 * when the last launch in flight has its answer (its keeper named in its
 * monitor's spec by then). The SIGUSR2 upgrade waits so, or the engine it
 * executes would find monitors whose keeper was never started. One waiter
 * at a time: a second replaces the first. */
void proc_keeper_launches_settled(void (*cb)(void *data), void *data);

/* A child an earlier engine started through a keeper, taken over by this
 * one (docs/restart.md): the keeper attached to this engine
 * (kKeeperAttached) and handed over the pipes that are still open. */
typedef struct {
  pid_t pid;                /* the child */
  pid_t keeper;             /* its keeper: not this engine's child */
  int ctl;                  /* the keeper's socket (becomes the Proc's) */
  int out[2];               /* the pipes' read ends (become the Proc's); -1: at EOF */
  bool exited;              /* it had ended: */
  bool status_unknown;      /* ... and how is not known (its keeper died first) */
  int exit_code;            /* -1 when killed by a signal */
  int term_signal;
  bool keeper_gone;         /* its keeper could not be reached (exited is then
                               true): ctl stands in for it, and nothing is left to
                               signal or reap (the keeper ended everything, or
                               monitor_keep.c stopped what it left) */
  int64_t ended_at_ms;      /* Unix ms of the exit its keeper recorded; 0: unknown */
  char lost[320];           /* why the exit is unknown, in words; "" when it is known */
  const char *program;      /* the path that was executed */
  const char *tag;          /* the monitor's id */
  int64_t started_at_ms;    /* Unix ms, for its duration */
  int64_t exit_drain_ms;
} ProcAdoptOptions;

/* Takes over a running (or ended, not yet reaped) child from its keeper:
 * the same Proc as proc_spawn's, reading the pipes from now on. Without a
 * cgroup of this engine's, "the monitor" is the child's group and every
 * process under its keeper (contain.h). The keeper is not this engine's
 * child: its death is seen as its socket closing, and the child's exit is
 * then unknown (the child, if still there, is killed: nobody could report
 * it). Descriptors in o become the Proc's, also on error (closed). */
int proc_adopt(uv_loop_t *loop, const ProcAdoptOptions *o, const ProcCallbacks *cb, void *data,
               Proc **out, VigilError *err);

/* Closes o's descriptors (an adoption given up before proc_adopt). */
void proc_adopt_discard(ProcAdoptOptions *o);

/* Raises this process's soft RLIMIT_NOFILE to its hard limit, and has every
 * child started afterwards begin with the soft limit as it was. An engine
 * holds two pipes per running monitor, so 1000 monitors need 2000+
 * descriptors, past the soft limit of 1024 most sessions and services start
 * with (systemd's default: soft 1024, hard 524288), and a spawn past it is
 * refused (spawn_failed: "pipe: Too many open files"). The children get the
 * old limit back because a program may rely on it: select() cannot watch a
 * descriptor at or past FD_SETSIZE (1024). Sets *was and *now to the soft
 * limit before and after; returns false (nothing changed) when the limit
 * cannot be read or raised. */
bool proc_raise_nofile(uint64_t *was, uint64_t *now);

/* Grows this process's descriptor table now to hold `want` descriptors
 * (at most the soft RLIMIT_NOFILE, and at most PROC_FD_RESERVE_MAX), so that
 * starts never grow it later. Growing a table shared by several threads
 * waits for an RCU grace period in the kernel (expand_files: 8 to 11 ms
 * measured, issue 27), and each doubling came inside a start, on the loop.
 * Returns the table's size now (descriptors it holds without growing). */
#define PROC_FD_RESERVE_MAX 65536
uint64_t proc_reserve_fds(uint64_t want);

/* Everything proc_spawn would refuse before it forks, without forking: the
 * options, the directory and the program. On success *program is the
 * absolute path that would be executed (free it). Same errors as
 * proc_spawn except spawn_failed. */
int proc_spawn_check(const ProcSpawnOptions *opts, char **program, VigilError *err);

/* What proc_stop found. */
typedef enum {
  kProcStopping = 0, /* this call started the stop */
  kProcStopExited,   /* the child had already exited: nothing was sent */
  kProcStopHastened, /* a stop was under way and this call asked for a sooner
                        SIGKILL: its signal was sent and SIGKILL comes sooner */
  kProcStopPending,  /* a stop was under way and this call asked for nothing
                        sooner: nothing was sent */
} ProcStopResult;

/* proc_stop's grace_ms for a stop that never escalates: no SIGKILL follows
 * (unless a later, stronger stop asks for one). */
#define PROC_GRACE_NEVER UINT64_MAX

/* Sends `sig` to the whole process group and every descendant that left it.
 * Unless sig is SIGKILL, a timer then sends SIGKILL to all of them after
 * grace_ms if the child has not exited (grace_ms 0: SIGKILL follows at once;
 * PROC_GRACE_NEVER: never). A call while a stop is pending goes through only
 * when it is stronger, that is when it brings SIGKILL sooner (SIGKILL itself,
 * or a grace that ends before the pending one's): it sends its signal, moves
 * the deadline and returns kProcStopHastened; otherwise it sends nothing and
 * returns kProcStopPending, so repeating a stop is harmless and a weaker one
 * never delays the kill. Returns kProcStopExited when the child had already
 * exited (nothing is sent). */
ProcStopResult proc_stop(Proc *p, int sig, uint64_t grace_ms);

/* Frees the Proc. If the child is still running it is sent SIGKILL (with
 * its group and descendants) and reaped later without callbacks. Safe to
 * call from on_exit. */
void proc_close(Proc *p);

pid_t proc_pid(const Proc *p);
/* Whether a keeper start still waits for its keeper's first word. */
bool proc_starting(const Proc *p);
/* The bound on a keeper's first word (ms, default 30000), for every start
 * from now on; ms <= 0 restores the default. For tests (vigild reads
 * VIGIL_TEST_KEEPER_HELLO_MS) and embedders. */
void proc_keeper_set_hello_ms(int64_t ms);
/* Keepers killed because they said nothing within the hello bound. */
uint64_t proc_keeper_hello_timeouts(void);
/* The keeper's pid, 0 when there is none (or it is gone). */
pid_t proc_keeper_pid(const Proc *p);
/* The absolute path that was executed (the resolved argv[0]). */
const char *proc_program(const Proc *p);
bool proc_exited(const Proc *p); /* on_exit has been called */
/* Whether proc_stop was called before the child exited. */
bool proc_stop_requested(const Proc *p);
/* Appends every live process of the child's monitor (contain_members_in,
 * procs as it has it); nothing once the child has exited. */
void proc_members(const Proc *p, ReaperTable *procs, PidList *out);
/* Resource usage so far: the final figures after exit, else a live sample
 * from /proc where the OS offers one (zeros elsewhere). */
void proc_usage(const Proc *p, ProcExit *out);

#endif
