/*
 * vigild, the engine. Parses its arguments, loads the configuration (or
 * none: then every start is denied), starts the config's monitors, serves
 * msgpack-rpc on a Unix socket or on stdin/stdout, and on SIGTERM or SIGINT
 * (or stdin closing, with --stdio) stops every monitor's process group
 * (SIGTERM, then SIGKILL after the grace) and exits 0 once every process is
 * gone. A second SIGTERM/SIGINT skips the grace. "Every process" includes
 * the descendants that left their monitor's process group (contain.h); an
 * engine killed with SIGKILL cannot do any of this and leaves them running.
 *
 * Before it serves it opens and locks its state directory (statedir.h,
 * docs/restart.md), which a second engine on the same directory is refused;
 * the lock is held until the process exits. The socket's directory is
 * checked first, since the default state directory is made in it.
 *
 * With --nats (or the config's nats.url) it also publishes every named
 * session's notifications into NATS JetStream for a fleet's gateways
 * (docs/fleet.md), before it serves; on the way out it waits, bounded, for
 * the last of them to be acknowledged.
 *
 *   vigild [--listen [PATH] | --stdio] [--config FILE | --no-config]
 *          [--state-dir DIR | --no-state] [--daemon] [--log-file FILE [--log-max-bytes N]]
 *          [--nats URL [--nats-engine NAME] [--nats-creds FILE]
 *                      [--nats-tls-ca FILE] [--nats-tls-cert FILE --nats-tls-key FILE]]
 *   vigild --check-config FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/activation.h"
#include "api/api.h"
#include "engine/config.h"
#include "base/config_lookup.h"
#include "proc/contain.h"
#include "daemon/daemon.h"
#include "base/datadir.h"
#include "engine/engine.h"
#include "base/log.h"
#include "base/fdcloser.h"
#include "base/loopwatch.h"
#include "proc/proc.h"
#include "store/epoch.h"
#include "daemon/handover.h"
#include "proc/keeper_wire.h"
#include "daemon/logfile.h"
#include "monitor/monitor_keep.h"
#include "base/pidfile.h"
#include "engine/policytry.h"
#include "spec/fleet_names.h"
#include "fleet/fleet_publisher.h"
#include "fleet/fleet_rpc.h"
#include "rpc/server.h"
#include "session/session.h"
#include "store/statedir.h"

static const char vigild_usage[] =
    "usage: vigild [--listen [PATH] | --stdio] [--config FILE | --no-config]\n"
    "              [--state-dir DIR | --no-state]\n"
    "              [--daemon] [--log-file FILE [--log-max-bytes N]]\n"
    "              [--nats URL [--nats-engine NAME] [--nats-creds FILE]\n"
    "                          [--nats-tls-ca FILE] [--nats-tls-cert FILE --nats-tls-key FILE]]\n"
    "       vigild --check-config FILE\n"
    "\n"
    "  --listen [PATH]      serve on a Unix socket (the default; PATH defaults to\n"
    "                       $XDG_RUNTIME_DIR/vigil/vigil.sock, else /tmp/vigil-$UID/vigil.sock)\n"
    "  --stdio              serve one connection on stdin/stdout; exit when stdin closes\n"
    "  --config FILE        the Lua configuration. Default: $VIGIL_CONFIG, else\n"
    "                       ~/.config/vigil/vigil.lua ($XDG_CONFIG_HOME), else the bundled\n"
    "                       one; the one used is named on stderr at start. With --stdio\n"
    "                       (embedded): none unless given, so every start is denied\n"
    "  --no-config          no config file: the built-in defaults with an empty allowlist,\n"
    "                       so every start is denied (fail closed)\n"
    "  --state-dir DIR      the state directory, kept across restarts (made 0700 if\n"
    "                       missing; refused if it is a link, another user's or open\n"
    "                       to group or others; one engine per directory). Default:\n"
    "                       the config's state.dir, else \"state\" beside the socket\n"
    "                       (with --stdio: none)\n"
    "  --no-state           no state directory, whatever the config says\n"
    "  --check-config FILE  check a configuration and exit: 0 when good, 1 with the reason;\n"
    "                       its monitors are checked as starting them would be (run it\n"
    "                       as the engine's user, from its directory)\n"
    "  --daemon             go into the background, returning once the engine listens;\n"
    "                       its log goes to --log-file, else vigild.log beside the socket\n"
    "  --log-file FILE      log to FILE (appended, made 0600) instead of stderr; past\n"
    "                       --log-max-bytes (default 16 MiB) it moves to FILE.1\n"
    "  --nats URL           also publish every named session's notifications into NATS\n"
    "                       JetStream (docs/fleet.md); overrides the config's nats.url\n"
    "  --nats-engine NAME   this engine's name in the fleet's subjects (default: the\n"
    "                       config's nats.engine, else the host name)\n"
    "  --nats-creds FILE    the NATS credentials (.creds) file; overrides nats.creds\n"
    "  --nats-tls-ca FILE   TLS to the NATS server, trusting the CA certificates (PEM) of\n"
    "                       FILE for its certificate; overrides nats.tls_ca\n"
    "  --nats-tls-cert FILE, --nats-tls-key FILE\n"
    "                       TLS with this client certificate and its key (PEM), for a\n"
    "                       server that asks for one; together; override nats.tls_cert\n"
    "                       and nats.tls_key\n"
    "  --version            print the version\n"
    "\n"
    "Logs go to stderr (VIGIL_LOG=debug|info|warn|error); with --stdio, or started in\n"
    "the background from a terminal (vigild &), only warnings and errors, unless\n"
    "VIGIL_LOG says.\n"
    "Under systemd, a socket passed with LISTEN_FDS is served (its path, unless --listen).\n"
    "VIGIL_DATA_DIR overrides where the bundled policies and Lua modules are found\n"
    "(default: ../share/vigil beside this executable when installed).\n"
    "VIGIL_CGROUP=auto|v2|v1|none chooses the cgroups monitors are contained in\n"
    "(default auto: whatever this machine lets vigild use; none: subreaper and /proc).\n";

typedef struct {
  uv_loop_t loop;
  Engine *engine;
  Api *api;                /* the engine's msgpack-rpc front end */
  StateDir state_dir;      /* the state directory while open ... */
  char keeper_program[4096]; /* vigil-keeper's path, with a state directory */
  StateDir *state;         /* ... and then &state_dir; NULL: none. The
                              engine borrows it; it is closed after the
                              loop ends, so its lock outlives every monitor */
  uv_signal_t sigterm, sigint, sighup, sigusr2;
  int signals_seen;
  char exe[4096];          /* the path vigild was started from (/proc/self/exe
                              at start): a graceful restart runs what is
                              there then */
  char **argv;             /* as started, for the same */
  int handed_over;         /* the listening socket an earlier image handed
                              over (handover.h) or a service manager passed
                              (activation.h), -1: none */
  bool keep_socket_file;   /* that socket's file is the service manager's */
  int ready_fd;            /* --daemon: the pipe the waiting parent reads, -1: none */
  bool socket_dir_made;    /* --daemon made the socket's directory before the
                              log could say so */
  int restored;            /* sessions and monitors taken back from the
                              state directory at this start */
  char pidfile[PIDFILE_PATH_MAX]; /* the pidfile written beside the socket
                                     (pidfile.h), "": none */
  FleetPublisher *fleet;   /* publishing into NATS (docs/fleet.md), or NULL */
  FleetRpc *fleet_rpc;     /* answering requests over NATS (docs/fleet.md section 6), or NULL */
} Vigild;

