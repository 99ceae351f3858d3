/*
 * Tests of a hook's input (hook_input.h): the inputs Claude Code, Codex,
 * Gemini CLI and Cursor send are read into the struct; each field vigil
 * uses is refused when it has the wrong type or form, naming the field, the
 * rule and the value; duplicate keys, non-objects and non-JSON are refused;
 * and the read from a pipe is bounded in size and in time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cli/hook_input.h"
#include "base/utf8.h"

static char err[HOOK_INPUT_ERROR_MAX];

static int
parse(const char *json, HookInput *in)
{
  err[0] = '\0';
  return hook_input_parse(json, strlen(json), in, err, sizeof err);
}

/* json is refused with a message containing each of the words (NULL-ended). */
static void
check_refused(const char *json, const char *const *words, int line)
{
  HookInput in;
  if (parse(json, &in) != -1) {
    check_fail(__FILE__, line, "accepted: %s", json);
    hook_input_free(&in);
    return;
  }
  if (strncmp(err, "hook input: ", 12) != 0)
    check_fail(__FILE__, line, "message does not start with \"hook input: \": %s", err);
  if (!utf8_valid(err, strlen(err)))
    check_fail(__FILE__, line, "message is not valid UTF-8: %s", err);
  for (size_t i = 0; words[i]; i++)
    if (strstr(err, words[i]) == NULL)
      check_fail(__FILE__, line, "message lacks \"%s\": %s", words[i], err);
  CHECK(in.root == NULL && in.session_id == NULL);
}

#define REFUSED(json, ...) check_refused(json, (const char *const[]){__VA_ARGS__, NULL}, __LINE__)

TEST(test_hook_input_claude_code_stop_and_tool_use)
{
  HookInput in;
  CHECK_INT(parse("{\"session_id\":\"3c07f08f-e544-47b9-898a-f169f651788c\","
                  "\"transcript_path\":\"/home/u/.claude/projects/p/3c07.jsonl\","
                  "\"cwd\":\"/home/u/project\",\"permission_mode\":\"default\","
                  "\"hook_event_name\":\"Stop\",\"stop_hook_active\":false,"
                  "\"unknown_future_field\":{\"x\":[1,2]}}",
                  &in),
            0);
  CHECK_STR(in.session_id, "3c07f08f-e544-47b9-898a-f169f651788c");
  CHECK_STR(in.event, "Stop");
  CHECK_STR(in.cwd, "/home/u/project");
  CHECK_STR(in.transcript_path, "/home/u/.claude/projects/p/3c07.jsonl");
  CHECK_INT(in.stop_hook_active, 0);
  CHECK(in.tool_name == NULL && in.tool_input == NULL && in.prompt == NULL);
  hook_input_free(&in);

  CHECK_INT(parse("{\"session_id\":\"s1\",\"hook_event_name\":\"PostToolUse\",\"cwd\":\"/p\","
                  "\"tool_name\":\"mcp__vigil__monitor_start\","
                  "\"tool_input\":{\"command\":\"npm run dev\"},\"tool_response\":{\"ok\":true}}",
                  &in),
            0);
  CHECK_STR(in.tool_name, "mcp__vigil__monitor_start");
  CHECK(json_is_object(in.tool_input));
  CHECK_INT(in.stop_hook_active, -1);
  hook_input_free(&in);

  CHECK_INT(parse("{\"session_id\":\"s1\",\"hook_event_name\":\"UserPromptSubmit\","
                  "\"prompt\":\"fix the \\u00e9 bug\\nplease\",\"cwd\":\"/p\"}",
                  &in),
            0);
  CHECK_STR(in.prompt, "fix the \xc3\xa9 bug\nplease");
  hook_input_free(&in);

  CHECK_INT(parse("{\"session_id\":\"s1\",\"hook_event_name\":\"SessionStart\",\"source\":\"resume\","
                  "\"cwd\":\"/p\",\"stop_hook_active\":true}",
                  &in),
            0);
  CHECK_STR(in.source, "resume");
  CHECK_INT(in.stop_hook_active, 1);
  hook_input_free(&in);
}

