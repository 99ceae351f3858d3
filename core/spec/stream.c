/*
 * The one spelling of a stream id (see stream.h).
 */
#include "spec/stream.h"

const char *
stream_name(int stream)
{
  return stream == kStreamStderr ? "stderr" : "stdout";
}
