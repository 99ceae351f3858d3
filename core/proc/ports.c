/*
 * The TCP ports a monitor's processes listen on (see ports.h): each
 * process's socket descriptors matched against the LISTEN rows of its
 * network namespace, read once per namespace per scan.
 */
#include "proc/ports.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/memory.h"

/* A LISTEN row: its socket's inode and what it listens on. */
typedef struct {
  uint64_t inode;
  PortEntry entry;
} PortRow;

/* The LISTEN rows of one network namespace, sorted by inode. */
struct PortTable {
  uint64_t netns;  /* the namespace's inode (0: not known) */
  PortRow *rows;
  size_t n;
  size_t cap;
};

/* --- one row --------------------------------------------------------- */

/* Reads len hex digits at s into *out; false when one is not hex. */
static bool
ports_hex(const char *s, size_t len, uint32_t *out)
{
  uint32_t v = 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0'
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : -1;
    if (d < 0)
      return false;
    v = v << 4 | (uint32_t)d;
  }
  *out = v;
  return true;
}

/* See ports.h. A row is "  0: 0100007F:0BB8 00000000:0000 0A ... inode":
 * the address is the kernel's __be32 words printed as host-order numbers,
 * so storing each number back in host order gives the address's bytes. */
bool
ports_parse_row(const char *row, bool ipv6, uint64_t *inode, PortEntry *out)
{
  const char *s = strchr(row, ':');
  if (s == NULL)
    return false;
  s++;
  while (*s == ' ')
    s++;
  size_t alen = ipv6 ? 32 : 8;
  if (strlen(s) < alen + 5 || s[alen] != ':')
    return false;
  uint32_t words[4], port, st;
  for (size_t w = 0; w < alen / 8; w++) {
    if (!ports_hex(s + w * 8, 8, &words[w]))
      return false;
  }
  if (!ports_hex(s + alen + 1, 4, &port))
    return false;
  /* The remote address, then the state. */
  const char *p = s + alen + 5;
  while (*p == ' ')
    p++;
  p = strchr(p, ' ');
  if (p == NULL)
    return false;
  while (*p == ' ')
    p++;
  if (!ports_hex(p, 2, &st) || st != 0x0A) /* TCP_LISTEN */
    return false;
  /* tx:rx, tr:when, retrnsmt, uid, timeout, then the inode. */
  for (int field = 0; field < 6; field++) {
    p = strchr(p, ' ');
    if (p == NULL)
      return false;
    while (*p == ' ')
      p++;
  }
  char *end;
  errno = 0;
  unsigned long long ino = strtoull(p, &end, 10);
  if (end == p || errno != 0 || ino == 0)
    return false;
  char text[INET6_ADDRSTRLEN];
  if (ipv6) {
    struct in6_addr a;
    memcpy(&a, words, sizeof a);
    if (inet_ntop(AF_INET6, &a, text, sizeof text) == NULL)
      return false;
  } else {
    struct in_addr a = {.s_addr = words[0]};
    if (inet_ntop(AF_INET, &a, text, sizeof text) == NULL)
      return false;
  }
  *inode = ino;
  out->port = (uint16_t)port;
  snprintf(out->address, sizeof out->address, "%s", text);
  return true;
}

/* --- one namespace's table --------------------------------------------- */

static int
ports_row_cmp(const void *a, const void *b)
{
  uint64_t x = ((const PortRow *)a)->inode, y = ((const PortRow *)b)->inode;
  return x < y ? -1 : x > y;
}

/* Reads the LISTEN rows of path (bounded: PORTS_ROWS_MAX rows). */
static void
ports_table_read(PortTable *t, const char *path, bool ipv6, uint64_t *truncated)
{
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return;
  char line[512];
  size_t rows = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strchr(line, '\n') == NULL && !feof(f)) {
      /* A row longer than any the kernel writes: skip the rest of it. */
      int c;
      while ((c = fgetc(f)) != EOF && c != '\n') {
      }
      continue;
    }
    if (++rows > PORTS_ROWS_MAX) {
      (*truncated)++;
      break;
    }
    PortRow r;
    if (!ports_parse_row(line, ipv6, &r.inode, &r.entry))
      continue;
    if (t->n == t->cap) {
      t->cap = t->cap ? t->cap * 2 : 16;
      t->rows = xrealloc(t->rows, t->cap * sizeof *t->rows);
    }
    t->rows[t->n++] = r;
  }
  fclose(f);
}

/* The table of pid's network namespace: one the scan has, or read now
 * from the pid's own /proc/PID/net. NULL when none can be had. */