static Vigild vigild;

/* What the descriptor table is sized for at start-up (proc_reserve_fds). */
#define VIGILD_FDS_PER_MONITOR 10
#define VIGILD_FDS_BASE 256

/* Every process is gone and the fleet's publisher has drained: close what
 * keeps the loop alive so uv_run returns. */
static void
vigild_finish(void *data)
{
  Engine *e = data;
  /* The bridge first: it answers through the publisher's link. */
  fleet_rpc_free(vigild.fleet_rpc);
  vigild.fleet_rpc = NULL;
  fleet_publisher_free(vigild.fleet);
  vigild.fleet = NULL;
  if (vigild.api)
    api_set_nats_info(vigild.api, NULL, NULL);
  uv_close((uv_handle_t *)&vigild.sigterm, NULL);
  uv_close((uv_handle_t *)&vigild.sigint, NULL);
  uv_close((uv_handle_t *)&vigild.sighup, NULL);
  uv_close((uv_handle_t *)&vigild.sigusr2, NULL);
  loopwatch_stop();
  api_free(vigild.api);
  vigild.api = NULL;
  engine_free(e);
  vigild.engine = NULL;
}

/* Every process is gone: the last notifications go out to the fleet
 * (bounded by nats.ack_timeout_ms), then the engine ends. */
static void
vigild_drained(Engine *e)
{
  LOG_INFO("vigild", "every monitor has ended; exiting");
  if (vigild.fleet)
    fleet_publisher_drain(vigild.fleet,
                          (uint64_t)e->config.settings.nats_ack_timeout_ms, vigild_finish, e);
  else
    vigild_finish(e);
}

static void vigild_restart_now(void *unused);

/* SIGUSR2: the graceful restart (handover.h), when there is something to
 * come back to: a state directory, and a socket to hand over. */
static void
vigild_restart(void)
{
  const char *no = vigild.signals_seen > 0 ? "the engine is shutting down"
                   : vigild.state == NULL ? "there is no state directory to come back from"
                   : api_listen_fd(vigild.api) < 0 ? "there is no socket to hand over (--stdio)"
                   : vigild.exe[0] == '\0' ? "vigild's own path is unknown"
                   : NULL;
  if (no != NULL) {
    LOG_WARN("vigild", "SIGUSR2: no graceful restart: %s", no);
    return;
  }
  /* Once every keeper being launched runs and is named in its spec. */
  proc_keeper_launches_settled(vigild_restart_now, NULL);
}

/* The restart itself, once no keeper is being launched. */
static void
vigild_restart_now(void *unused)
{
  (void)unused;
  if (vigild.signals_seen > 0) {
    LOG_WARN("vigild", "SIGUSR2: no graceful restart: the engine is shutting down");
    return;
  }
  LOG_INFO("vigild", "SIGUSR2: restarting as %s (same pid %ld); every monitor goes on, and "
           "hosts resume with last_seq", vigild.exe, (long)getpid());
  VigilError err = VIGIL_ERROR_INIT;
  handover_exec(vigild.exe, vigild.argv, api_listen_fd(vigild.api), vigild.keep_socket_file,
                &err);
  LOG_ERROR("vigild", "SIGUSR2: %s; this engine goes on", err.msg);
}

static void
vigild_on_signal(uv_signal_t *h, int signum)
{
  if (signum == SIGUSR2) {
    vigild_restart();
    return;
  }
  if (signum == SIGHUP) {
    /* The same reload as config_reload: all or nothing. */
    VigilError err = VIGIL_ERROR_INIT;
    if (vigild.engine && engine_reload(vigild.engine, &err) != 0)
      LOG_WARN("vigild", "SIGHUP: reload refused, the old configuration stays: %s", err.msg);
    return;
  }
  vigild.signals_seen++;
  bool hard = vigild.signals_seen > 1;
  LOG_INFO("vigild", "%s: stopping every monitor%s", signum == SIGINT ? "SIGINT" : "SIGTERM",
           hard ? " now (SIGKILL)" : "");
  if (vigild.engine)
    engine_shutdown(vigild.engine, hard);
}

