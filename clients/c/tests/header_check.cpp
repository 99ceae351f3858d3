// header_check.cpp: vigil/client.h compiles as C++ on its own (its extern
// "C" guards), and its declarations are what a C++ host would call.
#include <vigil/client.h>

int
main()
{
  vigil_error err;
  vigil_client *c = vigil_client_connect(nullptr, &err);
  return c == nullptr ? 0 : vigil_client_close(c);
}
