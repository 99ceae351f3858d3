/*
 * Tests of the spool (spool.h): it keeps what a capture keeps, it is still
 * there after its writer is killed, it counts what was evicted before any
 * engine processed it, and a file that is not a sound spool of this user is
 * refused with the reason. A spool whose file is cut short under it, or
 * that finds no room (a small tmpfs, mounted when the test runs as root),
 * breaks instead of raising SIGBUS, and a capture on it goes on in memory,
 * counting; ring lines kept as offsets into it (ring.h) read on from
 * memory, or leave the ring counted, never reading other bytes.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pipeline/capture.h"
#include "check.h"
#include "base/mapfile.h"
#include "base/memory.h"
#include "pipeline/ring.h"
#include "pipeline/spool.h"
#include "spec/stream.h"

static char test_root[64];
static int root_fd = -1;

/* Where the header keeps the stream and the cut (spool.c's layout: magic
 * 8, version 4, stream 4, cap 8, sum 8, head 8, cut 8). */
enum { kStreamAt = 12, kHeadAt = 32, kCutAt = 40 };

/* The bytes of a read, joined. */
static char *
joined(CaptureSpan s)
{
  char *out = xmalloc(s.n1 + s.n2 + 1);
  if (s.n1)
    memcpy(out, s.p1, s.n1);
  if (s.n2)
    memcpy(out + s.n1, s.p2, s.n2);
  out[s.n1 + s.n2] = '\0';
  return out;
}

TEST(keeps_what_a_capture_keeps)
{
  /* The same writes (of every size, up to more than the capacity) into a
   * spool and a capture of the same bound read back the same from every
   * offset. */
  enum { kCap = 8192 };
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "same", 0, kCap, &err), 0);
  if (err.set)
    return;
  Capture c;
  capture_init(&c, kCap);
  char buf[3 * kCap];
  unsigned seed = 7;
  for (int round = 0; round < 300 && !check_failures_in_test; round++) {
    seed = seed * 1103515245u + 12345u;
    size_t n = (seed >> 8) % (round % 50 == 49 ? sizeof buf : 700);
    for (size_t i = 0; i < n; i++)
      buf[i] = (char)('a' + (round + i) % 26);
    spool_append(&s, buf, n);
    capture_write(&c, buf, n);
    CHECK_INT(spool_head(&s), c.total);
    CHECK_INT(spool_start(&s), capture_start(&c));
    uint64_t from = c.total > 300 ? c.total - 300 - (seed % 9000) : 0;
    CaptureSpan a = spool_read(&s, from, UINT64_MAX), b = capture_read(&c, from, UINT64_MAX);
    CHECK_INT(a.offset, b.offset);
    CHECK_INT(a.truncated, b.truncated);
    char *x = joined(a), *y = joined(b);
    CHECK_STR(x, y);
    free(x);
    free(y);
  }
  capture_free(&c);
  spool_close(&s);
}

TEST(outlives_a_killed_writer)
{
  /* A writer killed without a chance to close or flush: every byte it
   * appended is in the file for the next one to open. */
  pid_t pid = fork();
  if (pid == 0) {
    Spool s;
    VigilError e = VIGIL_ERROR_INIT;
    if (spool_create(&s, root_fd, "killed", 1, 4096, &e) != 0)
      _exit(2);
    for (int i = 0; i < 1000; i++) {
      char line[32];
      int n = snprintf(line, sizeof line, "line %04d\n", i);
      spool_append(&s, line, (size_t)n);
    }
    spool_set_cut(&s, 10000 - 4096 - 100); /* processed up to 100 bytes before the oldest */
    raise(SIGKILL);
    _exit(3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_open(&s, root_fd, "killed", &err), 0);
  if (err.set) {
    printf("  %s\n", err.msg);
    return;
  }
  CHECK_INT(spool_stream(&s), 1);
  CHECK_INT(spool_head(&s), 10000); /* 1000 lines of 10 bytes */
  CHECK_INT(spool_start(&s), 10000 - 4096);
  CHECK_INT(spool_lost(&s), 100);
  CaptureSpan tail = spool_read(&s, 10000 - 20, UINT64_MAX);
  char *t = joined(tail);
  CHECK_STR(t, "line 0998\nline 0999\n");
  free(t);
  spool_close(&s);
}

TEST(the_cut_never_moves_back_nor_past_the_head)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "cut", 0, 4096, &err), 0);
  spool_append(&s, "0123456789", 10);
  spool_set_cut(&s, 6);
  spool_set_cut(&s, 3);
  CHECK_INT(spool_cut(&s), 6);
  spool_set_cut(&s, 99);
  CHECK_INT(spool_cut(&s), 10);
  CHECK_INT(spool_lost(&s), 0);
  spool_close(&s);
}

