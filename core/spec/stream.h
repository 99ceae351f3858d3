/*
 * Which of a child's two output streams a byte, a line or a capture came
 * from. The id travels through every stage (proc, linebuf, ring, batch,
 * notification, policy, wire), so it lives here, in a header that holds
 * only this type and its one spelling: the names are the ones the wire
 * (docs/protocol.md) and the policies' `line.stream` use.
 */
#ifndef VIGIL_STREAM_H
#define VIGIL_STREAM_H

typedef enum { kStreamStdout = 0, kStreamStderr = 1 } StreamId;

/* "stdout" or "stderr" (anything that is not kStreamStderr is stdout). */
const char *stream_name(int stream);

#endif
