/*
 * What the files of the process module share, and nothing else includes:
 * the Proc record and the per-loop state, and the calls each file makes
 * into another. The module is one interface (proc.h) in four files, split
 * by concept:
 *   proc_loop.c     the per-loop bookkeeping: one SIGCHLD handle and read
 *                   buffer per loop, the list of its Procs, the streams
 *                   paused for the rest of a turn, loops torn down under
 *                   live children, the budget of grown pipes, the
 *                   descriptor limit
 *   proc_resolve.c  what runs and where, decided before anything is forked:
 *                   the options, the opened directory, the program's path
 *   proc_spawn.c    starting the child: pipes, fork, the child's side up to
 *                   exec and its failure report, then the pipes watched
 *   proc.c          a running child: its output, its exit, the drain bound,
 *                   stop, reap, close, and its resource usage
 */
#ifndef VIGIL_PROC_INTERNAL_H
#define VIGIL_PROC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <uv.h>

#include "proc/contain.h"
#include "base/error.h"
#include "proc/keeper_wire.h"
#include "proc/proc.h"

/* One read buffer per loop, shared by every pipe on it (see proc__alloc_cb). */
#define PROC_READ_BUF_SIZE (256 * 1024)
/* What the stdout/stderr pipes are grown to, so a fast writer needs fewer
 * reads; also the most a stream is drained at the drain deadline. */
#define PROC_PIPE_SIZE (1024 * 1024)
/* The most one stream reads in one turn of the loop before it waits for the
 * next turn (proc__read_cb). libuv goes on reading a stream while its reads
 * fill the buffer, up to 32 of them (8 MiB here) in one callback turn, and
 * a monitor takes about 1 ms per MiB to split, match and keep: a child
 * writing as fast as it can held the loop for several ms at a time, and
 * every other monitor's batch timer and pipe waited behind it
 * (bench/scale's fairness run). One buffer per turn bounds that wait to one
 * chunk's work (~0.25 ms) per flooding stream, and costs a flooding stream
 * an epoll_wait and an epoll_ctl per 256 KiB. */
#define PROC_READ_TURN_BYTES PROC_READ_BUF_SIZE

typedef struct ProcLoop ProcLoop;

/* What the module keeps per libuv loop. Created at the first spawn on the
 * loop; its signal handle is closed when its last Proc is freed, so the loop
 * can be closed. */
struct ProcLoop {
  uv_loop_t *loop;
  uv_signal_t sigchld; /* ref'd only while some child's exit is still to be
                          seen (proc_loop__update_ref) */
  uv_check_t resume;   /* active only while a stream is paused: restarts
                          the paused streams after this turn's poll */
  uv_idle_t later;     /* active only while a sweep is wanted (proc_loop__sweep_soon)
                          or an end waits (proc_loop__finish_soon) */
  bool sweep_wanted;
  Proc *finishing, *finishing_tail; /* ends waiting for their turn, in order */
  int handles;         /* sigchld, resume and later, until their close callbacks */
  char *buf;           /* the read buffer shared by every pipe of this loop */
  Proc *procs;         /* every Proc not yet freed, closed ones awaiting reaping too */
  Proc *paused;        /* Procs with a stream paused this turn (Proc.paused_next) */
  ProcLoop *next;
};