TEST(a_new_spool_is_sparse)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "sparse", 0, 1 << 20, &err), 0);
  spool_append(&s, "hello\n", 6);
  struct stat st;
  CHECK_INT(fstat(s.fd, &st), 0);
  CHECK_INT(st.st_size, SPOOL_HEADER_BYTES + (1 << 20));
  /* The header and the first step reserved ahead (rounded to the file
   * system's blocks), not 1 MiB. */
  CHECK((long long)st.st_blocks * 512 <=
        SPOOL_HEADER_BYTES + SPOOL_RESERVE_STEP + (long long)st.st_blksize);
  CHECK_INT(st.st_mode & 0777, 0600);
  spool_close(&s);
}

/* Issue 27: the data's blocks are reserved a page of the file at a time,
 * so a stream that wrote a line holds one page of its file system (on
 * tmpfs, the state directory's default, a page of memory), header
 * included, whatever its capacity (1 MiB by default); it held 20 KiB
 * before. */
TEST(a_spool_that_wrote_a_line_holds_one_page)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "oneline", 0, 1 << 20, &err), 0);
  CHECK(spool_append(&s, "a line\n", 7));
  struct stat st;
  CHECK_INT(fstat(s.fd, &st), 0);
  long long page = st.st_blksize > 4096 ? st.st_blksize : 4096;
  CHECK((long long)st.st_blocks * 512 <= page);
  char big[6000];
  memset(big, 'x', sizeof big);
  CHECK(spool_append(&s, big, sizeof big)); /* past the page: reserved as it comes */
  CHECK_INT(fstat(s.fd, &st), 0);
  CHECK((long long)st.st_blocks * 512 <= 2 * page);
  char *got = joined(spool_read(&s, 0, 7));
  CHECK_STR(got, "a line\n");
  free(got);
  spool_close(&s);
}

/* Issue 27: the header, the owner's part (where a monitor keeps its
 * checkpoint) and the first bytes of data share one page. The owner's part
 * is zeros when made and kept across a reopen. */
TEST(a_version_2_spool_shares_its_first_page_with_the_owner_and_the_data)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "shared", 0, 4096, &err), 0);
  unsigned char *area = spool_owner_area(&s);
  CHECK(area != NULL);
  if (area == NULL)
    return;
  for (int i = 0; i < SPOOL_OWNER_BYTES; i++)
    CHECK_INT(area[i], 0);
  CHECK((char *)area + SPOOL_OWNER_BYTES <= s.data && s.data - s.map == SPOOL_HEADER_BYTES);
  CHECK(SPOOL_HEADER_BYTES + 100 < 4096); /* the first data bytes are on the header's page */
  memcpy(area, "owner's words", 13);
  CHECK(spool_append(&s, "hello\n", 6));
  spool_close(&s);
  struct stat st;
  CHECK_INT(fstatat(root_fd, "shared", &st, 0), 0);
  CHECK_INT(st.st_size, SPOOL_HEADER_BYTES + 4096);
  CHECK_INT(spool_open(&s, root_fd, "shared", &err), 0);
  area = spool_owner_area(&s);
  CHECK(area != NULL && memcmp(area, "owner's words", 13) == 0);
  char *got = joined(spool_read(&s, 0, UINT64_MAX));
  CHECK_STR(got, "hello\n");
  free(got);
  spool_close(&s);
}

/* The kibibytes of this process's memory that mappings of the file name
 * (a file of test_root) hold resident (smaps), or -1 when the file is not
 * mapped at all. */
