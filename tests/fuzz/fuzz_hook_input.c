/*
 * libFuzzer harness for a hook's input (hook_input.c): what a harness (or
 * whoever can write a hook's stdin) hands `vigil hook`.
 *
 * Input: a mode byte (bit 0: through hook_input_read from a file, with the
 * size bound 1 << (bits 1-4 + 4) bytes; else hook_input_parse on the bytes;
 * bits 5-7: the error buffer's size, 8 << n bytes), then the JSON.
 *
 * Properties, beyond "no crash, no leak, no UB":
 * - a success gives every field vigil uses in its documented form: a
 *   session id of 1..128 characters of [A-Za-z0-9._:-], an event name of
 *   1..64 of [A-Za-z0-9_.], cwd and transcript_path absolute paths without
 *   control characters, tool_input an object or a string, stop_hook_active
 *   -1, 0 or 1; and jansson itself reads the bytes as an object;
 * - a refusal leaves the struct empty, and its message starts with "hook
 *   input: ", fits the buffer and is valid UTF-8;
 * - reading from a file agrees with parsing: refused when over the bound
 *   or empty, else the same verdict.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/hook_input.h"
#include "utf8check.h"

/* Whether s is 1..max characters of [A-Za-z0-9] and extra. */
static int
fuzz_word(const char *s, size_t max, const char *extra)
{
  size_t n = strlen(s);
  if (n == 0 || n > max)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          strchr(extra, c)))
      return 0;
  }
  return 1;
}

static void
fuzz_check_path(const char *p)
{
  if (p == NULL)
    return;
  size_t n = strlen(p);
  if (n == 0 || p[0] != '/' || n >= HOOK_PATH_MAX)
    abort();
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
      abort();
}

static void
fuzz_check_success(const HookInput *in, const uint8_t *data, size_t size)
{
  if (in->root == NULL || in->session_id == NULL || in->event == NULL)
    abort();
  if (!fuzz_word(in->session_id, HOOK_ID_MAX, "._:-") || !fuzz_word(in->event, HOOK_NAME_MAX, "_."))
    abort();
  fuzz_check_path(in->cwd);
  fuzz_check_path(in->transcript_path);
  if (in->tool_input && !json_is_object(in->tool_input) && !json_is_string(in->tool_input))
    abort();
  if (in->stop_hook_active < -1 || in->stop_hook_active > 1)
    abort();
  json_t *again = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(again))
    abort();
  json_decref(again);
}

static void
fuzz_check_refusal(const HookInput *in, const char *err, size_t cap)
{
  size_t n = strnlen(err, cap);
  if (n == cap || strncmp(err, "hook input: ", cap < 12 ? cap - 1 : 12) != 0)
    abort();
  if (!test_utf8_valid(err, n))
    abort();
  if (in->root != NULL || in->session_id != NULL || in->event != NULL)
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  uint8_t mode = data[0];
  data++;
  size--;
  size_t cap = (size_t)8 << ((mode >> 5) & 7);
  char *err = malloc(cap);
  HookInput in;
  int rc = hook_input_parse((const char *)data, size, &in, err, cap);
  if (rc == 0) {
    fuzz_check_success(&in, data, size);
    hook_input_free(&in);
  } else {
    fuzz_check_refusal(&in, err, cap);
  }
  if (mode & 1) {
    size_t max = (size_t)1 << (((mode >> 1) & 15) + 4);
    int fd = memfd_create("fuzz_hook_input", MFD_CLOEXEC);
    if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size) ||
        lseek(fd, 0, SEEK_SET) != 0)
      abort();
    HookInput read_in;
    int rrc = hook_input_read(fd, max, 10000, &read_in, err, cap);
    close(fd);
    int want = size == 0 || size > max ? -1 : rc;
    if (rrc != want)
      abort();
    if (rrc == 0) {
      fuzz_check_success(&read_in, data, size);
      hook_input_free(&read_in);
    } else {
      fuzz_check_refusal(&read_in, err, cap);
    }
  }
  free(err);
  return 0;
}