struct Proc {
  ProcLoop *pl;
  Proc *prev, *next; /* in pl->procs */
  pid_t pid;
  char *program;     /* the path that was executed */
  Contain *contain;  /* the child's group, descendants and limits */
  ProcCallbacks cb;
  void *data;
  uv_pipe_t out[2];  /* indexed by StreamId */
  bool reading[2];   /* out[i] is open: neither EOF nor cut yet */
  bool grown[2];     /* out[i]'s pipe counts against the grown-pipe budget */
  size_t turn_bytes[2]; /* read by out[i] in this turn's run of full reads */
  bool paused[2];    /* out[i] stopped for the rest of this turn */
  bool on_paused;    /* on pl->paused */
  Proc *paused_next;
  uv_pipe_t in;      /* stdin_data's write end, while the write is pending */
  bool in_open;
  uv_write_t in_req;
  char *in_data;     /* our copy of stdin_data until the write is done */
  uv_timer_t drain_timer;
  uv_timer_t grace_timer;
  int handles;       /* handles not yet through their close callback */
  uint64_t start_ns;
  uint64_t drain_ms;
  bool exit_seen;    /* waitid saw the exit; the zombie holds pid and pgid */
  bool reaped;       /* wait4 is done (or someone else reaped it) */
  bool finished;     /* on_exit has been called */
  bool stop_requested;
  uint64_t kill_at;  /* a stop's SIGKILL deadline in loop time (ms): 0 once
                      * SIGKILL was sent, UINT64_MAX when none is due */
  bool closed;       /* proc_close was called: no more callbacks */
  ProcExit exit;
  /* With a keeper (proc_keeper.c), the child's parent: */
  pid_t keeper;      /* its pid; 0: none, the engine is the parent */
  bool keeper_reaped;/* the keeper has exited and been reaped */
  bool ctl_open;     /* ctl is open (and counted in handles) */
  uv_pipe_t ctl;     /* the control socket */
  char ctlbuf[KEEPER_MSG_MAX_BYTES * 4];
  size_t ctllen;
  bool reap_asked;   /* kKeeperExitAck sent: the keeper reaps the child */
  bool finish_pending; /* on_exit waits for the reap (kKeeperReaped) */
  bool finish_queued;  /* waiting for its turn to finish (proc_loop__finish_soon) */
  Proc *finishing_next;
  bool contain_finished; /* contain_finish has run */
  bool keeper_adopted; /* the keeper is not our child: its socket tells its end */
  /* A keeper start waiting for the keeper's first word (proc_keeper.c): */
  bool starting;     /* no hello yet: pid is 0, the pipes are not read */
  uv_timer_t hello_timer; /* the hello bound; counted in handles */
  char *keeper_program; /* for a failure's message, until the hello */
  char *start_dir;      /* likewise, the child's directory */
  bool launching;    /* the keeper's clone and exec run off the loop
                        (proc_spawn.c): no keeper pid yet (keeper is 0) */
  bool stop_pending; /* proc_stop while starting: applied at the hello */
  int stop_sig;
  uint64_t stop_grace_ms;
};

/* --- proc_loop.c --------------------------------------------------------- */

/* The state for loop, created (with its SIGCHLD handle started) if needed.
 * Returns NULL with err set (spawn_failed) if the signal handle cannot be
 * started. */
ProcLoop *proc_loop__get(uv_loop_t *loop, VigilError *err);
/* Puts p on its loop's list (p->pl), where SIGCHLD finds it. */
void proc_loop__add(Proc *p);
/* Takes p off its loop's list, then releases the loop if it was the last. */
void proc_loop__remove(Proc *p);
/* Closes pl's signal handle (freeing pl) once nothing is left to wait for. */
void proc_loop__release_if_empty(ProcLoop *pl);
/* References the SIGCHLD handle exactly while an exit is still to be seen. */
void proc_loop__update_ref(ProcLoop *pl);
/* Whether p's loop was torn down under it (its handles closed by someone
 * else); if so its children are killed and left to be reaped later, and p
 * must not touch its handles. */
bool proc_loop__abandon_if_gone(Proc *p);

/* Sweeps for orphans (contain_sweep) once, at the end of this turn, for
 * every caller of this turn: a monitor's end asks for one, and SIGTERM
 * ending 1000 monitors in one turn swept 1000 times, each reading every
 * child of the engine (540 ms of the loop, measured under strace). */
void proc_loop__sweep_soon(ProcLoop *pl);

/* Finishes p (proc__finish_now), whose child's exit and streams are done,
 * in a later turn, a few at a time (PROC_FINISH_TURN_NS of them per turn, at least
 * one, at most PROC_FINISH_TURN_MAX): a monitor's end is the heaviest thing the loop does for it (its
 * containment finished, its last notification, its directory removed), and
 * 500 children ending at once had their keepers' words read in one turn,
 * every end done inside it, while the other monitors' batches waited (match
 * p99 "while ending" 720 ms in bench/scale with 500 monitors). p is not
 * freed while it waits; a p closed meanwhile is not finished. */
void proc_loop__finish_soon(Proc *p);
/* proc.c's end of a child: reaped, its containment finished, on_exit. */
void proc__finish_now(Proc *p);

/* Stops reading p's stream id for the rest of this loop turn (its read
 * budget is spent); the loop's resume check restarts it after the poll. */
void proc_loop__pause(Proc *p, StreamId id);
/* Takes p off its loop's paused list (when it is freed). */
void proc_loop__unpause(Proc *p);

/* The soft RLIMIT_NOFILE a child is to start with, when proc_raise_nofile
 * raised the engine's; false when the child keeps the engine's own. */
bool proc__child_nofile(struct rlimit *rl);

/* Grows an output pipe to PROC_PIPE_SIZE if the budget allows. Returns
 * whether it grew (then proc__pipe_release must follow when it closes). */
bool proc__pipe_grow(int fd);
/* A grown pipe was closed. */
void proc__pipe_release(void);

/* --- proc_resolve.c ------------------------------------------------------ */