static long
resident_kib(const char *name)
{
  char want[128];
  snprintf(want, sizeof want, "%s/%s\n", test_root, name);
  FILE *f = fopen("/proc/self/smaps", "r");
  if (f == NULL)
    return -2;
  char line[512];
  long kib = -1;
  bool in = false;
  while (fgets(line, sizeof line, f)) {
    size_t n = strlen(line), w = strlen(want);
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's header line */
      in = n >= w && strcmp(line + n - w, want) == 0;
      if (in && kib < 0)
        kib = 0;
    } else if (in && strncmp(line, "Rss:", 4) == 0) {
      kib += strtol(line + 4, NULL, 10);
    }
  }
  fclose(f);
  return kib;
}

/* Issue 27: a spool is mapped at its first use, never at its making or
 * opening, so a stream that writes nothing (a quiet monitor's stderr)
 * costs its engine no page; its header is in the file all the same, and
 * the spool made or opened reads empty and takes its first bytes. */
TEST(a_spool_not_written_maps_nothing)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "unused", 1, 4096, &err), 0);
  CHECK_INT(resident_kib("unused"), -1);
  CaptureSpan empty = spool_read(&s, 0, UINT64_MAX);
  CHECK_INT(empty.n1 + empty.n2, 0);
  CHECK(spool_why(&s) == NULL && spool_readable(&s));
  CHECK_INT(resident_kib("unused"), -1);
  spool_close(&s);
  CHECK_INT(spool_open(&s, root_fd, "unused", &err), 0); /* its header was written */
  CHECK_INT(spool_stream(&s), 1);
  CHECK_INT(resident_kib("unused"), -1);
  CHECK(spool_append(&s, "late\n", 5));
  CHECK(resident_kib("unused") > 0);
  char *got = joined(spool_read(&s, 0, UINT64_MAX));
  CHECK_STR(got, "late\n");
  free(got);
  spool_close(&s);
  CHECK_INT(resident_kib("unused"), -1);
}

/* Issue 27: a deferred spool (a monitor's stderr) has no file until its
 * first byte: it reads empty and costs nothing; its first append makes the
 * file (as spool_create would, under a temporary name renamed into place:
 * none is left, and one an earlier try left does not stop it), which a
 * reader then opens as any spool. */
TEST(a_deferred_spool_makes_its_file_at_its_first_byte)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  spool_defer(&s, root_fd, "later", 1, 4096);
  CHECK(spool_deferred(&s));
  CHECK(faccessat(root_fd, "later", F_OK, AT_SYMLINK_NOFOLLOW) != 0);
  CaptureSpan empty = spool_read(&s, 0, UINT64_MAX);
  CHECK_INT(empty.n1 + empty.n2, 0);
  CHECK(spool_readable(&s) && spool_why(&s) == NULL && spool_head(&s) == 0);
  spool_set_cut(&s, 0);
  CHECK(faccessat(root_fd, "later", F_OK, AT_SYMLINK_NOFOLLOW) != 0);
  CHECK(spool_append(&s, "err 1\n", 6));
  CHECK(!spool_deferred(&s));
  CHECK(faccessat(root_fd, "later.tmp", F_OK, AT_SYMLINK_NOFOLLOW) != 0);
  char *got = joined(spool_read(&s, 0, UINT64_MAX));
  CHECK_STR(got, "err 1\n");
  free(got);
  spool_close(&s);
  CHECK_INT(spool_open(&s, root_fd, "later", &err), 0);
  CHECK_INT(spool_stream(&s), 1);
  got = joined(spool_read(&s, 0, UINT64_MAX));
  CHECK_STR(got, "err 1\n");
  free(got);
  spool_close(&s);
  /* A crash between the making and the rename left a temporary file. */
  int fd = openat(root_fd, "again.tmp", O_RDWR | O_CREAT | O_EXCL, 0600);
  CHECK(fd >= 0);
  close(fd);
  spool_defer(&s, root_fd, "again", 0, 8192);
  CHECK(spool_append(&s, "out\n", 4));
  spool_close(&s);
  CHECK_INT(spool_open(&s, root_fd, "again", &err), 0);
  CHECK_INT(spool_head(&s), 4);
  spool_close(&s);
  CHECK(faccessat(root_fd, "again.tmp", F_OK, AT_SYMLINK_NOFOLLOW) != 0);
  /* A directory where it cannot be made: the spool breaks, saying why,
   * and counts what it was given. */
  spool_defer(&s, -1, "nowhere", 1, 4096);
  CHECK(!spool_append(&s, "lost\n", 5));
  CHECK(spool_why(&s) != NULL);
  if (spool_why(&s) != NULL)
    CHECK_CONTAINS(spool_why(&s), "cannot be made");
  CHECK_INT(spool_unkept(&s), 5);
  spool_close(&s);
}

