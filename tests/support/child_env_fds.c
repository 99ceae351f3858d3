/*
 * Test helper: child_env_fds [VAR] reports what it was started with, one
 * "key=value" line each on stdout:
 *   cwd=DIR          its working directory
 *   env=VALUE        $VAR, or "env=(unset)"
 *   fds=0,1,2        its open descriptors (from /proc/self/fd, minus the
 *                    one reading it)
 *   stdin=PATH       what fd 0 is (e.g. /dev/null, pipe:[...])
 *   stdin_read=eof   when the first read of stdin gives EOF, else
 *                    stdin_read=DATA with everything read until EOF
 *   sigign=HEX       the ignored and blocked signal masks (/proc/self/status)
 *   sigblk=HEX
 *   pid=N pgid=N sid=N
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
status_field(const char *key, const char *label)
{
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL)
    return;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, key, strlen(key)) == 0) {
      char *v = line + strlen(key);
      v += strspn(v, " \t");
      printf("%s=%s", label, v); /* v ends with its newline */
    }
  }
  fclose(f);
}

int
main(int argc, char **argv)
{
  char buf[4096];
  printf("cwd=%s\n", getcwd(buf, sizeof buf) ? buf : "(unknown)");
  const char *v = argc > 1 ? getenv(argv[1]) : NULL;
  printf("env=%s\n", v ? v : "(unset)");

  DIR *d = opendir("/proc/self/fd");
  printf("fds=");
  int first = 1;
  if (d != NULL) {
    int self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.' || atoi(e->d_name) == self)
        continue;
      printf(first ? "%s" : ",%s", e->d_name);
      first = 0;
    }
    closedir(d);
  }
  printf("\n");

  ssize_t n = readlink("/proc/self/fd/0", buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = '\0';
  printf("stdin=%s\n", buf);
  size_t len = 0;
  while (len < sizeof buf - 1 && (n = read(0, buf + len, sizeof buf - 1 - len)) > 0)
    len += (size_t)n;
  buf[len] = '\0';
  if (len == 0)
    printf("stdin_read=eof\n");
  else
    printf("stdin_read=%s\n", buf);

  status_field("SigIgn:", "sigign");
  status_field("SigBlk:", "sigblk");
  printf("pid=%d pgid=%d sid=%d\n", (int)getpid(), (int)getpgid(0), (int)getsid(0));
  return 0;
}