TEST(test_hook_input_cursor_aliases)
{
  HookInput in;
  CHECK_INT(parse("{\"conversation_id\":\"cdefee2d-2727\",\"generation_id\":\"g\","
                  "\"hook_event_name\":\"stop\",\"status\":\"completed\",\"loop_count\":0,"
                  "\"workspace_roots\":[\"/work/app\",\"/work/lib\"]}",
                  &in),
            0);
  CHECK_STR(in.session_id, "cdefee2d-2727");
  CHECK_STR(in.cwd, "/work/app");
  CHECK_STR(in.status, "completed");
  CHECK(in.cursor_version == NULL);
  hook_input_free(&in);
  /* Cursor says who it is: a Claude Code hook it runs must know. */
  CHECK_INT(parse("{\"conversation_id\":\"c\",\"hook_event_name\":\"stop\","
                  "\"cursor_version\":\"2.0.77\",\"workspace_roots\":[\"/w\"]}",
                  &in),
            0);
  CHECK_STR(in.cursor_version, "2.0.77");
  hook_input_free(&in);
  /* Cursor's tool_input is the JSON text. */
  CHECK_INT(parse("{\"conversation_id\":\"c\",\"hook_event_name\":\"beforeMCPExecution\","
                  "\"tool_name\":\"monitor_list\",\"tool_input\":\"{\\\"limit\\\": 3}\","
                  "\"cwd\":\"/x\",\"workspace_roots\":[\"/work/app\"]}",
                  &in),
            0);
  CHECK(json_is_string(in.tool_input));
  CHECK_STR(in.cwd, "/x"); /* cwd wins over the workspace root */
  hook_input_free(&in);
}

/* What vigil's OpenCode plugin hands `vigil hook opencode EVENT`: the
 * session's id, OpenCode's dotted event name, the project's directory. */
TEST(test_hook_input_opencode_plugin_events_are_dotted)
{
  HookInput in;
  CHECK_INT(parse("{\"session_id\":\"ses_ddf48317bffeCEYS5T2KGZRLCJ\","
                  "\"hook_event_name\":\"tool.execute.after\",\"cwd\":\"/w/app\"}",
                  &in),
            0);
  CHECK_STR(in.event, "tool.execute.after");
  hook_input_free(&in);
  CHECK_INT(parse("{\"session_id\":\"ses_1\",\"hook_event_name\":\"session.status\","
                  "\"status\":\"busy\"}",
                  &in),
            0);
  CHECK_STR(in.status, "busy");
  hook_input_free(&in);
  REFUSED("{\"session_id\":\"s\",\"hook_event_name\":\"session/idle\"}", "hook_event_name",
          "[A-Za-z0-9_.]", "\"session/idle\"");
}

TEST(test_hook_input_refusals_name_field_rule_and_value)
{
  REFUSED("{\"hook_event_name\":\"Stop\"}", "session_id is missing");
  REFUSED("{\"session_id\":\"s\"}", "hook_event_name is missing");
  REFUSED("{\"session_id\":\"../../etc\",\"hook_event_name\":\"Stop\"}", "session_id",
          "[A-Za-z0-9._:-]", "\"../../etc\"");
  REFUSED("{\"session_id\":42,\"hook_event_name\":\"Stop\"}", "session_id", "got a number");
  REFUSED("{\"session_id\":\"\",\"hook_event_name\":\"Stop\"}", "session_id", "1..128");
  REFUSED("{\"session_id\":\"s\",\"hook_event_name\":\"Stop now\"}", "hook_event_name",
          "\"Stop now\"");
  REFUSED("{\"session_id\":\"s\",\"hook_event_name\":\"Stop\",\"cwd\":\"relative/dir\"}", "cwd",
          "absolute path", "\"relative/dir\"");
  REFUSED("{\"session_id\":\"s\",\"hook_event_name\":\"Stop\",\"cwd\":\"/a\\nb\"}", "cwd",
          "control characters", "\"/a\\nb\"");
  REFUSED("{\"session_id\":\"s\",\"hook_event_name\":\"Stop\",\"transcript_path\":null}",
          "transcript_path", "got null");
  REFUSED("{\"session_id\":\"s\",\"hook_event_name\":\"Stop\",\"stop_hook_active\":\"false\"}",
          "stop_hook_active must be a boolean", "\"false\"");
  REFUSED("{\"session_id\":\"s\",\"hook_event_name\":\"Stop\",\"tool_input\":[1]}", "tool_input",
          "got an array");
  REFUSED("{\"session_id\":\"s\",\"hook_event_name\":\"Stop\",\"tool_name\":\"a\\u001bb\"}",
          "tool_name", "control characters");
  REFUSED("{\"conversation_id\":\"c\",\"hook_event_name\":\"stop\",\"workspace_roots\":[\"x\"]}",
          "workspace_roots[0]", "\"x\"");
  REFUSED("{\"conversation_id\":\"c\",\"hook_event_name\":\"stop\",\"workspace_roots\":\"/x\"}",
          "workspace_roots must be an array");
  /* Two values for one field: which one would be used? Neither. */
  REFUSED("{\"session_id\":\"a\",\"session_id\":\"b\",\"hook_event_name\":\"Stop\"}",
          "not JSON", "duplicate");
  REFUSED("[{\"session_id\":\"a\",\"hook_event_name\":\"Stop\"}]", "one JSON object");
  REFUSED("{\"session_id\":\"a\",", "not JSON");
  REFUSED("{\"session_id\":\"a\\u0000b\",\"hook_event_name\":\"Stop\"}", "not JSON");
  REFUSED("\xff\xfe{}", "not JSON");
}

