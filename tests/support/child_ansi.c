/*
 * Test helper: writes "\x1b[31mError:\x1b[0m boom\n" (a red "Error:") to
 * stderr and exits 0.
 */
#include <stdio.h>

int
main(void)
{
  fputs("\x1b[31mError:\x1b[0m boom\n", stderr);
  return 0;
}
