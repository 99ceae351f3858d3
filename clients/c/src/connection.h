/*
 * The client object shared by the two halves of the library: transport.c
 * makes and closes the descriptor (a Unix socket, or a spawned
 * `vigild --stdio`), client.c holds the conversation on it (requests
 * awaiting answers, the notification queue, the framer).
 */
#ifndef VIGIL_CLIENT_CONNECTION_H
#define VIGIL_CLIENT_CONNECTION_H

#include <sys/types.h>

#include "link/frame.h"
#include "vigil/client.h"

/* What became of a request. */
typedef enum {
  kPendingWaiting,   /* sent, no answer yet */
  kPendingAnswered,  /* answered; the answer waits to be taken */
  kPendingAbandoned, /* given up at its timeout: the answer is dropped when it comes */
} PendingState;

typedef struct {
  uint32_t msgid;
  PendingState state;
  struct vigil_message *answer;
} Pending;

/* A notification read and not yet taken. */
typedef struct QueuedNotification {
  struct QueuedNotification *next;
  vigil_notification n;
} QueuedNotification;

/* Where the limits of vigil_client_set_limit start. */
#define CLIENT_DEFAULT_MESSAGE_BYTES ((size_t)16 << 20)
#define CLIENT_DEFAULT_REQUEST_BYTES ((size_t)1 << 20)
#define CLIENT_DEFAULT_QUEUED 4096

/* The longest description of the peer kept for messages. */
#define CLIENT_WHERE_MAX 160

struct vigil_client {
  int fd;                         /* non-blocking, close-on-exec */
  pid_t engine_pid;               /* a spawned engine's, else -1 */
  char where[CLIENT_WHERE_MAX];   /* "the engine at PATH", "vigild (pid N)" */

  Frame frame;                    /* its max_message is the message limit */
  size_t max_request;
  size_t max_queued;

  uint32_t next_msgid;
  Pending pending[VIGIL_CLIENT_PENDING_MAX];
  size_t npending;

  QueuedNotification *head, *tail;
  size_t queued;
  uint64_t lost_carry;            /* dropped with nothing after them yet to carry the count */

  bool failed;                    /* the connection is unusable; failure says why */
  vigil_error failure;
};

/* A client on fd (taken over) with the default limits; NULL when memory
 * runs out (fd is then closed). */
vigil_client *client_new(int fd, pid_t engine_pid, const char *where, vigil_error *err);

/* Frees everything client.c holds (not the descriptor, not c). */
void client_release(vigil_client *c);

/* Marks c failed with err's code and message; returns -1. */
int client_fail(vigil_client *c, vigil_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
