/*
 * What the engine and a keeper (docs/restart.md) agree on: the descriptors
 * a keeper is started with, its arguments, the messages on its control
 * socket, and the exit file it writes when no engine is there to be told.
 *
 * A message is a header of two 32-bit words (type, number of fields) and up
 * to KEEPER_MSG_MAX_FIELDS signed 64-bit fields, in the machine's byte
 * order: both ends run on one machine. kKeeperStop keeps its number and
 * shape in every version, so that any engine can stop any keeper.
 */
#ifndef VIGIL_KEEPER_WIRE_H
#define VIGIL_KEEPER_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KEEPER_PROTOCOL 1
#define KEEPER_PROGRAM "vigil-keeper"

/* A keeper's descriptors at exec. 0, 1 and 2 are its child's stdin, stdout
 * and stderr (the keeper closes its own copies once the child runs). */
enum {
  KEEPER_FD_CONTROL = 3, /* a socket to the engine that started it */
  KEEPER_FD_OUT = 4,     /* the read end of the child's stdout pipe (a duplicate) */
  KEEPER_FD_ERR = 5,     /* ... of its stderr pipe */
  KEEPER_FD_CWD = 6,     /* the directory the child runs in */
  KEEPER_FD_STATE = 7,   /* the monitor's directory in the state directory */
  KEEPER_FD_LISTEN = 8,  /* a listening socket there, for a later engine */
  KEEPER_FD_JOIN = 9,    /* and up: cgroup.procs files the child joins */
};

/* The names of the keeper's files in its monitor's directory. */
#define KEEPER_SOCKET_NAME "keeper.sock"
#define KEEPER_EXIT_NAME "exit"
#define KEEPER_SPOOL_OUT_NAME "stdout"
#define KEEPER_SPOOL_ERR_NAME "stderr"
/* The order in which a detached keeper spooled its chunks of the two
 * streams: records of KEEPER_ORDER_RECORD bytes (u32 KEEPER_ORDER_MAGIC,
 * u32 stream, u64 the spool's head after the chunk), appended one write
 * each, at most KEEPER_ORDER_MAX of them; past that, and in a torn last
 * record, the order is not known and a replay takes the rest stream by
 * stream. */
#define KEEPER_ORDER_NAME "order"
#define KEEPER_ORDER_RECORD 16
#define KEEPER_ORDER_MAGIC 0x4452304fu
#define KEEPER_ORDER_MAX 65536

/* What a keeper is told in its arguments (its environment is its child's). */
typedef struct {
  int njoin;                /* cgroup.procs descriptors from KEEPER_FD_JOIN */
  int64_t rlimit_as;        /* 0: none */
  int64_t rlimit_nproc;     /* 0: none */
  bool nofile_restore;      /* the child starts with this soft RLIMIT_NOFILE */
  uint64_t nofile_cur, nofile_max;
  int64_t unattended_ms;    /* keeper.unattended_ms */
  int64_t kill_grace_ms;    /* monitor.kill_grace_ms */
  int64_t drain_ms;         /* monitor.exit_drain_ms */
  const char *path;         /* the program, resolved */
  char *const *argv;        /* its argv, NULL-terminated */
} KeeperArgs;

/* The keeper's argv for a: "vigil-keeper", protocol, the numbers, "--",
 * path, then a's argv. Allocated as one block (free it); NULL-terminated. */
char **keeper_args_build(const char *keeper_path, const KeeperArgs *a);
/* Parses what keeper_args_build made. Returns false (a untouched but for
 * what was read) when it is not that: another protocol, a bad number. */
bool keeper_args_parse(int argc, char **argv, KeeperArgs *a);

typedef enum {
  kKeeperStop = 1,     /* engine -> keeper, every version: kill everything,
                          reap, write the exit file if detached, exit */
  kKeeperExitAck = 2,  /* engine -> keeper: survivors are killed; reap the child */
  kKeeperAttach = 3,   /* a later engine -> a detached keeper: it takes over */
  kKeeperHello = 10,   /* keeper -> engine: protocol, keeper pid, child pid */
  kKeeperFailed = 11,  /* keeper -> engine: step (proc_child.h), errno */
  kKeeperExit = 12,    /* keeper -> engine: how (1 exited, 2 killed), code or signal */
  kKeeperReaped = 13,  /* keeper -> engine: cpu_us, maxrss_kib */
  kKeeperAttached = 14,/* keeper -> a later engine: the child's pid, 1 if it
                          has exited, how (1 exited, 2 killed), code or
                          signal, which pipes come with it (SCM_RIGHTS, bit
                          1 stdout, bit 2 stderr; those at EOF do not) */
} KeeperMsgType;

#define KEEPER_MSG_MAX_FIELDS 6
#define KEEPER_MSG_MAX_BYTES (8 + 8 * KEEPER_MSG_MAX_FIELDS)

typedef struct {
  uint32_t type;
  uint32_t n;
  int64_t v[KEEPER_MSG_MAX_FIELDS];
} KeeperMsg;

/* Writes m into buf; returns its length. */
size_t keeper_msg_encode(const KeeperMsg *m, char *buf);
/* Decodes one message from the front of buf: returns the bytes it took, 0
 * when more are needed, -1 when it is malformed (too many fields). */
ssize_t keeper_msg_decode(const char *buf, size_t len, KeeperMsg *out);
/* Sends m on a socket in one write (it is small); false when the write
 * failed or was short (the peer is gone). */
bool keeper_msg_send(int fd, const KeeperMsg *m);

/* Sends m with the descriptors fds[0..nfds) (SCM_RIGHTS). */
bool keeper_msg_send_fds(int fd, const KeeperMsg *m, const int *fds, int nfds);
/* Receives one whole message (blocking, after poll) and up to *nfds
 * descriptors with it, which the caller owns (*nfds set to how many). */
bool keeper_msg_recv_fds(int fd, KeeperMsg *m, int *fds, int *nfds);

/* How a child ended, as a keeper records it in KEEPER_EXIT_NAME when it
 * had no engine to tell. */
typedef struct {
  bool exited;              /* false: the status is unknown */
  int exit_code;            /* -1 when killed by a signal */
  int term_signal;          /* 0 when it exited */
  const char *cause;        /* "exited", "unattended", "stopped" or "removed" (its
                               directory was: keeper.c) */
  uint64_t cpu_us;
  uint64_t maxrss_kib;
  int64_t ended_unix_ms;    /* when the keeper saw the exit */
} KeeperExit;

#define KEEPER_EXIT_MAX_BYTES 512

/* The file's text for x (at most KEEPER_EXIT_MAX_BYTES). */
size_t keeper_exit_format(const KeeperExit *x, char *buf, size_t cap);
/* Parses it back; cause points into a static string. False: not one. */
bool keeper_exit_parse(const char *text, size_t len, KeeperExit *x);

#endif
