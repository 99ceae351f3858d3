/*
 * Tests of vigil mcp's tool tables (mcp_tools.h): every row is a function
 * or a pass-through, and a pass-through row (McpTool.method) may only send
 * the engine what its method takes, since its arguments go through as
 * they are: each property of its inputSchema is one of the method's
 * arguments (api_method_args), its wait argument is an integer it has, and
 * a row that defaults cwd has a cwd. A row that broke this would be
 * refused by the engine ("unknown argument") at the first call.
 */
#include <jansson.h>
#include <string.h>

#include "api/api.h"
#include "check.h"
#include "mcp/mcp_ready.h"
#include "mcp/mcp_tools.h"

static const McpTool *const test_tables[] = {mcp_vigil_tools, mcp_watch_process_tools,
                                             mcp_monitor_tools, mcp_process_tools,
                                             mcp_hermes_tools};
#define TEST_TABLES (sizeof test_tables / sizeof test_tables[0])

static bool
test_in(const char *const *list, const char *name)
{
  for (size_t i = 0; list && list[i]; i++)
    if (strcmp(list[i], name) == 0)
      return true;
  return false;
}

/* The properties of a row's inputSchema (owned), or NULL when it does not
 * parse as an object schema. */
static json_t *
test_properties(const McpTool *t)
{
  json_t *schema = json_loads(t->input_schema, 0, NULL);
  json_t *props = json_incref(json_object_get(schema, "properties"));
  json_decref(schema);
  if (!json_is_object(props)) {
    json_decref(props);
    return NULL;
  }
  return props;
}

TEST(test_mcp_tools_row_is_a_function_or_a_method)
{
  size_t rows = 0, passes = 0;
  for (size_t k = 0; k < TEST_TABLES; k++) {
    for (const McpTool *t = test_tables[k]; t->name; t++, rows++) {
      if ((t->fn == NULL) == (t->method == NULL))
        check_fail(__FILE__, __LINE__, "%s: needs exactly one of fn and method", t->name);
      if (t->fn != NULL && (t->wait_arg || t->default_cwd || t->wait_default || t->wait_in_s))
        check_fail(__FILE__, __LINE__, "%s: a function with a pass-through's fields", t->name);
      CHECK(t->description != NULL && t->output_schema != NULL);
      json_t *props = test_properties(t);
      if (props == NULL)
        check_fail(__FILE__, __LINE__, "%s: its inputSchema has no properties object", t->name);
      json_decref(props);
      passes += t->method != NULL;
    }
  }
  CHECK(rows > 20);
  /* The vigil profile's monitor_start, monitor_stop, monitor_list,
   * monitor_output, monitor_wait and process_run. */
  CHECK_INT(passes, 6);
}

TEST(test_mcp_tools_pass_through_sends_only_what_the_method_takes)
{
  for (size_t k = 0; k < TEST_TABLES; k++) {
    for (const McpTool *t = test_tables[k]; t->name; t++) {
      if (t->method == NULL)
        continue;
      const char *const *args = api_method_args(t->method);
      if (args == NULL) {
        check_fail(__FILE__, __LINE__, "%s: no engine method \"%s\"", t->name, t->method);
        continue;
      }
      json_t *props = test_properties(t);
      const char *key;
      json_t *v;
      json_object_foreach(props, key, v) {
        /* wait_ready is the adapter's own, taken out before the call
         * (mcp_ready.h). */
        bool adapters = strcmp(t->method, "monitor_start") == 0 && strcmp(key, MCP_READY_ARG) == 0;
        if (!test_in(args, key) && !adapters)
          check_fail(__FILE__, __LINE__, "%s: argument \"%s\" is not one %s takes", t->name,
                     key, t->method);
      }
      if (t->wait_arg != NULL) {
        const char *type =
          json_string_value(json_object_get(json_object_get(props, t->wait_arg), "type"));
        if (type == NULL || strcmp(type, "integer") != 0)
          check_fail(__FILE__, __LINE__, "%s: wait_arg \"%s\" is not an integer argument",
                     t->name, t->wait_arg);
      }
      if (t->default_cwd && json_object_get(props, "cwd") == NULL)
        check_fail(__FILE__, __LINE__, "%s: defaults cwd but takes none", t->name);
      json_decref(props);
    }
  }
}

int
main(void)
{
  RUN(test_mcp_tools_row_is_a_function_or_a_method);
  RUN(test_mcp_tools_pass_through_sends_only_what_the_method_takes);
  return check_summary();
}