/* Issue 27: a capture of 3584 bytes (monitor.capture_max_bytes, whose
 * bounds are the spool's) and the 512-byte header are one page: the file
 * is 4096 bytes, and a stream that wrote more than its capacity, wrapped,
 * holds one page of this process and reads its last 3584 bytes back,
 * reopened too. */
TEST(a_spool_of_3584_bytes_is_one_page_with_its_header)
{
  enum { kCap = 4096 - SPOOL_HEADER_BYTES };
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "onepage", 0, kCap, &err), 0);
  if (err.set) {
    printf("  %s\n", err.msg);
    return;
  }
  CHECK(spool_owner_area(&s) != NULL);
  char line[32];
  for (int i = 0; i < 1000; i++) {
    int n = snprintf(line, sizeof line, "line %04d\n", i);
    CHECK(spool_append(&s, line, (size_t)n));
  }
  struct stat st;
  CHECK_INT(fstat(s.fd, &st), 0);
  CHECK_INT(st.st_size, 4096);
  CHECK_INT(resident_kib("onepage"), 4);
  spool_close(&s);
  CHECK_INT(spool_open(&s, root_fd, "onepage", &err), 0);
  CHECK_INT(spool_start(&s), 10000 - kCap);
  char *got = joined(spool_read(&s, 10000 - 10, UINT64_MAX));
  CHECK_STR(got, "line 0999\n");
  free(got);
  spool_close(&s);
  /* The smallest capacity is SPOOL_MIN_CAP; one byte less is refused. */
  CHECK_INT(spool_create(&s, root_fd, "smallest", 1, SPOOL_MIN_CAP, &err), 0);
  spool_close(&s);
  err = (VigilError)VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "smaller", 1, SPOOL_MIN_CAP - 1, &err), -1);
  CHECK_CONTAINS(err.msg, "capacity 1023");
}

/* The 64-bit FNV-1a sum spool.c puts over a header's fixed fields. */
static uint64_t
fnv1a(const unsigned char *p, size_t n)
{
  uint64_t x = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    x ^= p[i];
    x *= 0x100000001b3ULL;
  }
  return x;
}

/* A spool an engine before made (version 1: a 4096-byte header, no owner's
 * part) is still read: its data where that version had it, and no owner's
 * part to write into. */
TEST(a_version_1_spool_is_still_read)
{
  enum { kCap = 4096 };
  unsigned char head[48] = {0};
  memcpy(head, "VIGLSPOL", 8);
  uint32_t version = 1, stream = 1;
  uint64_t cap = kCap, sum, bytes = 6, cut = 0;
  memcpy(head + 8, &version, 4);
  memcpy(head + 12, &stream, 4);
  memcpy(head + 16, &cap, 8);
  sum = fnv1a(head, 24);
  memcpy(head + 24, &sum, 8);
  memcpy(head + kHeadAt, &bytes, 8);
  memcpy(head + kCutAt, &cut, 8);
  int fd = openat(root_fd, "v1", O_RDWR | O_CREAT | O_EXCL, 0600);
  CHECK(fd >= 0);
  CHECK_INT(ftruncate(fd, SPOOL_HEADER_V1_BYTES + kCap), 0);
  CHECK_INT(pwrite(fd, head, sizeof head, 0), (long)sizeof head);
  CHECK_INT(pwrite(fd, "older\n", 6, SPOOL_HEADER_V1_BYTES), 6);
  close(fd);
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_open(&s, root_fd, "v1", &err), 0);
  if (err.set) {
    fprintf(stderr, "%s\n", err.msg);
    return;
  }
  CHECK_INT(spool_stream(&s), 1);
  char *got = joined(spool_read(&s, 0, UINT64_MAX));
  CHECK_STR(got, "older\n");
  free(got);
  CHECK(spool_owner_area(&s) == NULL);
  CHECK(spool_append(&s, "more\n", 5));
  spool_close(&s);
  CHECK_INT(spool_open(&s, root_fd, "v1", &err), 0);
  got = joined(spool_read(&s, 0, UINT64_MAX));
  CHECK_STR(got, "older\nmore\n");
  free(got);
  spool_close(&s);
}

