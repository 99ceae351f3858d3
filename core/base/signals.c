/*
 * Signal names (see signals.h). A table rather than sigabbrev_np (glibc
 * 2.32+ only); it maps by the macros, not by position, because the numbers
 * differ between architectures.
 */
#include "base/signals.h"

#include <signal.h>
#include <stddef.h>
#include <strings.h>

static const struct {
  int sig;
  const char *name;
} signals_table[] = {
  {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},       {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
  {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},     {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
  {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
  {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},     {SIGTERM, "SIGTERM"}, {SIGCHLD, "SIGCHLD"},
  {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},     {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"},
  {SIGTTOU, "SIGTTOU"}, {SIGURG, "SIGURG"},       {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
  {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"}, {SIGIO, "SIGIO"},
  {SIGSYS, "SIGSYS"},
};

#define SIGNALS_COUNT (sizeof signals_table / sizeof signals_table[0])

const char *
signals_name(int sig)
{
  for (size_t i = 0; i < SIGNALS_COUNT; i++)
    if (signals_table[i].sig == sig)
      return signals_table[i].name;
  return NULL;
}

int
signals_number(const char *name)
{
  if (name == NULL)
    return -1;
  if (strncasecmp(name, "SIG", 3) == 0)
    name += 3;
  for (size_t i = 0; i < SIGNALS_COUNT; i++)
    if (strcasecmp(signals_table[i].name + 3, name) == 0)
      return signals_table[i].sig;
  return -1;
}
