/*
 * Tests of a kept monitor's spec file (keepspec.h): what is written is read
 * back whole, and a file that was torn, garbled, made by someone else or
 * out of bounds is refused naming why, with nothing of it used.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "store/keepspec.h"

static char test_root[64];
static int root_fd = -1;

static void
sample(KeepSpec *s, char **argv, char **patterns)
{
  memset(s, 0, sizeof *s);
  s->id = "mon_abc";
  s->session = "agent-1";
  s->label = "dev server";
  s->description = NULL;
  s->policy = "default";
  s->argv = argv;
  s->program = "/usr/bin/npm";
  s->cwd = "/srv/app";
  s->patterns = patterns;
  s->incidents = true;
  s->notify = 2;
  s->mode = 1;
  s->timeout_ms = 3600000;
  s->cpu_limit = 0.5;
  s->started_at_ms = 1790000000000;
  s->pid = 4242;
  s->keeper = 4241;
  settings_defaults(&s->settings);
  s->settings.capture_max_bytes = 65536;
}

TEST(what_is_written_is_read_back)
{
  char *argv[] = {"npm", "run", "dev", NULL};
  char *patterns[] = {"ERROR", "listening on (\\d+)", NULL};
  KeepSpec w, r;
  sample(&w, argv, patterns);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(keepspec_write(root_fd, &w, &err), 0);
  CHECK_INT(keepspec_read(root_fd, &r, &err), 0);
  CHECK_STR(r.id, "mon_abc");
  CHECK_STR(r.session, "agent-1");
  CHECK_STR(r.label, "dev server");
  CHECK(r.description == NULL);
  CHECK_STR(r.argv[2], "dev");
  CHECK(r.argv[3] == NULL);
  CHECK_STR(r.patterns[1], "listening on (\\d+)");
  CHECK(r.patterns[2] == NULL);
  CHECK_STR(r.cwd, "/srv/app");
  CHECK(r.incidents && !r.builtin_patterns && !r.session_anonymous);
  CHECK_INT(r.notify, 2);
  CHECK_INT(r.timeout_ms, 3600000);
  CHECK(r.cpu_limit == 0.5);
  CHECK_INT(r.pid, 4242);
  CHECK_INT(r.keeper, 4241);
  CHECK_INT(r.settings.capture_max_bytes, 65536);
  CHECK_INT(r.settings.flush_interval_ms, w.settings.flush_interval_ms);
  CHECK(r.start == NULL && r.start_len == 0); /* none was given: none comes back */
  struct stat st;
  CHECK(fstatat(root_fd, KEEPSPEC_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (st.st_mode & 0777) == 0600);
  keepspec_free(&r);
}

TEST(the_start_map_is_kept_byte_for_byte)
{
  /* {"argv": ["npm", "run"], "cpu_limit": 0.5, "label": nil}, as startmap.c packs. */
  static const char start[] = "\x83\xa4" "argv" "\x92\xa3" "npm" "\xa3" "run"
                              "\xa9" "cpu_limit" "\xcb\x3f\xe0\x00\x00\x00\x00\x00\x00"
                              "\xa5" "label" "\xc0";
  char *argv[] = {"npm", "run", NULL};
  char *patterns[] = {NULL};
  KeepSpec w, r;
  sample(&w, argv, patterns);
  w.start = (char *)start;
  w.start_len = sizeof start - 1;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(keepspec_write(root_fd, &w, &err), 0);
  CHECK_INT(keepspec_read(root_fd, &r, &err), 0);
  CHECK_INT(r.start_len, sizeof start - 1);
  CHECK(r.start != NULL && memcmp(r.start, start, sizeof start - 1) == 0);
  CHECK_STR(r.argv[1], "run"); /* the keys after it are read as before */
  CHECK_INT(r.settings.capture_max_bytes, 65536);
  keepspec_free(&r);
}

/* Issue 27: a spec written while its keeper was still being launched off
 * the loop names none (keeper 0) and is read back so; 1 is never a keeper. */