/* Creates a sound spool named name, then lets damage change its file. */
static void
make_spool(const char *name)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, name, 0, 4096, &err), 0);
  spool_append(&s, "abc\n", 4);
  spool_close(&s);
}

/* Opens name, expecting a refusal whose message holds want. */
static void
expect_refused(const char *name, const char *want)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_open(&s, root_fd, name, &err), -1);
  CHECK_CONTAINS(err.msg, name);
  CHECK_CONTAINS(err.msg, want);
  if (!err.set)
    spool_close(&s);
}

TEST(unsound_files_are_refused_with_the_reason)
{
  make_spool("magic");
  int fd = openat(root_fd, "magic", O_WRONLY);
  CHECK_INT(pwrite(fd, "XXXX", 4, 0), 4);
  close(fd);
  expect_refused("magic", "bad magic");

  make_spool("sum");
  fd = openat(root_fd, "sum", O_WRONLY);
  uint32_t stream = 1; /* changed without its checksum */
  CHECK_INT(pwrite(fd, &stream, sizeof stream, kStreamAt), (long)sizeof stream);
  close(fd);
  expect_refused("sum", "checksum");

  make_spool("short");
  fd = openat(root_fd, "short", O_WRONLY);
  CHECK_INT(ftruncate(fd, SPOOL_HEADER_BYTES + 100), 0);
  close(fd);
  expect_refused("short", "size");

  make_spool("counters");
  fd = openat(root_fd, "counters", O_WRONLY);
  uint64_t cut = 1000; /* past the 4 bytes written */
  CHECK_INT(pwrite(fd, &cut, sizeof cut, kCutAt), (long)sizeof cut);
  close(fd);
  expect_refused("counters", "counters disagree");

  /* A head no stream reaches, which the next append would wrap. */
  make_spool("huge");
  fd = openat(root_fd, "huge", O_WRONLY);
  uint64_t head = UINT64_MAX - 2;
  CHECK_INT(pwrite(fd, &head, sizeof head, kHeadAt), (long)sizeof head);
  close(fd);
  expect_refused("huge", "beyond what any stream writes");

  make_spool("mode");
  CHECK_INT(fchmodat(root_fd, "mode", 0644, 0), 0);
  expect_refused("mode", "not private");

  make_spool("target");
  CHECK_INT(symlinkat("target", root_fd, "link"), 0);
  expect_refused("link", "cannot open");

  int empty = openat(root_fd, "empty", O_WRONLY | O_CREAT | O_EXCL, 0600);
  CHECK(empty >= 0);
  close(empty);
  expect_refused("empty", "shorter than its header");
}

TEST(create_refuses_an_existing_name_and_bad_bounds)
{
  make_spool("taken");
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "taken", 0, 4096, &err), -1);
  CHECK_CONTAINS(err.msg, "cannot create");
  err = (VigilError)VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "tiny", 0, 100, &err), -1);
  CHECK_CONTAINS(err.msg, "capacity 100");
  CHECK(faccessat(root_fd, "tiny", F_OK, 0) != 0);
}

TEST(a_spool_cut_short_under_its_mapping_breaks_and_the_process_lives)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "cutshort", 0, 65536, &err), 0);
  if (err.set)
    return;
  CHECK(spool_append(&s, "before\n", 7));
  CHECK(spool_why(&s) == NULL);
  uint64_t replaced = mapfile_pages_replaced();
  /* Its user truncates it: the next write touches pages with no file. */
  CHECK_INT(ftruncate(s.fd, 0), 0);
  CHECK(!spool_append(&s, "after\n", 6));
  CHECK(mapfile_pages_replaced() > replaced);
  CHECK(spool_why(&s) != NULL);
  if (spool_why(&s) != NULL)
    CHECK_CONTAINS(spool_why(&s), "cut short");
  CHECK_INT(spool_unkept(&s), 6);
  CHECK_INT(spool_head(&s), 7); /* the refused bytes went nowhere */
  CHECK(!spool_readable(&s));
  CaptureSpan r = spool_read(&s, 0, UINT64_MAX);
  CHECK_INT(r.n1 + r.n2, 0);
  CHECK(r.truncated);
  CHECK(!spool_append(&s, "more\n", 5));
  CHECK_INT(spool_unkept(&s), 11);
  spool_close(&s);
}

