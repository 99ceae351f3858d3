/*
 * libFuzzer harness for the editors of `vigil setup` (setup_json.c,
 * setup_toml.c, setup_yaml.c): a harness's config file is whatever the
 * person (or anything else that writes there) put in it.
 *
 * Input: a mode byte (0 JSON, 1 TOML, 2 YAML, by its value mod 3), then the
 * file's text.
 *
 * Properties, beyond "no crash, no leak, no UB":
 * - JSON: a file jansson accepts as an object loads; putting
 *   mcpServers.vigil then gives text jansson reads as the same tree with
 *   that member set (the editor checks this itself, so a failure here is an
 *   error it reported); dropping it again gives back the very bytes when
 *   the file had other keys and no mcpServers, or a non-empty one without
 *   vigil;
 * - TOML: a file the scanner reads either gets the table added (then
 *   removing it gives back the very bytes of a file that was empty or
 *   ended with a newline) or replaced, or the edit is refused with a
 *   message naming the file; a second set is a no-op;
 * - YAML: likewise for extensions.vigil, when the file had extensions with
 *   entries, or none at all, and ended with a newline.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/setup_json.h"
#include "cli/setup_toml.h"
#include "cli/setup_yaml.h"

static void
fuzz_json(const char *text, size_t len)
{
  SetupJson j;
  StrBuf err = STRBUF_INIT;
  if (setup_json_load(&j, "f.json", text, len, &err) != 0) {
    if (strncmp(strbuf_cstr(&err), "f.json", 6) != 0)
      abort();
    strbuf_free(&err);
    return;
  }
  json_t *servers = json_object_get(j.root, "mcpServers");
  /* Inserted after the last member and taken out again; an empty object
   * is rewritten ("{ }" becomes "{}"), so it is not among these. */
  bool restorable = servers == NULL ? json_object_size(j.root) > 0
                                    : json_is_object(servers) && json_object_size(servers) > 0 &&
                                          json_object_get(servers, "vigil") == NULL;
  char *before = strndup(j.text, j.len);
  size_t before_len = j.len;
  static const char *const keys[] = {"mcpServers", "vigil"};
  json_t *value = json_pack("{s:s, s:[s]}", "command", "/usr/bin/vigil", "args", "mcp");
  int put = setup_json_put(&j, keys, 2, json_incref(value), &err);
  if (put > 0) {
    json_t *got = json_object_get(json_object_get(j.root, "mcpServers"), "vigil");
    if (!json_equal(got, value))
      abort();
    if (setup_json_put(&j, keys, 2, json_incref(value), &err) != 0)
      abort(); /* the same again: nothing */
    if (setup_json_drop(&j, keys, 2, &err) != 1)
      abort();
    if (restorable && (j.len != before_len || memcmp(j.text, before, before_len) != 0))
      abort();
  }
  json_decref(value);
  free(before);
  setup_json_free(&j);
  strbuf_free(&err);
}

static void
fuzz_toml(const char *text, size_t len)
{
  SetupToml t;
  StrBuf err = STRBUF_INIT;
  if (setup_toml_load(&t, "f.toml", text, len, &err) != 0) {
    if (strncmp(strbuf_cstr(&err), "f.toml: line ", 13) != 0)
      abort();
    strbuf_free(&err);
    return;
  }
  static const char *const path[] = {"mcp_servers", "vigil"};
  static const char body[] = "command = \"/usr/bin/vigil\"\nargs = [\"mcp\"]\n";
  int rc = setup_toml_set_table(&t, path, 2, body, &err);
  if (rc < 0 && strncmp(strbuf_cstr(&err), "f.toml: line ", 13) != 0)
    abort();
  if (rc > 0) {
    if (setup_toml_set_table(&t, path, 2, body, &err) != 0)
      abort();
    if (setup_toml_drop_table(&t, path, 2, &err) != 1)
      abort();
    if (rc == 1 && (len == 0 || text[len - 1] == '\n') &&
        (t.len != len || memcmp(t.text, text, len) != 0))
      abort();
  }
  setup_toml_free(&t);
  strbuf_free(&err);
}

static void
fuzz_yaml(const char *text, size_t len)
{
  SetupYaml y;
  StrBuf err = STRBUF_INIT;
  if (setup_yaml_load(&y, "f.yaml", text, len, &err) != 0) {
    if (strncmp(strbuf_cstr(&err), "f.yaml", 6) != 0)
      abort();
    strbuf_free(&err);
    return;
  }
  static const char body[] = "  cmd: \"/usr/bin/vigil\"\n  args: [\"mcp\"]\n";
  bool had_parent = strstr(text, "extensions") != NULL;
  int rc = setup_yaml_set_entry(&y, "extensions", "vigil", body, &err);
  if (rc < 0 && strncmp(strbuf_cstr(&err), "f.yaml", 6) != 0)
    abort();
  if (rc > 0) {
    if (setup_yaml_set_entry(&y, "extensions", "vigil", body, &err) != 0)
      abort();
    if (setup_yaml_drop_entry(&y, "extensions", "vigil", &err) != 1)
      abort();
    if (rc == 1 && !had_parent && (len == 0 || text[len - 1] == '\n') &&
        (y.len != len || memcmp(y.text, text, len) != 0))
      abort();
  }
  setup_yaml_free(&y);
  strbuf_free(&err);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1 || size > 65536)
    return 0;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  /* The editors take the file as read: NUL-terminated, maybe holding NULs. */
  char *copy = malloc(len + 1);
  memcpy(copy, text, len);
  copy[len] = '\0';
  switch (data[0] % 3) {
  case 0:
    fuzz_json(copy, len);
    break;
  case 1:
    fuzz_toml(copy, len);
    break;
  default:
    fuzz_yaml(copy, len);
    break;
  }
  free(copy);
  return 0;
}