/* Makes sure fds 0..2 are open (on /dev/null) so nothing else lands there. */
static void
vigild_std_fds(void)
{
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) == -1) {
      int null = open("/dev/null", O_RDWR);
      if (null >= 0 && null != fd) {
        dup2(null, fd);
        close(null);
      }
    }
  }
}

/* --check-config: the file, its policies and every boot monitor as the
 * start would check it (engine_check_config), with nothing started. */
static int
vigild_check_config(const char *path)
{
  VigilConfig cfg;
  VigilError err = VIGIL_ERROR_INIT;
  if (config_load(path, &cfg, &err) != 0 || engine_check_config(&cfg, &err) != 0) {
    fprintf(stderr, "vigild: %s\n", err.msg);
    config_free(&cfg);
    return 1;
  }
  printf("%s: ok (%zu allowed commands, %zu monitors, shell %s, live mode %s)\n", path,
         cfg.allowed_commands.n, cfg.nmonitors, cfg.allow_shell ? "allowed" : "denied",
         cfg.live_mode_enabled ? "enabled" : "disabled");
  config_free(&cfg);
  return 0;
}

/* What the command line asked for. */
typedef struct {
  const char *config_path;
  const char *config_how; /* how config_path was found (config_lookup.h) */
  bool no_config;         /* --no-config */
  const char *listen_path;
  const char *state_dir; /* --state-dir, or NULL */
  bool stdio, listen;
  bool no_state;         /* --no-state */
  bool daemon;            /* --daemon */
  const char *log_file;  /* --log-file, or NULL: stderr */
  uint64_t log_max_bytes; /* --log-max-bytes */
  const char *nats_url;    /* --nats, or NULL: the config's nats.url */
  const char *nats_engine; /* --nats-engine */
  const char *nats_creds;  /* --nats-creds */
  const char *nats_tls_ca;   /* --nats-tls-ca */
  const char *nats_tls_cert; /* --nats-tls-cert, with --nats-tls-key */
  const char *nats_tls_key;  /* --nats-tls-key */
} VigildArgs;

/* Parses the command line into args. Returns -1 to go on, else the exit
 * status (after --version, --help, --check-config or a usage error). */
static int
vigild_parse_args(int argc, char **argv, VigildArgs *args)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--stdio") == 0) {
      args->stdio = true;
    } else if (strcmp(a, "--listen") == 0) {
      args->listen = true;
      if (i + 1 < argc && argv[i + 1][0] != '-')
        args->listen_path = argv[++i];
    } else if (strcmp(a, "--config") == 0 && i + 1 < argc) {
      args->config_path = argv[++i];
    } else if (strcmp(a, "--no-config") == 0) {
      args->no_config = true;
    } else if (strcmp(a, "--state-dir") == 0 && i + 1 < argc) {
      args->state_dir = argv[++i];
    } else if (strcmp(a, "--no-state") == 0) {
      args->no_state = true;
    } else if (strcmp(a, "--daemon") == 0) {
      args->daemon = true;
    } else if (strcmp(a, "--nats") == 0 && i + 1 < argc) {
      args->nats_url = argv[++i];
    } else if (strcmp(a, "--nats-engine") == 0 && i + 1 < argc) {
      args->nats_engine = argv[++i];
    } else if (strcmp(a, "--nats-creds") == 0 && i + 1 < argc) {
      args->nats_creds = argv[++i];
    } else if (strcmp(a, "--nats-tls-ca") == 0 && i + 1 < argc) {
      args->nats_tls_ca = argv[++i];
    } else if (strcmp(a, "--nats-tls-cert") == 0 && i + 1 < argc) {
      args->nats_tls_cert = argv[++i];
    } else if (strcmp(a, "--nats-tls-key") == 0 && i + 1 < argc) {
      args->nats_tls_key = argv[++i];
    } else if (strcmp(a, "--log-file") == 0 && i + 1 < argc) {
      args->log_file = argv[++i];
    } else if (strcmp(a, "--log-max-bytes") == 0 && i + 1 < argc) {
      char *end = NULL;
      const char *v = argv[++i];
      errno = 0;
      unsigned long long n = strtoull(v, &end, 10);
      if (errno != 0 || end == v || *end != '\0' || v[0] == '-' || n < LOGFILE_MIN_BYTES ||
          n > LOGFILE_MAX_MAX_BYTES) {
        fprintf(stderr, "vigild: --log-max-bytes must be %llu..%llu, got \"%s\"\n",
                (unsigned long long)LOGFILE_MIN_BYTES, (unsigned long long)LOGFILE_MAX_MAX_BYTES,
                v);
        return 2;
      }
      args->log_max_bytes = n;
    } else if (strcmp(a, "--check-config") == 0 && i + 1 < argc) {
      return vigild_check_config(argv[i + 1]);
    } else if (strcmp(a, "--version") == 0) {
      printf("vigild %s (api level %d)\n", VIGIL_VERSION, VIGIL_API_LEVEL);
      return 0;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(vigild_usage, stdout);
      return 0;
    } else {
      fprintf(stderr, "vigild: unknown or incomplete argument \"%s\"\n\n%s", a, vigild_usage);
      return 2;
    }
  }
  if (args->stdio && args->listen) {
    fprintf(stderr, "vigild: --stdio and --listen cannot be combined\n");
    return 2;
  }
  if (args->config_path && args->no_config) {
    fprintf(stderr, "vigild: --config and --no-config cannot be combined (--config %s names a "
                    "config, --no-config asks for none)\n",
            args->config_path);
    return 2;
  }
  if (args->state_dir && args->no_state) {
    fprintf(stderr, "vigild: --state-dir and --no-state cannot be combined (--state-dir %s "
                    "asks for a state directory, --no-state for none)\n",
            args->state_dir);
    return 2;
  }
  if (args->daemon && args->stdio) {
    fprintf(stderr, "vigild: --daemon and --stdio cannot be combined (--stdio serves the "
                    "process that started it, on its stdin and stdout)\n");
    return 2;
  }
  if (args->log_max_bytes != 0 && args->log_file == NULL && !args->daemon) {
    fprintf(stderr, "vigild: --log-max-bytes bounds the --log-file (or --daemon's log), and "
                    "neither was given\n");
    return 2;
  }
  if (args->nats_engine && !fleet_engine_name_ok(args->nats_engine)) {
    fprintf(stderr, "vigild: --nats-engine must be 1..%d of A-Z a-z 0-9 _ -, got \"%s\"\n",
            FLEET_ENGINE_NAME_MAX, args->nats_engine);
    return 2;
  }
  if (args->nats_url && (args->nats_url[0] == '\0' || strpbrk(args->nats_url, " \t\r\n"))) {
    fprintf(stderr, "vigild: --nats needs one or more URLs (nats://host:port), comma-separated, "
                    "without spaces, got \"%s\"\n", args->nats_url);
    return 2;
  }
  if (args->nats_creds && args->nats_creds[0] == '\0') {
    fprintf(stderr, "vigild: --nats-creds needs a file, got \"\"\n");
    return 2;
  }
  const char *tls_files[][2] = {{"--nats-tls-ca", args->nats_tls_ca},
                                 {"--nats-tls-cert", args->nats_tls_cert},
                                 {"--nats-tls-key", args->nats_tls_key}};
  for (size_t i = 0; i < sizeof tls_files / sizeof tls_files[0]; i++)
    if (tls_files[i][1] && tls_files[i][1][0] == '\0') {
      fprintf(stderr, "vigild: %s needs a file, got \"\"\n", tls_files[i][0]);
      return 2;
    }
  if ((args->nats_tls_cert == NULL) != (args->nats_tls_key == NULL)) {
    fprintf(stderr, "vigild: --nats-tls-cert and --nats-tls-key go together (a client "
                    "certificate and its private key), got only %s \"%s\"\n",
            args->nats_tls_cert ? "--nats-tls-cert" : "--nats-tls-key",
            args->nats_tls_cert ? args->nats_tls_cert : args->nats_tls_key);
    return 2;
  }
  if (args->state_dir && args->state_dir[0] == '\0') {
    fprintf(stderr, "vigild: --state-dir needs a directory, got \"\"\n");
    return 2;
  }
  return -1;
}

