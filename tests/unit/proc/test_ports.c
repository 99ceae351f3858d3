/*
 * Tests of ports.c: the rows of /proc/net/tcp and tcp6 it believes (LISTEN
 * only, hostile rows refused), the ports of this very process found from
 * its descriptors, the bound on ports reported, and a pid that is gone.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "proc/ports.h"

TEST(a_listen_row_is_read_and_others_are_not)
{
  uint64_t ino = 0;
  PortEntry e;
  CHECK(ports_parse_row("   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 "
                        "00000000  1000        0 123456 1 0000000000000000 100 0 0 10 0\n",
                        false, &ino, &e));
  CHECK_INT(ino, 123456);
  CHECK_INT(e.port, 3000);
  CHECK_STR(e.address, "127.0.0.1");
  CHECK(ports_parse_row("   1: 00000000000000000000000000000000:1F90 "
                        "00000000000000000000000000000000:0000 0A 00000000:00000000 "
                        "00:00000000 00000000  1000        0 777 1 0000000000000000 100 0 0 10 0",
                        true, &ino, &e));
  CHECK_INT(ino, 777);
  CHECK_INT(e.port, 8080);
  CHECK_STR(e.address, "::");
  /* An established connection (01), the header, garbage, a missing inode. */
  CHECK(!ports_parse_row("   2: 0100007F:0BB8 0100007F:D431 01 00000000:00000000 00:00000000 "
                         "00000000  1000        0 999 1", false, &ino, &e));
  CHECK(!ports_parse_row("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
                         "retrnsmt   uid  timeout inode", false, &ino, &e));
  CHECK(!ports_parse_row("   3: 0100007G:0BB8 00000000:0000 0A", false, &ino, &e));
  CHECK(!ports_parse_row("   4: 0100007F:0BB8 00000000:0000 0A 00000000:00000000", false, &ino,
                         &e));
  CHECK(!ports_parse_row("", false, &ino, &e));
  /* A v4 row read as v6 is refused, not misread. */
  CHECK(!ports_parse_row("   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 "
                         "00000000  1000        0 123456 1", true, &ino, &e));
}

/* A socket listening on an ephemeral loopback port; its port in *port. */
static int
listen_on_loopback(uint16_t *port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0)
    return -1;
  *port = ntohs(a.sin_port);
  return fd;
}

TEST(this_process_ports_are_found_and_bounded)
{
  uint16_t port;
  int fd = listen_on_loopback(&port);
  CHECK(fd >= 0);
  /* A connected socket is not a listener. */
  int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  CHECK_INT(connect(client, (struct sockaddr *)&a, sizeof a), 0);
  PidList me = {0};
  pidlist_add(&me, getpid());
  PortScan scan = PORT_SCAN_INIT;
  PortEntry out[PORTS_MAX];
  size_t n = ports_of(&scan, &me, out, PORTS_MAX);
  CHECK_INT(n, 1);
  CHECK_INT(out[0].port, port);
  CHECK_STR(out[0].address, "127.0.0.1");
  CHECK_INT(scan.truncated, 0);
  CHECK_INT(scan.ntables, 1);
  /* The same pid twice in the list: each port once, the table read once. */
  pidlist_add(&me, getpid());
  CHECK_INT(ports_of(&scan, &me, out, PORTS_MAX), 1);
  CHECK_INT(scan.ntables, 1);
  ports_scan_free(&scan);

  /* More listeners than PORTS_MAX: PORTS_MAX reported, the rest counted. */
  int more[PORTS_MAX + 2];
  for (int i = 0; i < PORTS_MAX + 2; i++) {
    uint16_t p;
    more[i] = listen_on_loopback(&p);
    CHECK(more[i] >= 0);
  }
  PortScan scan2 = PORT_SCAN_INIT;
  CHECK_INT(ports_of(&scan2, &me, out, PORTS_MAX), PORTS_MAX);
  CHECK(scan2.truncated >= 3);
  for (size_t i = 1; i < PORTS_MAX; i++)
    CHECK(out[i - 1].port < out[i].port);
  /* The engine's count has what the scan left out once it is freed. */
  uint64_t before = ports_truncated();
  uint64_t left_out = scan2.truncated;
  ports_scan_free(&scan2);
  CHECK_INT(ports_truncated(), before + left_out);
  for (int i = 0; i < PORTS_MAX + 2; i++)
    close(more[i]);
  close(client);
  close(fd);
  pidlist_free(&me);
}

TEST(a_pid_that_is_gone_has_none)
{
  PidList gone = {0};
  pidlist_add(&gone, 0x3fffffff);
  PortScan scan = PORT_SCAN_INIT;
  PortEntry out[PORTS_MAX];
  CHECK_INT(ports_of(&scan, &gone, out, PORTS_MAX), 0);
  CHECK_INT(scan.ntables, 0);
  ports_scan_free(&scan);
  pidlist_free(&gone);
}

int
main(void)
{
  RUN(a_listen_row_is_read_and_others_are_not);
  RUN(this_process_ports_are_found_and_bounded);
  RUN(a_pid_that_is_gone_has_none);
  return check_summary();
}
