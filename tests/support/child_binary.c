/*
 * Test helper: writes the 8 bytes "a\0b\0\0c\xff\n" (NULs and a byte that is
 * not UTF-8) to stdout and exits 0.
 */
#include <unistd.h>

int
main(void)
{
  static const char bytes[] = "a\0b\0\0c\xff\n";
  return write(1, bytes, sizeof bytes - 1) == (ssize_t)(sizeof bytes - 1) ? 0 : 1;
}