/* Which config to load when --config names none and --no-config is not
 * given: the lookup every vigil program shares (config_lookup.h). Said on
 * stderr before the log is placed, so that it reaches the terminal even
 * when the engine then goes into the background or logs to a file. None
 * found leaves config_path NULL (the start then warns). An embedded engine
 * (--stdio) looks up nothing: its host program names its config or gets
 * none, and then every start is denied (fail closed), whatever the user
 * running that program keeps in ~/.config/vigil. */
static void
vigild_find_config(VigildArgs *args)
{
  static char path[CONFIG_LOOKUP_PATH_MAX];
  if (args->config_path != NULL) {
    args->config_how = CONFIG_LOOKUP_GIVEN;
    return;
  }
  if (args->no_config || args->stdio)
    return;
  const char *how = NULL;
  if (!config_lookup(NULL, path, sizeof path, &how))
    return;
  args->config_path = path;
  args->config_how = how;
  /* Restarted in place (SIGUSR2), stderr is no terminal's: the log says it. */
  if (getenv(HANDOVER_LISTEN_ENV) == NULL)
    fprintf(stderr, "vigild: config %s (%s; --config FILE names another)\n", path, how);
}

/* Where the log goes: the --log-file, or stderr. Started in the
 * background from a terminal (`vigild &`) with neither a log file nor
 * VIGIL_LOG, the engine writes only warnings and errors there, so its
 * lines do not interleave with the person's own commands; one line says
 * so. Returns -1 (said) when the log file cannot be opened. */
static int
vigild_place_log(VigildArgs *args)
{
  if (args->daemon) {
    /* The log file --daemon writes to: --log-file, else vigild.log beside
     * the socket (its directory is the engine's own, private). */
    static char log_path[4096];
    const char *listen = args->listen_path;
    char deflt[4096];
    if (args->log_file != NULL) {
      snprintf(log_path, sizeof log_path, "%s", args->log_file);
    } else {
      if (listen == NULL && rpc_default_socket_path(deflt, sizeof deflt) == 0)
        listen = deflt;
      char *dir = rpc_server_dir_of(listen != NULL ? listen : ".");
      /* The socket's directory, made when missing and held to the checks
       * listening makes before anything is written in it: a directory
       * another user owns or can write is refused here, with no log file
       * made in it. Nothing is logged before the fork (the log's thread
       * would stay behind in the parent); the engine says later that it
       * made the directory. */
      VigilError err = VIGIL_ERROR_INIT;
      if (listen != NULL &&
          rpc_server_check_path(listen, &vigild.socket_dir_made, &err) != 0) {
        fprintf(stderr, "vigild: %s\n", err.msg);
        free(dir);
        return -1;
      }
      int n = snprintf(log_path, sizeof log_path, "%s/vigild.log", dir);
      free(dir);
      if (n < 0 || (size_t)n >= sizeof log_path) {
        fprintf(stderr, "vigild: --daemon: the log's path beside the socket is too long; "
                        "give --log-file\n");
        return -1;
      }
    }
    uint64_t max = args->log_max_bytes ? args->log_max_bytes : LOGFILE_MAX_BYTES;
    /* Restarted in place (SIGUSR2), the engine is already in the
     * background: it only takes its log file back. */
    if (getenv(HANDOVER_LISTEN_ENV) != NULL) {
      VigilError err = VIGIL_ERROR_INIT;
      if (logfile_open(log_path, max, &err) != 0) {
        fprintf(stderr, "vigild: %s\n", err.msg);
        return -1;
      }
      return 0;
    }
    vigild.ready_fd = daemon_detach(log_path, max);
    return vigild.ready_fd < 0 ? -1 : 0;
  }
  if (args->log_file != NULL) {
    VigilError err = VIGIL_ERROR_INIT;
    uint64_t max = args->log_max_bytes ? args->log_max_bytes : LOGFILE_MAX_BYTES;
    if (logfile_open(args->log_file, max, &err) != 0) {
      fprintf(stderr, "vigild: %s\n", err.msg);
      return -1;
    }
    return 0;
  }
  const char *level = getenv("VIGIL_LOG");
  if (level != NULL && level[0] != '\0')
    return 0;
  /* Embedded (--stdio: a client library's Engine.spawn), the engine's
   * stderr is the host program's: its info lines would stand among the
   * host's own output. Warnings and errors still come; VIGIL_LOG=info
   * asks for the rest. */
  if (args->stdio) {
    log_set_level(kLogWarn);
    return 0;
  }
  if (!isatty(2))
    return 0;
  pid_t foreground = tcgetpgrp(2);
  if (foreground < 0 || foreground == getpgrp())
    return 0;
  log_set_level(kLogWarn);
  fputs("vigild: in the background: only warnings and errors are logged here "
        "(--log-file FILE keeps everything, VIGIL_LOG=info shows it here)\n", stderr);
  return 0;
}

