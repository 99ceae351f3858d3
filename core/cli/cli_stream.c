/*
 * Following a monitor's lines (see cli_stream.h): fetch what is new, wait
 * for more, until the monitor has ended and its last lines are read.
 */
#include "cli/cli_stream.h"

#include "cli/cli_obj.h"

/* monitor_wait's own ceiling on timeout_ms; longer waits are a series. */
#define CLI_STREAM_WAIT_CHUNK_MS 3600000

/* Reads the lines after s->next_seq and hands each over. Returns
 * kCliStreamEnded when all were handed over (the caller goes on), Done or
 * Failed. */
static CliStreamEnd
cli_stream_fetch(CliClient *c, CliStream *s)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", s->monitor_id);
  cli_req_uint(&req, "since_sequence", s->next_seq);
  CliReply reply;
  int rc = cli_client_call(c, "monitor_output", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return c->err.kind == kCliErrInterrupted ? kCliStreamInterrupted : kCliStreamFailed;
  const msgpack_object *lines = cli_obj_get(reply.result, "lines");
  CliStreamEnd end = kCliStreamEnded;
  for (uint32_t i = 0; lines && lines->type == MSGPACK_OBJECT_ARRAY && i < lines->via.array.size;
       i++) {
    const msgpack_object *line = &lines->via.array.ptr[i];
    uint64_t seq = cli_obj_get_uint(line, "seq", s->next_seq + 1);
    if (seq > s->next_seq + 1)
      s->missed += seq - s->next_seq - 1;
    if (seq > s->next_seq)
      s->next_seq = seq;
    if (s->on_line(s->ctx, line)) {
      end = kCliStreamDone;
      break;
    }
  }
  cli_reply_free(&reply);
  return end;
}

CliStreamEnd
cli_stream_follow(CliClient *c, CliStream *s, int64_t deadline)
{
  for (;;) {
    CliStreamEnd end = cli_stream_fetch(c, s);
    if (end != kCliStreamEnded)
      return end;
    int64_t left = CLI_STREAM_WAIT_CHUNK_MS;
    if (deadline >= 0) {
      left = deadline - cli_now_ms();
      if (left <= 0)
        return kCliStreamDeadline;
      if (left > CLI_STREAM_WAIT_CHUNK_MS)
        left = CLI_STREAM_WAIT_CHUNK_MS;
    }
    CliReq req;
    cli_req_init(&req);
    cli_req_str(&req, "monitor_id", s->monitor_id);
    cli_req_str(&req, "for", "output");
    cli_req_uint(&req, "since_sequence", s->next_seq);
    cli_req_uint(&req, "timeout_ms", (uint64_t)left);
    CliReply reply;
    int rc = cli_client_call(c, "monitor_wait", &req, left + CLI_CALL_TIMEOUT_MS, &reply);
    cli_req_free(&req);
    if (rc != 0)
      return c->err.kind == kCliErrInterrupted ? kCliStreamInterrupted : kCliStreamFailed;
    bool running = cli_obj_get_is(reply.result, "state", "running");
    cli_reply_free(&reply);
    if (!running) {
      /* Ended: everything it printed is in the ring now; read it and stop. */
      end = cli_stream_fetch(c, s);
      return end == kCliStreamDone ? kCliStreamDone : end;
    }
  }
}
