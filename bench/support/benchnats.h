/*
 * A private NATS server with JetStream for a benchmark (bench/fleet).
 *
 * bench_nats_start picks a free port on 127.0.0.1, starts `nats-server -js
 * -sd DIR/js -a 127.0.0.1 -p PORT` with its log in DIR/nats-server.log,
 * records it with bench_rpc_also_stop (so a failure or a signal stops it
 * after the engines), and returns once a client has connected to it and
 * JetStream has answered, or dies saying why. bench_nats_stop sends SIGTERM
 * and waits for the exit. The server is the benchmark's alone: its store is
 * under the benchmark's temp dir and nothing else knows its port.
 */
#ifndef VIGIL_BENCH_NATS_H
#define VIGIL_BENCH_NATS_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct {
  char path[4096];  /* the nats-server program */
  char dir[256];    /* DIR: js/ (the store) and nats-server.log */
  char url[64];     /* nats://127.0.0.1:PORT */
  int port;
  pid_t pid;        /* 0 once stopped */
} BenchNats;

/* Finds nats-server: arg when given, else the first of $PATH, /usr/sbin,
 * /usr/local/bin, /usr/bin that can be run. Returns false (having said so,
 * prefixed by name) when there is none. */
bool bench_nats_find(const char *name, const char *arg, char *out, size_t cap);

/* Starts n->path on a free port with its store and log in dir (which must
 * exist); dies (bench_rpc_die) when it cannot start or does not answer with
 * JetStream within 15 s. */
void bench_nats_start(BenchNats *n, const char *dir);

/* SIGTERM, then up to 15 s for the exit (SIGKILL after that). Returns
 * whether it exited by itself. Idempotent. */
bool bench_nats_stop(BenchNats *n);

#endif