/* Makes the engine, its front end and the signal handlers. */
static void
vigild_setup(VigilConfig *cfg, const char *config_path)
{
  /* The descriptor table sized for max_monitors now, once (proc.h): grown
   * later, inside a start, each doubling waited ~10 ms in the kernel with
   * the loop stopped. About ten per monitor (its pipes, control socket,
   * spools, event log and directory) and room for the connections. */
  uint64_t fds = proc_reserve_fds((uint64_t)cfg->settings.max_monitors * VIGILD_FDS_PER_MONITOR +
                                  VIGILD_FDS_BASE);
  LOG_INFO("vigild", "descriptor table sized for %" PRIu64 " descriptors", fds);
  uv_loop_init(&vigild.loop);
  /* Its turns measured for api_info's "loop" (loopwatch.h). */
  int watch = loopwatch_start(&vigild.loop);
  /* The last closes of removed files go to the pool (fdcloser.h). */
  fdcloser_use_loop(&vigild.loop);
  if (watch != 0)
    LOG_WARN("vigild", "the loop's turns cannot be measured (%s): api_info's loop counts stay 0",
             uv_strerror(watch));
  vigild.engine = engine_new(&vigild.loop, cfg, config_path);
  vigild.engine->on_drained = vigild_drained;
  vigild.api = api_new(vigild.engine);
  uv_signal_init(&vigild.loop, &vigild.sigterm);
  uv_signal_init(&vigild.loop, &vigild.sigint);
  uv_signal_init(&vigild.loop, &vigild.sighup);
  uv_signal_init(&vigild.loop, &vigild.sigusr2);
  uv_signal_start(&vigild.sigterm, vigild_on_signal, SIGTERM);
  uv_signal_start(&vigild.sigint, vigild_on_signal, SIGINT);
  uv_signal_start(&vigild.sighup, vigild_on_signal, SIGHUP);
  uv_signal_start(&vigild.sigusr2, vigild_on_signal, SIGUSR2);
}

/* path made absolute into out (prefixed with the cwd when relative), so
 * that api_info and the log name a directory any client can find, and so
 * that the directory stays the same whatever the engine's cwd later is. */
static int
vigild_absolute(const char *path, char *out, size_t size, VigilError *err)
{
  char cwd[4096];
  int n;
  if (path[0] == '/')
    n = snprintf(out, size, "%s", path);
  else if (getcwd(cwd, sizeof cwd) == NULL)
    return error_set(err, kErrInternal, "state.dir: cannot make %s absolute: getcwd: %s", path,
                     strerror(errno));
  else
    n = snprintf(out, size, "%s/%s", cwd, path);
  if (n < 0 || (size_t)n >= size)
    return error_set(err, kErrInternal, "state.dir: %s: the path must be at most %zu bytes, "
                     "got %d", path, size - 1, n);
  return 0;
}

/* Which state directory to open, into out, and why: --no-state gives none;
 * else --state-dir; else the config's state.dir; else, serving on a socket,
 * "state" in the socket's directory (whatever path the socket got); with
 * --stdio, none (docs/restart.md: the host owns that engine's life). Sets
 * *none to what says there is none, else NULL. */
static int
vigild_state_path(const VigildArgs *args, const char *listen_path, char *out, size_t size,
                  const char **none, VigilError *err)
{
  const char *cfg_dir = vigild.engine->config.state_dir;
  *none = NULL;
  if (args->no_state) {
    *none = "--no-state";
    return 0;
  }
  if (args->state_dir)
    return vigild_absolute(args->state_dir, out, size, err);
  if (cfg_dir)
    return vigild_absolute(cfg_dir, out, size, err);
  if (listen_path == NULL) {
    *none = "--stdio without --state-dir";
    return 0;
  }
  /* "." (a bare socket name) adds nothing to the cwd vigild_absolute puts
   * in front, and "/" needs no second slash. */
  char *dir = rpc_server_dir_of(listen_path);
  char beside[4096];
  int n = strcmp(dir, ".") == 0   ? snprintf(beside, sizeof beside, "state")
          : strcmp(dir, "/") == 0 ? snprintf(beside, sizeof beside, "/state")
                                  : snprintf(beside, sizeof beside, "%s/state", dir);
  free(dir);
  if (n < 0 || (size_t)n >= sizeof beside)
    return error_set(err, kErrInternal,
                     "state.dir: the directory beside %s must be at most %zu bytes, got %d",
                     listen_path, sizeof beside - 1, n);
  return vigild_absolute(beside, out, size, err);
}

