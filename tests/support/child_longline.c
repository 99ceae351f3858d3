/*
 * Test helper: writes one line of 102400 'x' bytes, then "after\n", to
 * stdout and exits 0.
 */
#include <stdio.h>
#include <string.h>

static char line[102400];

int
main(void)
{
  memset(line, 'x', sizeof line);
  fwrite(line, 1, sizeof line, stdout);
  fputs("\nafter\n", stdout);
  return 0;
}
