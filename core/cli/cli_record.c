/*
 * Start records (see cli_record.h): written whole to a temporary file and
 * renamed into place, read back with a size bound, pruned to the newest
 * CLI_RECORD_MAX.
 */
#include "cli_record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_obj.h"
#include "memory.h"

/* Room for the directory's path. */
#define CLI_RECORD_PATH_MAX 4096

/* Writes the records' directory to out, creating it (0700) when create.
 * Returns 0, or -1 when there is no home to put it in or it cannot be
 * made. */
static int
cli_record_dir(char *out, size_t size, bool create)
{
  const char *state = getenv("XDG_STATE_HOME");
  const char *home = getenv("HOME");
  int n;
  if (state && state[0] == '/')
    n = snprintf(out, size, "%s/vigil/starts", state);
  else if (home && home[0] == '/')
    n = snprintf(out, size, "%s/.local/state/vigil/starts", home);
  else
    return -1;
  if (n < 0 || (size_t)n >= size)
    return -1;
  if (!create)
    return 0;
  /* mkdir -p, each level 0700 (existing ones are left as they are). */
  for (char *p = out + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    int rc = mkdir(out, 0700);
    *p = '/';
    if (rc != 0 && errno != EEXIST)
      return -1;
  }
  return mkdir(out, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Whether name could be a monitor id, so it is safe as a file name. */
static bool
cli_record_name_ok(const char *name)
{
  size_t n = strlen(name);
  return n > 4 && n < 64 && strncmp(name, "mon_", 4) == 0 &&
         strspn(name + 4, "0123456789abcdefghijklmnopqrstuvwxyz") == n - 4;
}

/* Removes the oldest records until at most CLI_RECORD_MAX remain. */
static void
cli_record_prune(const char *dir)
{
  for (;;) {
    DIR *d = opendir(dir);
    if (d == NULL)
      return;
    size_t count = 0;
    char oldest[NAME_MAX + 1] = "";
    struct timespec oldest_at = {0, 0};
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
      if (!cli_record_name_ok(ent->d_name))
        continue;
      struct stat st;
      if (fstatat(dirfd(d), ent->d_name, &st, 0) != 0)
        continue;
      count++;
      if (oldest[0] == '\0' || st.st_mtim.tv_sec < oldest_at.tv_sec ||
          (st.st_mtim.tv_sec == oldest_at.tv_sec && st.st_mtim.tv_nsec < oldest_at.tv_nsec)) {
        snprintf(oldest, sizeof oldest, "%s", ent->d_name);
        oldest_at = st.st_mtim;
      }
    }
    int fd = dirfd(d);
    bool over = count > CLI_RECORD_MAX && oldest[0] != '\0';
    if (over)
      over = unlinkat(fd, oldest, 0) == 0;
    closedir(d);
    if (!over)
      return;
  }
}

/* Packs a str. */
static void
cli_record_pack_str(msgpack_packer *pk, const char *s, size_t n)
{
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

int
cli_record_save(const CliClient *c, const char *id, const char *started_at, size_t len,
                const CliReq *req)
{
  char dir[CLI_RECORD_PATH_MAX], path[CLI_RECORD_PATH_MAX + 80], tmp[CLI_RECORD_PATH_MAX + 96];
  if (!cli_record_name_ok(id) || cli_record_dir(dir, sizeof dir, true) != 0)
    return -1;
  snprintf(path, sizeof path, "%s/%s", dir, id);
  snprintf(tmp, sizeof tmp, "%s/.%s.%ld", dir, id, (long)getpid());
  msgpack_sbuffer buf;
  msgpack_sbuffer_init(&buf);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 4);
  cli_record_pack_str(&pk, "socket", 6);
  cli_record_pack_str(&pk, c->socket_path, strlen(c->socket_path));
  cli_record_pack_str(&pk, "session", 7);
  cli_record_pack_str(&pk, c->session, strlen(c->session));
  cli_record_pack_str(&pk, "started_at", 10);
  cli_record_pack_str(&pk, started_at, len);
  cli_record_pack_str(&pk, "request", 7);
  msgpack_pack_map(&pk, req->count);
  msgpack_sbuffer_write(&buf, req->body.data, req->body.size);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int rc = -1;
  if (fd >= 0) {
    size_t off = 0;
    while (off < buf.size) {
      ssize_t n = write(fd, buf.data + off, buf.size - off);
      if (n <= 0 && !(n < 0 && errno == EINTR))
        break;
      if (n > 0)
        off += (size_t)n;
    }
    rc = close(fd) == 0 && off == buf.size ? rename(tmp, path) : -1;
    if (rc != 0)
      unlink(tmp);
  }
  msgpack_sbuffer_destroy(&buf);
  if (rc == 0)
    cli_record_prune(dir);
  return rc;
}

/* Reads all of path (at most CLI_RECORD_MAX_BYTES) into a new buffer.
 * Returns it (free it) with *len set, or NULL. */
static char *
cli_record_read(const char *path, size_t *len)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  struct stat st;
  char *data = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      (uint64_t)st.st_size <= CLI_RECORD_MAX_BYTES) {
    data = xmalloc((size_t)st.st_size);
    size_t off = 0;
    while (off < (size_t)st.st_size) {
      ssize_t n = read(fd, data + off, (size_t)st.st_size - off);
      if (n <= 0 && !(n < 0 && errno == EINTR))
        break;
      if (n > 0)
        off += (size_t)n;
    }
    if (off != (size_t)st.st_size) {
      free(data);
      data = NULL;
    }
    *len = off;
  }
  close(fd);
  return data;
}