/* A monitor an earlier engine left, taken over by this one. */
static bool
vigild_take(void *ctx, MonitorKeep *keep, const KeepSpec *spec, ProcAdoptOptions *po,
            VigilError *err)
{
  return engine_adopt(ctx, keep, spec, po, err) == 0;
}

/* Finds vigil-keeper (docs/restart.md) beside vigild's own executable, as
 * the kernel names it: installed or built, the two are made together, and
 * a PATH lookup would let the environment choose what every monitored
 * program runs under. */
static int
vigild_find_keeper(VigilError *err)
{
  const char *exe = vigild.exe;
  if (exe[0] == '\0')
    return error_set(err, kErrInternal, "state.dir: cannot find vigild's own path "
                     "(/proc/self/exe) to find " KEEPER_PROGRAM " beside it");
  char *slash = strrchr(exe, '/');
  size_t dir = slash != NULL ? (size_t)(slash - exe) : 0;
  int len = snprintf(vigild.keeper_program, sizeof vigild.keeper_program, "%.*s/%s", (int)dir,
                     exe, KEEPER_PROGRAM);
  struct stat st;
  /* For tests only (docs/settings.md, "Test-only environment"): a program
   * that stands in front of vigil-keeper (and execs it, or never does), to
   * hold a keeper's hello back, and the bound on that hello. Read from
   * vigild's own environment, which whoever starts vigild controls as much
   * as its executable; never from a request or a config. */
  const char *test_keeper = getenv("VIGIL_TEST_KEEPER");
  if (test_keeper != NULL && test_keeper[0] == '/') {
    len = snprintf(vigild.keeper_program, sizeof vigild.keeper_program, "%s", test_keeper);
    LOG_WARN("vigild", "VIGIL_TEST_KEEPER: keepers are started as %s (a test setting)",
             vigild.keeper_program);
  }
  const char *hello_ms = getenv("VIGIL_TEST_KEEPER_HELLO_MS");
  if (hello_ms != NULL) {
    char *end;
    long long ms = strtoll(hello_ms, &end, 10);
    if (*end == '\0' && ms > 0 && ms <= 3600000) {
      proc_keeper_set_hello_ms(ms);
      LOG_WARN("vigild", "VIGIL_TEST_KEEPER_HELLO_MS: a keeper's hello is awaited %lld ms "
               "(a test setting)", ms);
    }
  }
  if (len < 0 || (size_t)len >= sizeof vigild.keeper_program ||
      stat(vigild.keeper_program, &st) != 0 || !S_ISREG(st.st_mode) ||
      access(vigild.keeper_program, X_OK) != 0)
    return error_set(err, kErrInternal, "state.dir: %s is needed to keep monitors across a "
                     "restart and is missing or not executable (--no-state runs without)",
                     vigild.keeper_program);
  return 0;
}

/* Opens and locks the state directory (statedir.h), if there is one, and
 * gives it to the engine, before anything is served or started. */
static int
vigild_open_state(const VigildArgs *args, const char *listen_path, VigilError *err)
{
  char path[4096];
  const char *none = NULL;
  if (vigild_state_path(args, listen_path, path, sizeof path, &none, err) != 0)
    return -1;
  if (none != NULL) {
    LOG_INFO("vigild", "no state directory (%s)", none);
    return 0;
  }
  if (vigild_find_keeper(err) != 0)
    return -1;
  if (statedir_open(&vigild.state_dir, path, err) != 0)
    return -1;
  vigild.state = &vigild.state_dir;
  vigild.engine->state = vigild.state;
  vigild.engine->keeper_program = vigild.keeper_program;
  LOG_INFO("vigild", "state directory %s (locked by pid %ld)", path, (long)getpid());
  /* What an earlier engine left, in order: its epoch (kept, so hosts'
   * cursors stay good), its sessions, then its monitors into them. */
  VigilError epoch_err = VIGIL_ERROR_INIT;
  bool kept = epoch_keep(vigild.state->dir_fd, &epoch_err);
  if (epoch_err.set)
    LOG_WARN("vigild", "%s (a restart draws a new epoch)", epoch_err.msg);
  int restored = session_registry_restore(
      vigild.engine->sessions, vigild.state->dir_fd, vigild.state->sessions_fd,
      (uint64_t)vigild.engine->config.settings.state_journal_max_bytes);
  if (kept || restored > 0)
    LOG_INFO("vigild", "epoch %s %s; %d session(s) brought back", epoch_hex(),
             kept ? "kept from the engine before" : "new", restored);
  vigild.restored = restored;
  int taken = monitor_keep_sweep(vigild.state->dir_fd, vigild.state->monitors_fd, vigild_take,
                                 vigild.engine);
  if (taken > 0)
    LOG_INFO("vigild", "took over %d monitor(s) an earlier engine left", taken);
  vigild.restored += taken;
  return 0;
}

/* Writes the pidfile beside the socket the engine now listens on
 * (pidfile.h). One that cannot be written costs a warning, not the start:
 * nothing of vigil depends on it. */
static void
vigild_write_pidfile(const char *listen_path)
{
  char path[PIDFILE_PATH_MAX];
  VigilError err = VIGIL_ERROR_INIT;
  pid_t stale = 0;
  if (pidfile_path(listen_path, path, sizeof path) != 0) {
    LOG_WARN("vigild", "pidfile: the path beside %s is too long; running without one",
             listen_path);
    return;
  }
  if (pidfile_write(path, getpid(), &stale, &err) != 0) {
    LOG_WARN("vigild", "%s", err.msg);
    return;
  }
  snprintf(vigild.pidfile, sizeof vigild.pidfile, "%s", path);
  if (stale > 0 && stale != getpid())
    LOG_INFO("vigild", "pidfile %s: replaced a stale one naming pid %ld (it does not serve "
             "the socket)", path, (long)stale);
  else
    LOG_INFO("vigild", "pidfile %s", path);
}

