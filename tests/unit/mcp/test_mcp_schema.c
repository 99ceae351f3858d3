/*
 * Tests of the tool arguments' schema check (mcp_schema.h): a whole number
 * written as a real (5000.0) passes where an integer is wanted and reaches
 * the tool as the integer it is, not as 0; a real past 2^53 is not taken
 * for an integer; bounds are said as written; a string's length is said in
 * bytes, which is what it counts.
 */
#include <jansson.h>
#include <string.h>

#include "check.h"
#include "mcp/mcp_schema.h"

static const char schema_text[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1000,\"maximum\":3600000},"
    "\"ids\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},"
    "\"cpu\":{\"type\":\"number\"},"
    "\"label\":{\"type\":\"string\",\"maxLength\":4}},"
    "\"additionalProperties\":false}";

static json_t *
load(const char *text)
{
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  CHECK(j != NULL);
  return j;
}

TEST(test_mcp_schema_whole_reals_reach_the_tool_as_integers)
{
  json_t *schema = load(schema_text);
  json_t *args = load("{\"timeout_ms\":5000.0,\"ids\":[1.0,2,3.0],\"cpu\":2.0}");
  char msg[256] = "";
  CHECK(mcp_schema_check(schema, args, msg, sizeof msg));
  CHECK(json_is_integer(json_object_get(args, "timeout_ms")));
  CHECK_INT(json_integer_value(json_object_get(args, "timeout_ms")), 5000);
  json_t *ids = json_object_get(args, "ids");
  for (size_t i = 0; i < 3; i++) {
    CHECK(json_is_integer(json_array_get(ids, i)));
    CHECK_INT(json_integer_value(json_array_get(ids, i)), (long long)i + 1);
  }
  /* A number stays what it was written as. */
  CHECK(json_is_real(json_object_get(args, "cpu")));
  json_decref(args);
  json_decref(schema);
}

TEST(test_mcp_schema_refuses_what_is_not_an_integer)
{
  json_t *schema = load(schema_text);
  char msg[256] = "";
  json_t *args = load("{\"timeout_ms\":5000.5}");
  CHECK(!mcp_schema_check(schema, args, msg, sizeof msg));
  CHECK_STR(msg, "timeout_ms must be an integer");
  json_decref(args);
  /* Past 2^53 a real's digits are not the ones written. */
  args = load("{\"ids\":[1e300]}");
  CHECK(!mcp_schema_check(schema, args, msg, sizeof msg));
  CHECK_STR(msg, "ids[0] must be an integer");
  json_decref(args);
  args = load("{\"timeout_ms\":3600001.0}");
  CHECK(!mcp_schema_check(schema, args, msg, sizeof msg));
  CHECK_STR(msg, "timeout_ms must be 1000..3600000, got 3600001");
  json_decref(args);
  json_decref(schema);
}

TEST(test_mcp_schema_says_a_length_in_bytes)
{
  json_t *schema = load(schema_text);
  char msg[256] = "";
  json_t *args = load("{\"label\":\"\\u20ac\\u20ac\"}"); /* two characters, six bytes */
  CHECK(!mcp_schema_check(schema, args, msg, sizeof msg));
  CHECK_STR(msg, "label must be 0..4 bytes long (UTF-8), got 6");
  json_decref(args);
  json_decref(schema);
}

int
main(void)
{
  RUN(test_mcp_schema_whole_reals_reach_the_tool_as_integers);
  RUN(test_mcp_schema_refuses_what_is_not_an_integer);
  RUN(test_mcp_schema_says_a_length_in_bytes);
  return check_summary();
}
