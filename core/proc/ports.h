/*
 * The TCP ports a monitor's processes listen on, found from /proc: "which
 * port did it take?" answered by the kernel, not by the program's output.
 *
 * A process's listening sockets are its descriptors that link to
 * "socket:[INODE]" (/proc/PID/fd) whose inode is a LISTEN row of its network
 * namespace's /proc/PID/net/tcp or tcp6. Those two tables are read once per
 * namespace per scan (a PortScan lives for one monitor_list or
 * monitor_status call), never once per monitor; most monitors share the
 * engine's namespace, so a list reads them once.
 *
 * TCP only: a UDP socket has no listening state, so every bound UDP socket
 * (a resolver's ephemeral port, an mDNS client) would look like a server's;
 * a dev server's port, the question asked, is a TCP listener.
 *
 * Everything read is hostile and bounded: a process that vanishes mid-scan
 * is skipped; at most PORTS_PIDS_MAX processes and PORTS_FDS_MAX descriptors
 * per monitor are looked at, PORTS_ROWS_MAX rows per table are read,
 * PORTS_NETNS_MAX namespaces are kept per scan, and PORTS_MAX ports are
 * reported per monitor; what a bound left out is counted in the scan.
 */
#ifndef VIGIL_PORTS_H
#define VIGIL_PORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/procfs.h"
#include "proc/reaper.h"

#define PORTS_MAX 16          /* ports reported per monitor */
#define PORTS_PIDS_MAX 256    /* processes of one monitor looked at */
#define PORTS_FDS_MAX 4096    /* descriptors of one monitor looked at */
#define PORTS_ROWS_MAX 16384  /* rows read of one tcp or tcp6 table */
#define PORTS_NETNS_MAX 8     /* network namespaces kept by one scan */
#define PORTS_ADDRESS_MAX 48  /* an address as text: INET6_ADDRSTRLEN and more */

/* One listening socket. */
typedef struct {
  uint16_t port;
  char address[PORTS_ADDRESS_MAX]; /* "127.0.0.1", "::", "0.0.0.0" */
} PortEntry;

typedef struct PortTable PortTable;

/* What one list or status call has read: the LISTEN rows of each network
 * namespace met so far, and what the bounds left out. */
typedef struct {
  PortTable *tables[PORTS_NETNS_MAX];
  size_t ntables;
  uint64_t truncated;   /* processes, descriptors, rows, namespaces or ports
                           a bound left out */
  ReaperTable procs;    /* the process table, for the callers that find a
                           monitor's processes without a cgroup
                           (contain_members_in): read once per scan, at
                           the first need */
} PortScan;

#define PORT_SCAN_INIT {{0}, 0, 0, {0}}

/* The ports the processes pids listen on, sorted by port then address,
 * each once, at most max (at most PORTS_MAX) into out. Returns how many. A
 * pid that is gone, or whose /proc cannot be read, gives nothing. */
size_t ports_of(PortScan *scan, const PidList *pids, PortEntry *out, size_t max);

/* Frees what the scan read, adding what its bounds left out to the
 * engine's count (ports_truncated). */
void ports_scan_free(PortScan *scan);

/* What the bounds of every scan freed so far left out (api_info's
 * containment.ports_truncated). */
uint64_t ports_truncated(void);

/* Reads one row of /proc/net/tcp or tcp6 (ipv6: its address form): true
 * when it is a LISTEN row, with its socket's inode and its port and
 * address; false for the header, any other state, or a row that does not
 * parse. Exposed for tests. */
bool ports_parse_row(const char *row, bool ipv6, uint64_t *inode, PortEntry *out);

#endif