/* Publishing into NATS JetStream (docs/fleet.md), when --nats or the
 * config's nats.url asks for it: after the sessions came back from the
 * state directory (their unacknowledged notifications go again), before
 * anything is served or started. A server that refuses stops the start. */
static void
vigild_nats_info(void *data, msgpack_packer *pk)
{
  (void)data;
  fleet_publisher_pack_info(vigild.fleet, pk, 1);
  msgpack_pack_str(pk, 3);
  msgpack_pack_str_body(pk, "rpc", 3);
  fleet_rpc_pack_info(vigild.fleet_rpc, pk);
}

static int
vigild_start_fleet(const VigildArgs *args, VigilError *err)
{
  const VigilConfig *cfg = &vigild.engine->config;
  const char *url = args->nats_url ? args->nats_url : cfg->nats_url;
  if (url == NULL)
    return 0;
  char engine_name[FLEET_ENGINE_NAME_MAX + 1];
  const char *engine = args->nats_engine ? args->nats_engine : cfg->nats_engine;
  if (engine == NULL) {
    fleet_engine_name_default(engine_name);
    engine = engine_name;
  }
  const VigilSettings *st = &cfg->settings;
  FleetConfig fc = {
    .url = url,
    .creds = args->nats_creds ? args->nats_creds : cfg->nats_creds,
    .tls_ca = args->nats_tls_ca ? args->nats_tls_ca : cfg->nats_tls_ca,
    /* Both from the flags or both from the config: each side checked that
     * it gives the two together. */
    .tls_cert = args->nats_tls_cert ? args->nats_tls_cert : cfg->nats_tls_cert,
    .tls_key = args->nats_tls_cert ? args->nats_tls_key : cfg->nats_tls_key,
    .stream = cfg->nats_stream ? cfg->nats_stream : "VIGIL",
    .engine = engine,
    .connect_timeout_ms = st->nats_connect_timeout_ms,
    .ack_timeout_ms = st->nats_ack_timeout_ms,
    .max_in_flight = st->nats_max_in_flight,
    .retry_min_ms = st->nats_retry_min_ms,
    .retry_max_ms = st->nats_retry_max_ms,
    .max_age_ms = st->nats_max_age_ms,
    .max_bytes = st->nats_max_bytes,
    .duplicate_window_ms = st->nats_duplicate_window_ms,
  };
  vigild.fleet = fleet_publisher_start(vigild.engine, &fc, err);
  if (vigild.fleet == NULL)
    return -1;
  /* Requests (docs/fleet.md section 6) over the same connection. */
  FleetRpcConfig rc = {
    .engine = engine,
    .max_clients = st->nats_max_clients,
    .client_idle_ms = st->nats_client_idle_ms,
    .connect_timeout_ms = st->nats_connect_timeout_ms,
  };
  vigild.fleet_rpc = fleet_rpc_start(vigild.engine, vigild.api, fleet_publisher_link(vigild.fleet),
                                     &rc);
  api_set_nats_info(vigild.api, vigild_nats_info, NULL);
  return 0;
}

/* Loads the policies, opens the state directory and the transport, and
 * starts the config's monitors. Returns 0, or 1 with err set. */
static int
vigild_serve(const VigildArgs *args, VigilError *err)
{
  /* A policy that does not load stops the start, like a bad config. */
  if (engine_preload_policies(vigild.engine->policies, &vigild.engine->config, err) != 0)
    return 1;
  char path[4096];
  const char *listen_path = NULL;
  if (!args->stdio) {
    listen_path = args->listen_path;
    /* A socket made for this engine (a service manager's, or the one an
     * earlier image listened on) is where it serves unless --listen says. */
    if (listen_path == NULL && vigild.handed_over >= 0 &&
        activation_socket_path(vigild.handed_over, path, sizeof path) == 0)
      listen_path = path;
    if (listen_path == NULL) {
      if (rpc_default_socket_path(path, sizeof path) != 0) {
        error_set(err, kErrInternal, "the default socket path is too long");
        return 1;
      }
      listen_path = path;
    }
    /* The socket's directory before the state directory: the default one
     * is made in it, and a directory vigild refuses must get nothing. */
    bool made = false;
    if (rpc_server_check_path(listen_path, &made, err) != 0)
      return 1;
    if (made || vigild.socket_dir_made)
      rpc_server_log_made_dir(listen_path);
  }
  /* Before serving: a second engine on the same directory is refused here,
   * before it could touch the first one's socket. */
  if (vigild_open_state(args, listen_path, err) != 0)
    return 1;
  if (vigild_start_fleet(args, err) != 0)
    return 1;
  if (args->stdio) {
    if (vigild.handed_over >= 0)
      close(vigild.handed_over); /* nothing to listen on with --stdio */
    vigild.handed_over = -1;
    if (api_open_stdio(vigild.api, err) != 0)
      return 1;
  } else {
    VigilError handed_err = VIGIL_ERROR_INIT;
    bool handed = vigild.handed_over >= 0 &&
                  api_listen_handed_over(vigild.api, vigild.handed_over, listen_path,
                                         &handed_err) == 0;
    if (vigild.handed_over >= 0 && !handed)
      LOG_WARN("vigild", "%s; listening afresh", handed_err.msg);
    vigild.handed_over = -1;
    if (handed && vigild.keep_socket_file)
      api_keep_socket_file(vigild.api);
    else
      vigild.keep_socket_file = false; /* a socket bound here is ours to remove */
    /* The pidfile between bind and listen: once the path is the engine's
     * (a live engine there refused), and before any client can connect,
     * so that one that got in finds it. A handed-over socket listened
     * all along, and gets its pidfile as soon as it can. */
    if (!handed && api_bind(vigild.api, listen_path, err) != 0)
      return 1;
    vigild_write_pidfile(listen_path);
    if (!handed && api_start_listening(vigild.api, err) != 0) {
      if (vigild.pidfile[0] != '\0')
        pidfile_remove(vigild.pidfile, getpid());
      vigild.pidfile[0] = '\0';
      return 1;
    }
    LOG_INFO("vigild", "listening on %s", listen_path);
  }
  if (engine_start_config_monitors(vigild.engine, err) != 0)
    return 1;
  daemon_ready(vigild.ready_fd, listen_path);
  vigild.ready_fd = -1;
  return 0;
}