TEST(test_hook_input_long_values_are_cut_in_messages)
{
  /* A long session id with multi-byte characters: the message quotes a cut
   * at a character boundary and stays within its bound. */
  char json[4096];
  char id[1200] = "";
  for (int i = 0; i < 300; i++)
    strcat(id, "\xc3\xa9");
  snprintf(json, sizeof json, "{\"session_id\":\"%s\",\"hook_event_name\":\"Stop\"}", id);
  REFUSED(json, "session_id", "(cut)");
  HookInput in;
  char small[40];
  CHECK_INT(hook_input_parse(json, strlen(json), &in, small, sizeof small), -1);
  CHECK(strlen(small) < sizeof small);
  CHECK(utf8_valid(small, strlen(small)));
  /* A prompt over its bound. */
  size_t big = HOOK_PROMPT_MAX + 2;
  char *p = malloc(big + 100);
  int n = snprintf(p, big + 100, "{\"session_id\":\"s\",\"hook_event_name\":\"x\",\"prompt\":\"");
  memset(p + n, 'a', HOOK_PROMPT_MAX + 1);
  strcpy(p + n + HOOK_PROMPT_MAX + 1, "\"}");
  CHECK_INT(hook_input_parse(p, strlen(p), &in, err, sizeof err), -1);
  CHECK(strstr(err, "prompt must be a string of at most 1048576 bytes") != NULL);
  free(p);
}

/* A pipe holding text, its write end closed unless keep_open. */
static int
pipe_with(const char *text, int *write_end)
{
  int fds[2];
  if (pipe(fds) != 0)
    abort();
  if (write(fds[1], text, strlen(text)) != (ssize_t)strlen(text))
    abort();
  if (write_end)
    *write_end = fds[1];
  else
    close(fds[1]);
  return fds[0];
}

TEST(test_hook_input_read_is_bounded)
{
  HookInput in;
  int fd = pipe_with("{\"session_id\":\"s\",\"hook_event_name\":\"Stop\",\"cwd\":\"/p\"}\n", NULL);
  CHECK_INT(hook_input_read(fd, HOOK_INPUT_MAX_BYTES, 5000, &in, err, sizeof err), 0);
  CHECK_STR(in.event, "Stop");
  CHECK(in.bytes > 0);
  hook_input_free(&in);
  close(fd);

  fd = pipe_with("{\"session_id\":\"s\",\"hook_event_name\":\"Stop\",\"prompt\":\"0123456789\"}",
                 NULL);
  CHECK_INT(hook_input_read(fd, 32, 5000, &in, err, sizeof err), -1);
  CHECK(strstr(err, "more than 32 bytes on stdin") != NULL);
  close(fd);

  fd = pipe_with("", NULL);
  CHECK_INT(hook_input_read(fd, HOOK_INPUT_MAX_BYTES, 5000, &in, err, sizeof err), -1);
  CHECK(strstr(err, "stdin was empty") != NULL);
  close(fd);

  /* A writer that never closes: refused at the deadline, whatever it sent. */
  int w;
  fd = pipe_with("{\"session_id\":\"s\",\"hook_event_name\":\"Stop\"}", &w);
  CHECK_INT(hook_input_read(fd, HOOK_INPUT_MAX_BYTES, 200, &in, err, sizeof err), -1);
  CHECK(strstr(err, "stdin did not end within 200 ms") != NULL);
  close(w);
  close(fd);

  CHECK_INT(hook_input_read(-1, HOOK_INPUT_MAX_BYTES, 200, &in, err, sizeof err), -1);
  CHECK(strstr(err, "hook input: ") == err);
}

int
main(void)
{
  RUN(test_hook_input_claude_code_stop_and_tool_use);
  RUN(test_hook_input_cursor_aliases);
  RUN(test_hook_input_opencode_plugin_events_are_dotted);
  RUN(test_hook_input_refusals_name_field_rule_and_value);
  RUN(test_hook_input_long_values_are_cut_in_messages);
  RUN(test_hook_input_read_is_bounded);
  return check_summary();
}