TEST(a_capture_whose_spool_is_cut_short_goes_on_in_memory_counting)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "cutcap", 1, 65536, &err), 0);
  if (err.set)
    return;
  Capture c;
  capture_init(&c, 65536);
  capture_use_spool(&c, &s);
  capture_write(&c, "one\n", 4);
  CHECK(!c.spool_left);
  /* A read first: the file's size is checked before its pages are touched. */
  CHECK_INT(ftruncate(s.fd, 100), 0);
  CaptureSpan r = capture_read(&c, 0, UINT64_MAX);
  CHECK_INT(r.n1 + r.n2, 0);
  capture_write(&c, "two\n", 4);
  capture_write(&c, "three\n", 6);
  CHECK(c.spool_left);
  CHECK(c.spool == NULL);
  CHECK_INT(c.state_unkept, 10);
  CHECK_INT(c.total, 14);
  r = capture_read(&c, 0, UINT64_MAX);
  CHECK(r.truncated); /* "one\n" was in the file, gone */
  CHECK_INT(r.offset, 4);
  char *got = joined(r);
  CHECK_STR(got, "two\nthree\n");
  free(got);
  capture_free(&c);
  spool_close(&s);
}

/* Mounts a tmpfs of size bytes at test_root/name and opens it; -1 when the
 * test does not run as root (said). */
static int
small_tmpfs(const char *name, size_t size)
{
  if (geteuid() != 0) {
    printf("skip: a full file system needs a small tmpfs, which needs root (CI runs as "
           "root)\n");
    return -1;
  }
  char cmd[256];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s' && mount -t tmpfs -o size=%zu tmpfs '%s/%s'",
           test_root, name, size, test_root, name);
  CHECK_INT(system(cmd), 0);
  int fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  CHECK(fd >= 0);
  return fd;
}

static void
small_tmpfs_gone(const char *name, int fd)
{
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "umount -l '%s/%s'", test_root, name);
  CHECK_INT(system(cmd), 0);
}

TEST(a_full_file_system_breaks_a_spool_that_keeps_what_it_had)
{
  /* 256 KiB of room for a spool of 1 MiB: the writes go on past the room,
   * the spool breaks when it cannot reserve its next step, and the capture
   * on it goes on in memory with what the spool had: it reads back as a
   * capture in memory alone would. */
  int fd = small_tmpfs("small", 256 << 10);
  if (fd < 0)
    return;
  enum { kCap = 1 << 20 };
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, fd, "full", 0, kCap, &err), 0);
  if (err.set) {
    small_tmpfs_gone("small", fd);
    return;
  }
  Capture c, ref;
  capture_init(&c, kCap);
  capture_init(&ref, kCap);
  capture_use_spool(&c, &s);
  char buf[10000];
  uint64_t written = 0;
  for (int i = 0; i < 300; i++) {
    for (size_t j = 0; j < sizeof buf; j++)
      buf[j] = (char)('a' + (i * 7 + j) % 26);
    capture_write(&c, buf, sizeof buf);
    capture_write(&ref, buf, sizeof buf);
    written += sizeof buf;
  }
  CHECK(c.spool_left);
  CHECK(spool_why(&s) != NULL);
  if (spool_why(&s) != NULL)
    CHECK_CONTAINS(spool_why(&s), "no room");
  CHECK(spool_readable(&s));
  CHECK(c.state_unkept > 0 && c.state_unkept < written);
  CHECK_INT(c.total, written);
  CHECK_INT(capture_start(&c), capture_start(&ref));
  CaptureSpan a = capture_read(&c, 0, UINT64_MAX), b = capture_read(&ref, 0, UINT64_MAX);
  CHECK_INT(a.offset, b.offset);
  char *x = joined(a), *y = joined(b);
  CHECK(strcmp(x, y) == 0);
  free(x);
  free(y);
  capture_free(&c);
  capture_free(&ref);
  spool_close(&s);
  small_tmpfs_gone("small", fd);
}