static PortTable *
ports_table_for(PortScan *scan, pid_t pid)
{
  char path[64];
  struct stat st;
  snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
  uint64_t netns = stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
  for (size_t i = 0; i < scan->ntables; i++) {
    if (netns != 0 && scan->tables[i]->netns == netns)
      return scan->tables[i];
  }
  if (scan->ntables == PORTS_NETNS_MAX) {
    scan->truncated++;
    return NULL;
  }
  PortTable *t = xcalloc(1, sizeof *t);
  t->netns = netns;
  snprintf(path, sizeof path, "/proc/%d/net/tcp", (int)pid);
  ports_table_read(t, path, false, &scan->truncated);
  snprintf(path, sizeof path, "/proc/%d/net/tcp6", (int)pid);
  ports_table_read(t, path, true, &scan->truncated);
  qsort(t->rows, t->n, sizeof *t->rows, ports_row_cmp);
  /* A namespace not known (ns/net unreadable) is not shared with a later
   * pid: it is kept for freeing only, and read again for the next. */
  scan->tables[scan->ntables++] = t;
  return t;
}

static const PortEntry *
ports_table_find(const PortTable *t, uint64_t inode)
{
  PortRow key = {.inode = inode};
  const PortRow *r = bsearch(&key, t->rows, t->n, sizeof *t->rows, ports_row_cmp);
  return r ? &r->entry : NULL;
}

/* --- a monitor's ports ------------------------------------------------- */

static int
ports_entry_cmp(const void *a, const void *b)
{
  const PortEntry *x = a, *y = b;
  if (x->port != y->port)
    return x->port < y->port ? -1 : 1;
  return strcmp(x->address, y->address);
}

/* Adds e to out (n of max) unless it is there; counts what does not fit. */
static void
ports_add(PortScan *scan, PortEntry *out, size_t *n, size_t max, const PortEntry *e)
{
  for (size_t i = 0; i < *n; i++) {
    if (ports_entry_cmp(&out[i], e) == 0)
      return;
  }
  if (*n == max) {
    scan->truncated++;
    return;
  }
  out[(*n)++] = *e;
}

/* The listening sockets among pid's descriptors, at most *budget of them
 * looked at. A process that is gone, or whose descriptors cannot be read
 * (another user's), gives nothing. */
static void
ports_of_pid(PortScan *scan, pid_t pid, size_t *budget, PortEntry *out, size_t *n, size_t max)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return;
  DIR *d = fdopendir(dfd);
  if (d == NULL) {
    close(dfd);
    return;
  }
  PortTable *t = NULL;
  bool have_table = false;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    if (*budget == 0) {
      scan->truncated++;
      break;
    }
    (*budget)--;
    char link[64];
    ssize_t len = readlinkat(dfd, de->d_name, link, sizeof link - 1);
    if (len <= 0)
      continue; /* closed since the listing, or the process is gone */
    link[len] = '\0';
    unsigned long long ino;
    char close_bracket;
    if (sscanf(link, "socket:[%llu%c", &ino, &close_bracket) != 2 || close_bracket != ']')
      continue;
    if (!have_table) {
      t = ports_table_for(scan, pid);
      have_table = true;
    }
    const PortEntry *e = t ? ports_table_find(t, ino) : NULL;
    if (e != NULL)
      ports_add(scan, out, n, max, e);
  }
  closedir(d);
}

/* See ports.h. */
size_t
ports_of(PortScan *scan, const PidList *pids, PortEntry *out, size_t max)
{
  if (max > PORTS_MAX)
    max = PORTS_MAX;
  size_t n = 0;
  size_t budget = PORTS_FDS_MAX;
  size_t npids = pids->n;
  if (npids > PORTS_PIDS_MAX) {
    scan->truncated += npids - PORTS_PIDS_MAX;
    npids = PORTS_PIDS_MAX;
  }
  for (size_t i = 0; i < npids && budget > 0; i++)
    ports_of_pid(scan, pids->pids[i], &budget, out, &n, max);
  qsort(out, n, sizeof *out, ports_entry_cmp);
  return n;
}

/* Every scan's truncated, once it is freed (the engine has one thread). */
static uint64_t ports_truncated_total;

/* See ports.h. */
uint64_t
ports_truncated(void)
{
  return ports_truncated_total;
}

/* See ports.h. */
void
ports_scan_free(PortScan *scan)
{
  ports_truncated_total += scan->truncated;
  scan->truncated = 0;
  for (size_t i = 0; i < scan->ntables; i++) {
    free(scan->tables[i]->rows);
    free(scan->tables[i]);
  }
  scan->ntables = 0;
  reaper_table_free(&scan->procs);
}
