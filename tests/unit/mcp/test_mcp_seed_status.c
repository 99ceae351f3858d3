/*
 * Tests of the seeds' task status (mcp_seed_status, mcp_tools.h): how a
 * monitor's state and exit code read to users of the seed profiles, in
 * particular that a program the engine lost across a restart (state
 * failed) is never said to have been killed.
 */
#include <jansson.h>

#include "check.h"
#include "mcp/mcp_tools.h"

TEST(test_mcp_seed_status_of_each_state)
{
  json_t *zero = json_integer(0), *one = json_integer(1), *none = json_null();
  CHECK_STR(mcp_seed_status(NULL, none), "running");
  CHECK_STR(mcp_seed_status("running", none), "running");
  CHECK_STR(mcp_seed_status("exited", zero), "completed");
  CHECK_STR(mcp_seed_status("exited", one), "failed");
  CHECK_STR(mcp_seed_status("exited", none), "failed"); /* a signal not sent by vigil */
  CHECK_STR(mcp_seed_status("failed", none), "failed");
  CHECK_STR(mcp_seed_status("stopped", none), "killed");
  CHECK_STR(mcp_seed_status("timed_out", none), "killed");
  CHECK_STR(mcp_seed_status("idle_timeout", none), "killed");
  CHECK_STR(mcp_seed_status("overloaded", none), "killed");
  json_decref(zero);
  json_decref(one);
  json_decref(none);
}

int
main(void)
{
  RUN(test_mcp_seed_status_of_each_state);
  return check_summary();
}