/* What proc_spawn checks before it forks. *dir is opts->dir or, when that
 * is NULL, the directory opened into *own (the caller closes it, also on
 * error); *program is the path to execute (the caller frees it). */
int proc__prepare(const ProcSpawnOptions *opts, ProcDir *own, const ProcDir **dir,
                 char **program, VigilError *err);

/* --- proc.c -------------------------------------------------------------- */

/* Frees p once it is closed, reaped, every handle is through its close
 * callback, its keeper is reaped and its launch is over. */
void proc__free_if_done(Proc *p);

/* --- proc_spawn.c -------------------------------------------------------- */

/* Moves a new close-on-exec descriptor off 0, 1 or 2 (see proc_spawn.c).
 * Returns the descriptor, or -1 (the original closed) with errno set. */
int proc__fd_lift(int fd);

/* --- proc_keeper.c ------------------------------------------------------- */

/* What the engine's clone of a keeper launch needs (see proc_keeper.c). */
typedef struct {
  const char *path;         /* vigil-keeper */
  char **argv;              /* keeper_args_build */
  char **envp;              /* the child's environment */
  int src[KEEPER_FD_JOIN + CGROUP_JOIN_MAX]; /* the descriptor for each number */
  int nsrc;
  int report_fd;            /* the exec report's write end */
} ProcKeeperExec;

/* The clone entry that puts the descriptors in place and execs the keeper;
 * a failure is reported as kChildKeeper with its errno. */
int proc_keeper__entry(void *arg);
/* Starts reading p's control socket (fd becomes the handle's). While
 * p->starting, its first message is the hello (proc_keeper__hello_begin
 * armed the bound): the pipes are read from then on, and on_start told. */
int proc_keeper__watch(Proc *p, int fd);
/* The start failed before or at the hello (step: the child's failed step,
 * or 0 with what naming the cause; e its errno): nothing of the child is
 * ours, and on_start says why. */
void proc_keeper__start_failed(Proc *p, int step, const char *what, int e);
/* Starts reading p's control socket (proc_keeper__watch does, unless p is
 * launching: then the launch's end does, once the keeper's pid is known). */
int proc_keeper__read_start(Proc *p);
/* Arms p's hello bound (p->starting, its timer initialized here). */
void proc_keeper__hello_begin(Proc *p);
/* Fills err with a start failure's message: the child's failed step (a
 * proc_child.h kChild*) or the call `what`, and errno e. program, keeper
 * and dir name what the step was about. Returns -1. */
int proc__start_error(VigilError *err, int step, const char *what, int e, const char *program,
                      const char *keeper, const char *dir);
/* Starts reading p's output pipes (the keeper's hello came). */
void proc__read_start(Proc *p);
/* After a SIGCHLD: reaps the keeper if it has exited. Returns true when
 * there is no keeper (any more): the engine is then the child's parent,
 * or the child is reaped already. */
bool proc_keeper__check(Proc *p);
/* The engine has killed the survivors: the keeper may reap the child.
 * Returns false when there is no keeper to ask. */
bool proc_keeper__ack_exit(Proc *p);
/* Tells the keeper to stop everything and go (proc_close). An adopted
 * keeper (not our child: no SIGCHLD will say it went) is taken as gone
 * then, its child with it. */
void proc_keeper__stop(Proc *p);

/* --- proc.c -------------------------------------------------------------- */

/* The exit is now known (waitid, or the keeper's kKeeperExit): finishes p
 * or starts the drain bound. */
void proc__on_exit_seen(Proc *p);
/* Closes a handle of p unless it is already closing; p is freed after the
 * last one's close callback. */
void proc__close_handle(Proc *p, uv_handle_t *h);
/* Records the exit a keeper reported (kKeeperExit): exited with code, or
 * killed by sig. Once. */
void proc__note_exit(Proc *p, bool exited, int code, int sig);
/* The child is reaped (by the keeper: its usage in p->exit): calls on_exit
 * if it was waiting for that. */
void proc__on_reaped(Proc *p);

/* Acts on p's state after a SIGCHLD (see proc.c). */
void proc__check(Proc *p);
/* The libuv callbacks that read the output pipes and finish the stdin
 * write, for the handles proc_spawn.c starts. */
void proc__alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
void proc__read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
void proc__stdin_written(uv_write_t *req, int status);

/* Reaps pid at a later SIGCHLD if it is (or becomes) our exited child,
 * and forgets it at once if it is not our child at all: for a keeper
 * taken over, which is our child after a graceful restart (the same pid
 * execs itself) and init's after a crash. */
void proc__leftovers_add(pid_t pid);

#endif