int
main(int argc, char **argv)
{
  /* `vigil policy try/test` (policytry.h): offline, nothing of the engine starts. */
  if (policytry_wanted(argc, argv))
    return policytry_main(argc, argv);
  VigildArgs args = {0};
  vigild.ready_fd = -1;
  int done = vigild_parse_args(argc, argv, &args);
  if (done >= 0)
    return done;
  vigild_std_fds();
  vigild_find_config(&args);
  if (vigild_place_log(&args) != 0)
    return 1;
  /* First, so that no child inherits the variable, and before anything
   * could take the descriptor's number. */
  vigild.handed_over = handover_listen_fd(&vigild.keep_socket_file);
  VigilError act_err = VIGIL_ERROR_INIT;
  int activated = activation_listen_fd(&act_err);
  if (activated == -2) {
    fprintf(stderr, "vigild: %s\n", act_err.msg);
    return 1;
  }
  if (activated >= 0 && vigild.handed_over < 0) {
    vigild.handed_over = activated;
    vigild.keep_socket_file = true;
  }
  vigild.argv = argv;
  ssize_t exe_len = readlink("/proc/self/exe", vigild.exe, sizeof vigild.exe - 1);
  vigild.exe[exe_len > 0 && (size_t)exe_len < sizeof vigild.exe - 1 ? exe_len : 0] = '\0';
  /* A peer that goes away mid-write must cost an EPIPE, not the engine. */
  signal(SIGPIPE, SIG_IGN);
  /* Subreaper and cgroups before any child exists; the log says what was
   * found once, at start-up. */
  contain_init();
  /* Two pipes per monitor: room for as many as the hard limit allows, the
   * children keeping the soft limit we were given (proc_raise_nofile). */
  uint64_t nofile_was, nofile_now;
  if (!proc_raise_nofile(&nofile_was, &nofile_now))
    LOG_WARN("vigild", "cannot raise the descriptor limit (RLIMIT_NOFILE): %s", strerror(errno));
  else if (nofile_now != nofile_was)
    LOG_INFO("vigild", "descriptor limit (RLIMIT_NOFILE) raised from %" PRIu64 " to %" PRIu64
             " (2 per running monitor); children start with %" PRIu64,
             nofile_was, nofile_now, nofile_was);

  VigilConfig cfg;
  VigilError err = VIGIL_ERROR_INIT;
  if (args.config_path) {
    if (config_load(args.config_path, &cfg, &err) != 0) {
      fprintf(stderr, "vigild: %s\n", err.msg);
      config_free(&cfg);
      return 1;
    }
    LOG_INFO("vigild", "config %s (%s)", args.config_path, args.config_how);
  } else {
    config_defaults(&cfg);
    if (args.no_config) {
      LOG_WARN("vigild", "--no-config: the allowlist is empty, so every start is denied");
    } else {
      char user[CONFIG_LOOKUP_PATH_MAX];
      config_lookup_user(user, sizeof user);
      LOG_WARN("vigild", "no config found ($VIGIL_CONFIG is not set, there is no %s and no "
               "bundled one): the allowlist is empty, so every start is denied; give --config "
               "FILE", user[0] ? user : "~/.config/vigil/vigil.lua");
    }
  }
  vigild_setup(&cfg, args.config_path);
  LOG_INFO("vigild", "policies and Lua modules from %s (%s)", datadir_path(), datadir_source());
  int status = vigild_serve(&args, &err);
  if (status != 0 && vigild.restored > 0) {
    /* A start that fails must change nothing: what it took back is left
     * as it was (the keepers see this engine go and drain, the journals
     * stay) for the next start, not stopped and removed as a shutdown
     * would. */
    fprintf(stderr, "vigild: %s\n", err.msg);
    LOG_ERROR("vigild", "the start failed after taking back %d session(s) and monitor(s): "
              "the state directory is left as it was for the next start",
              vigild.restored);
    if (vigild.pidfile[0] != '\0')
      pidfile_remove(vigild.pidfile, getpid());
    log_flush(1000);
    _exit(1);
  }
  if (status != 0) {
    fprintf(stderr, "vigild: %s\n", err.msg);
    engine_shutdown(vigild.engine, true);
  }
  uv_run(&vigild.loop, UV_RUN_DEFAULT);
  fdcloser_use_loop(NULL);
  if (uv_loop_close(&vigild.loop) != 0)
    LOG_WARN("vigild", "the event loop still had handles open at exit");
  /* Every monitor is gone and the socket closed: the pidfile goes too, so
   * that what remains of the engine is what it keeps on purpose. */
  if (vigild.pidfile[0] != '\0')
    pidfile_remove(vigild.pidfile, getpid());
  /* Last, once every monitor is gone: the lock is held for the engine's
   * whole life. A start that failed takes back a directory it made. */
  if (vigild.state != NULL) {
    /* A shutdown keeps nothing: the next engine draws a new epoch, so a
     * host's cursor from this one reads as "what followed it is gone". */
    if (status == 0)
      unlinkat(vigild.state->dir_fd, EPOCH_FILE_NAME, 0);
    if (status != 0)
      statedir_abandon(vigild.state);
    else
      statedir_close(vigild.state);
    vigild.state = NULL;
  }
  return status;
}