int
cli_record_load(const CliClient *c, const char *id, const char *started_at, size_t len,
                CliReq *req)
{
  char dir[CLI_RECORD_PATH_MAX], path[CLI_RECORD_PATH_MAX + 80];
  if (!cli_record_name_ok(id) || cli_record_dir(dir, sizeof dir, false) != 0)
    return -1;
  snprintf(path, sizeof path, "%s/%s", dir, id);
  size_t size = 0;
  char *data = cli_record_read(path, &size);
  if (data == NULL)
    return -1;
  msgpack_unpacked msg;
  msgpack_unpacked_init(&msg);
  size_t off = 0;
  int rc = -1;
  if (msgpack_unpack_next(&msg, data, size, &off) == MSGPACK_UNPACK_SUCCESS && off == size) {
    const msgpack_object *m = &msg.data;
    const msgpack_object *request = cli_obj_get(m, "request");
    size_t at_len;
    const char *at = cli_obj_get_text(m, "started_at", &at_len);
    if (cli_obj_get_is(m, "socket", c->socket_path) && cli_obj_get_is(m, "session", c->session) &&
        at && at_len == len && memcmp(at, started_at, len) == 0 && request &&
        request->type == MSGPACK_OBJECT_MAP) {
      cli_req_init(req);
      rc = 0;
      for (uint32_t i = 0; i < request->via.map.size; i++) {
        const msgpack_object_kv *kv = &request->via.map.ptr[i];
        char key[64];
        if (kv->key.type != MSGPACK_OBJECT_STR || kv->key.via.str.size >= sizeof key) {
          rc = -1;
          break;
        }
        memcpy(key, kv->key.via.str.ptr, kv->key.via.str.size);
        key[kv->key.via.str.size] = '\0';
        msgpack_pack_object(cli_req_key(req, key), kv->val);
      }
      if (rc != 0)
        cli_req_free(req);
    }
  }
  msgpack_unpacked_destroy(&msg);
  free(data);
  return rc;
}

void
cli_record_forget(const char *id)
{
  char dir[CLI_RECORD_PATH_MAX], path[CLI_RECORD_PATH_MAX + 80];
  if (!cli_record_name_ok(id) || cli_record_dir(dir, sizeof dir, false) != 0)
    return;
  snprintf(path, sizeof path, "%s/%s", dir, id);
  unlink(path);
}