TEST(a_spec_naming_no_keeper_yet_is_read_and_keeper_1_refused)
{
  char *argv[] = {"npm", "run", NULL};
  char *patterns[] = {NULL};
  KeepSpec w, r;
  sample(&w, argv, patterns);
  w.pid = 0;
  w.keeper = 0;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(keepspec_write(root_fd, &w, &err), 0);
  CHECK_INT(keepspec_read(root_fd, &r, &err), 0);
  CHECK_INT(r.keeper, 0);
  CHECK_INT(r.pid, 0);
  keepspec_free(&r);
  w.keeper = 1;
  CHECK_INT(keepspec_write(root_fd, &w, &err), 0);
  VigilError bad = VIGIL_ERROR_INIT;
  CHECK_INT(keepspec_read(root_fd, &r, &bad), -1);
  CHECK_CONTAINS(bad.msg, "keeper must be 0 or 2..");
}

/* Flips one byte of the file at offset at. */
static void
garble(off_t at)
{
  int fd = openat(root_fd, KEEPSPEC_NAME, O_RDWR);
  unsigned char b;
  if (pread(fd, &b, 1, at) == 1) {
    b ^= 0x40;
    if (pwrite(fd, &b, 1, at) != 1)
      perror("pwrite");
  }
  close(fd);
}

TEST(a_garbled_or_torn_spec_is_refused)
{
  char *argv[] = {"sleep", "9", NULL};
  char *patterns[] = {NULL};
  KeepSpec w, r;
  sample(&w, argv, patterns);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(keepspec_write(root_fd, &w, &err), 0);
  garble(60); /* in the body: the sum no longer matches */
  CHECK_INT(keepspec_read(root_fd, &r, &err), -1);
  CHECK_CONTAINS(err.msg, "sum does not match");
  CHECK(r.id == NULL);
  CHECK_INT(keepspec_write(root_fd, &w, &err), 0);
  int fd = openat(root_fd, KEEPSPEC_NAME, O_RDWR);
  CHECK(ftruncate(fd, 40) == 0);
  close(fd);
  err = (VigilError)VIGIL_ERROR_INIT;
  CHECK_INT(keepspec_read(root_fd, &r, &err), -1);
  CHECK_CONTAINS(err.msg, "spec:");
}

TEST(a_spec_open_to_others_or_out_of_bounds_is_refused)
{
  char *argv[] = {"sleep", "9", NULL};
  KeepSpec w, r;
  sample(&w, argv, NULL);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(keepspec_write(root_fd, &w, &err), 0);
  CHECK(fchmodat(root_fd, KEEPSPEC_NAME, 0644, 0) == 0);
  CHECK_INT(keepspec_read(root_fd, &r, &err), -1);
  CHECK_CONTAINS(err.msg, "private regular file");
  /* A setting out of its bounds, written by hand past the writer's checks. */
  w.settings.capture_max_bytes = 12;
  err = (VigilError)VIGIL_ERROR_INIT;
  CHECK_INT(keepspec_write(root_fd, &w, &err), 0);
  CHECK_INT(keepspec_read(root_fd, &r, &err), -1);
  CHECK_CONTAINS(err.msg, "monitor.capture_max_bytes");
  CHECK_CONTAINS(err.msg, "12");
}

int
main(void)
{
  snprintf(test_root, sizeof test_root, "/tmp/vigil-keepspec-XXXXXX");
  if (mkdtemp(test_root) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  root_fd = open(test_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  RUN(what_is_written_is_read_back);
  RUN(the_start_map_is_kept_byte_for_byte);
  RUN(a_spec_naming_no_keeper_yet_is_read_and_keeper_1_refused);
  RUN(a_garbled_or_torn_spec_is_refused);
  RUN(a_spec_open_to_others_or_out_of_bounds_is_refused);
  close(root_fd);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", test_root);
  return check_summary();
}