/* Writes a line to c as the intake does and keeps it in r as its offset. */
static void
ring_line_to(Ring *r, Capture *c, const char *text)
{
  uint64_t at = c->total;
  size_t n = strlen(text);
  capture_write(c, text, n);
  capture_write(c, "\n", 1);
  ring_trim(r);
  ring_push_raw(r, kStreamStdout, text, n, c, at, -1, 0);
}

TEST(ring_lines_kept_in_a_spool_cut_short_never_read_other_bytes)
{
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, root_fd, "ringcut", 0, 65536, &err), 0);
  if (err.set)
    return;
  Capture c;
  capture_init(&c, 65536);
  capture_use_spool(&c, &s);
  Ring r;
  ring_init(&r, 100, 4096);
  ring_line_to(&r, &c, "one");
  ring_line_to(&r, &c, "two");
  RingLine last = ring_last(&r);
  CHECK_MEM(last.text, last.len, "two");
  CHECK(r.arena == NULL);
  CHECK_INT(ftruncate(s.fd, 100), 0);
  last = ring_last(&r); /* no SIGBUS, no zeros: an empty text */
  CHECK(last.text != NULL);
  CHECK_INT(last.len, 0);
  /* The next write leaves the spool for memory without its bytes: the
   * lines kept in it leave the ring, counted, and new ones read on. */
  ring_line_to(&r, &c, "three");
  CHECK(c.spool_left);
  CHECK_INT(r.counters.dropped, 2);
  CHECK_INT(r.count, 1);
  last = ring_last(&r);
  CHECK_MEM(last.text, last.len, "three");
  CHECK_INT(last.seq, 3);
  ring_free(&r);
  capture_free(&c);
  spool_close(&s);
}

/* The text of line i of the next test: its number and letters enough to
 * fill 200 bytes. */
static void
spool_ring_text(int i, char *text, size_t size)
{
  int n = snprintf(text, size, "%06d ", i);
  for (size_t j = (size_t)n; j < size - 1; j++)
    text[j] = (char)('a' + (i + (int)j) % 26);
  text[size - 1] = '\0';
}

static void
spool_ring_check(void *ctx, const RingLine *line)
{
  int *first = ctx;
  char want[200];
  spool_ring_text(*first + (int)line->seq - 1, want, sizeof want);
  CHECK_MEM(line->text, line->len, want);
}

TEST(ring_lines_kept_in_a_full_spool_read_on_from_memory)
{
  /* The spool breaks for want of room while it can still be read: the
   * capture takes its bytes to memory at the same absolute offsets, so
   * every line the ring kept in the spool reads the same from memory. */
  int fd = small_tmpfs("ringfull", 256 << 10);
  if (fd < 0)
    return;
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, fd, "full", 0, 1 << 20, &err), 0);
  if (err.set) {
    small_tmpfs_gone("ringfull", fd);
    return;
  }
  Capture c;
  capture_init(&c, 1 << 20);
  capture_use_spool(&c, &s);
  Ring r;
  ring_init(&r, 1000, 4096);
  int first = 0, i = 0;
  char text[200];
  for (; !c.spool_left && i < 10000; i++) {
    spool_ring_text(i, text, sizeof text);
    ring_line_to(&r, &c, text);
  }
  CHECK(c.spool_left);
  CHECK(spool_readable(&s));
  for (int k = 0; k < 10; k++, i++) {
    spool_ring_text(i, text, sizeof text);
    ring_line_to(&r, &c, text);
  }
  CHECK_INT(r.count, 1000);
  CHECK(r.arena == NULL);
  CHECK_INT(ring_query(&r, kRingAll, 0, 0, spool_ring_check, &first), 1000);
  ring_free(&r);
  capture_free(&c);
  spool_close(&s);
  small_tmpfs_gone("ringfull", fd);
}

