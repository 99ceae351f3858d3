/*
 * Test helper: prints "first" as a line, then "no newline at the end"
 * without a trailing newline, and exits 0.
 */
#include <stdio.h>

int
main(void)
{
  printf("first\nno newline at the end");
  return 0;
}