TEST(a_spool_made_with_no_room_for_its_header_is_broken_from_the_start)
{
  int fd = small_tmpfs("none", 4096);
  if (fd < 0)
    return;
  int filler = openat(fd, "filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  CHECK(filler >= 0);
  CHECK_INT(posix_fallocate(filler, 0, 4096), 0);
  close(filler);
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(spool_create(&s, fd, "nohead", 0, 65536, &err), 0);
  CHECK(spool_why(&s) != NULL);
  if (spool_why(&s) != NULL)
    CHECK_CONTAINS(spool_why(&s), "no room for its header");
  CHECK(!spool_append(&s, "x\n", 2));
  CHECK_INT(spool_unkept(&s), 2);
  spool_close(&s);
  /* Nobody takes a headerless file for a spool. */
  CHECK_INT(spool_open(&s, fd, "nohead", &err), -1);
  small_tmpfs_gone("none", fd);
}

/* In a child: guards a spool's mapping, then does what which says; its
 * exit status is the test's. */
static int
sigbus_child(int which)
{
  pid_t pid = fork();
  if (pid != 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  }
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  char name[32];
  snprintf(name, sizeof name, "guarded%d", which);
  if (spool_create(&s, root_fd, name, 0, 4096, &err) != 0)
    _exit(3);
  if (which == 0) {
    kill(getpid(), SIGBUS); /* sent, not a fault of a guarded page */
  } else {
    /* A mapping of a file nobody guards, cut short under it. */
    int fd = openat(root_fd, name, O_RDWR | O_CLOEXEC);
    char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED || ftruncate(fd, 0) != 0)
      _exit(4);
    p[5000] = 'x';
  }
  _exit(0);
}

/* Whether a child's status is an end by SIGBUS: the signal itself, or
 * under the sanitizers their report and exit status 1 (their handler was
 * the one before the guard's, and gets the signal back). */
static bool
ended_by_sigbus(int status)
{
  return (WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) ||
         (WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

TEST(a_sigbus_that_is_not_a_guarded_mapping_s_still_ends_the_process)
{
  CHECK(ended_by_sigbus(sigbus_child(0)));
  CHECK(ended_by_sigbus(sigbus_child(1)));
}


/* An append to a spool already closed: its capacity is gone (0), which
 * spool_append would divide by. */
static void
spool_append_after_close(void *arg)
{
  (void)arg;
  Spool s;
  VigilError err = VIGIL_ERROR_INIT;
  if (spool_create(&s, root_fd, "closed", 0, 4096, &err) != 0)
    _exit(3);
  spool_close(&s);
  spool_append(&s, "abc", 3);
}

TEST(a_broken_precondition_ends_the_process_by_its_assert)
{
  CHECK_ABORTS(spool_append_after_close, NULL);
}

int
main(void)
{
  snprintf(test_root, sizeof test_root, "/tmp/vigil-spool-XXXXXX");
  if (mkdtemp(test_root) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  root_fd = open(test_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  RUN(keeps_what_a_capture_keeps);
  RUN(outlives_a_killed_writer);
  RUN(the_cut_never_moves_back_nor_past_the_head);
  RUN(a_new_spool_is_sparse);
  RUN(a_spool_that_wrote_a_line_holds_one_page);
  RUN(a_version_2_spool_shares_its_first_page_with_the_owner_and_the_data);
  RUN(a_version_1_spool_is_still_read);
  RUN(a_spool_not_written_maps_nothing);
  RUN(a_deferred_spool_makes_its_file_at_its_first_byte);
  RUN(a_spool_of_3584_bytes_is_one_page_with_its_header);
  RUN(unsound_files_are_refused_with_the_reason);
  RUN(create_refuses_an_existing_name_and_bad_bounds);
  RUN(a_spool_cut_short_under_its_mapping_breaks_and_the_process_lives);
  RUN(a_capture_whose_spool_is_cut_short_goes_on_in_memory_counting);
  RUN(a_full_file_system_breaks_a_spool_that_keeps_what_it_had);
  RUN(ring_lines_kept_in_a_spool_cut_short_never_read_other_bytes);
  RUN(ring_lines_kept_in_a_full_spool_read_on_from_memory);
  RUN(a_spool_made_with_no_room_for_its_header_is_broken_from_the_start);
  RUN(a_sigbus_that_is_not_a_guarded_mapping_s_still_ends_the_process);
  RUN(a_broken_precondition_ends_the_process_by_its_assert);
  close(root_fd);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", test_root);
  return check_summary();
}
